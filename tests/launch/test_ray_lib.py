"""launch/lib/ray_slurm.sh and ray_node.sh function by function, in bash, with `ray` replaced by a stub."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The bash under test (conftest.TEST_BASH): LAUNCH_TEST_BASH=/path/to/bash-4.4/bin/bash for RHEL / Rocky 8's.
TEST_BASH = os.environ.get("LAUNCH_TEST_BASH", "bash")
LIB = REPO / "launch" / "lib" / "ray_slurm.sh"
NODE_SCRIPT = REPO / "launch" / "lib" / "ray_node.sh"

STATUS_HEAD = """======== Autoscaler status ========
Node status
---------------------------------------------------------------
Active:
 1 node_423a9c67ca52d716f2a6f896347babe8ce2fb7166274af73c2aa1cf5
Resources
---------------------------------------------------------------
Total Usage:
 0.0/{cpus}.0 CPU
 0.0/{gpus}.0 GPU
 0B/16.29GiB memory
"""


def bash(script: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run `script` in bash with the library sourced, without any Slurm variable from the caller."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("SLURM") and key != "RAY_AUTH_MODE"}
    return subprocess.run(
        [TEST_BASH, "-c", f"set -euo pipefail; source {shlex.quote(str(LIB))}; {script}"],
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def stub_ray(tmp_path: Path, status: str) -> str:
    """An executable that prints `status` for `ray status ...`."""
    (tmp_path / "status.txt").write_text(status)
    stub = tmp_path / "ray"
    stub.write_text(f"#!/usr/bin/env bash\ncat {tmp_path / 'status.txt'}\n")
    stub.chmod(0o755)
    return str(stub)


def status_with(nodes: list[str], gpus: int) -> str:
    markers = "".join(f" 0.0/1.0 slurm_host_{node.replace('-', '_')}\n" for node in nodes)
    return STATUS_HEAD.format(cpus=4, gpus=gpus) + markers


WAIT = """
NODES=(node-a node-b); GPUS_PER_NODE=8; RAY_ADDRESS=127.0.0.1:1
sleep 30 >/dev/null 2>&1 & RAY_STEP_PIDS=($!); RAY_STEP_NODES=(node-b)
trap 'kill "${RAY_STEP_PIDS[0]}"' EXIT
wait_for_ray_cluster /logs
"""


def test_wait_names_the_missing_node_and_gives_up_at_the_timeout(tmp_path):
    env = {
        "RAY_BIN": stub_ray(tmp_path, status_with(["node-a"], 8)),
        "RAY_WAIT_TIMEOUT_S": "1",
        "RAY_WAIT_POLL_S": "0.2",
    }
    result = bash(WAIT, env)
    assert result.returncode == 1
    assert "Ray cluster incomplete after 1s: missing node(s): node-b; GPUs 8 of 16" in result.stderr


def test_wait_wants_every_gpu_not_only_every_node(tmp_path):
    env = {
        "RAY_BIN": stub_ray(tmp_path, status_with(["node-a", "node-b"], 12)),
        "RAY_WAIT_TIMEOUT_S": "1",
        "RAY_WAIT_POLL_S": "0.2",
    }
    result = bash(WAIT, env)
    assert result.returncode == 1
    assert "missing node(s): none; GPUs 12 of 16" in result.stderr


def test_wait_reports_why_ray_status_fails(tmp_path):
    stub = tmp_path / "ray"
    stub.write_text(
        "#!/usr/bin/env bash\necho 'Traceback ...'\necho 'RpcError: InvalidAuthToken: token missing'\nexit 1\n"
    )
    stub.chmod(0o755)
    result = bash(WAIT, {"RAY_BIN": str(stub), "RAY_WAIT_TIMEOUT_S": "1", "RAY_WAIT_POLL_S": "0.2"})
    assert result.returncode == 1
    assert "GPUs 0 of 16; 'ray status' failed: RpcError: InvalidAuthToken: token missing" in result.stderr


def test_wait_returns_once_every_node_and_gpu_joined(tmp_path):
    env = {"RAY_BIN": stub_ray(tmp_path, status_with(["node-a", "node-b"], 16)), "RAY_WAIT_TIMEOUT_S": "5"}
    result = bash(WAIT, env)
    assert result.returncode == 0, result.stderr
    assert "Ray cluster ready at 127.0.0.1:1: 2 node(s) (node-a node-b), 16 GPU(s)" in result.stdout


def test_wait_fails_at_once_when_a_node_ray_exits(tmp_path):
    script = """
NODES=(node-a node-b); GPUS_PER_NODE=8; RAY_ADDRESS=127.0.0.1:1
true & RAY_STEP_PIDS=($!); RAY_STEP_NODES=(node-b); sleep 0.5
wait_for_ray_cluster /logs
"""
    env = {
        "RAY_BIN": stub_ray(tmp_path, status_with(["node-a"], 8)),
        "RAY_WAIT_TIMEOUT_S": "600",
        "RAY_WAIT_POLL_S": "0.2",
    }
    result = bash(script, env)
    assert result.returncode == 1
    assert "Ray on node node-b exited while the cluster was starting; see /logs/ray_node-b.log" in result.stderr


def test_run_watched_stops_the_command_when_a_node_ray_exits(tmp_path):
    script = """
sleep 0.5 & RAY_STEP_PIDS=($!); RAY_STEP_NODES=(node-b)
status=0; run_watched sleep 4321 || status=$?
echo "status=$status"; pgrep -f "^sleep 4321$" || echo "no sleep left"
"""
    result = bash(script)
    assert "Ray on node node-b exited (status 0) while 'sleep' ran: stopping it." in result.stdout
    assert "status=1" in result.stdout and "no sleep left" in result.stdout


def test_run_watched_returns_the_command_status_and_logs_it(tmp_path):
    script = f"""
sleep 60 >/dev/null 2>&1 & RAY_STEP_PIDS=($!); RAY_STEP_NODES=(node-a)
status=0; WATCH_LOG={tmp_path}/out.log run_watched bash -c 'echo hello; exit 3' || status=$?
kill "${{RAY_STEP_PIDS[0]}}"; echo "status=$status"
"""
    result = bash(script)
    assert "status=3" in result.stdout
    assert (tmp_path / "out.log").read_text() == "hello\n"


def test_resolve_nodes_outside_slurm_runs_one_node_only():
    result = bash('resolve_nodes; echo "nodes=${NODES[*]} nnodes=$NNODES"')
    assert result.returncode == 0 and f"nodes={os.uname().nodename.split('.')[0]} nnodes=1" in result.stdout
    result = bash("NNODES=2 resolve_nodes")
    assert result.returncode == 1 and "NNODES=2 needs a Slurm allocation" in result.stderr


def test_resolve_nodes_expands_the_hostlist_into_an_array_batch_host_first(local_slurm):
    job = {
        "SLURM_CONF": local_slurm.env["SLURM_CONF"],
        "SLURM_JOB_ID": "7",
        "SLURM_JOB_NODELIST": "gpu-[01-03],login5",
        "SLURM_JOB_NUM_NODES": "4",
        "SLURMD_NODENAME": "gpu-02",
    }
    result = bash('resolve_nodes; echo "count=${#NODES[@]} nodes=${NODES[*]} nnodes=$NNODES"', job)
    assert result.returncode == 0, result.stderr
    assert "count=4 nodes=gpu-02 gpu-01 gpu-03 login5 nnodes=4" in result.stdout
    result = bash("resolve_nodes", {**job, "SLURM_JOB_NUM_NODES": "5"})
    assert result.returncode == 1 and "to 4 hosts, but SLURM_JOB_NUM_NODES=5" in result.stderr
    result = bash('NNODES=2 resolve_nodes; echo "nodes=${NODES[*]}"', job)
    assert "nodes=gpu-02 gpu-01" in result.stdout
    result = bash("NNODES=6 resolve_nodes", job)
    assert result.returncode == 1 and "NNODES=6 but the job has 4 nodes" in result.stderr


def test_gpus_per_node_comes_from_slurm_or_the_user():
    result = bash("resolve_gpus_per_node; echo $GPUS_PER_NODE", {"SLURM_GPUS_PER_NODE": "h100:8"})
    assert result.stdout.strip() == "8"
    result = bash("resolve_gpus_per_node; echo $GPUS_PER_NODE", {"SLURM_GPUS_ON_NODE": "4", "GPUS_PER_NODE": "2"})
    assert result.stdout.strip() == "2"
    result = bash("resolve_gpus_per_node", {"GPUS_PER_NODE": "eight"})
    assert result.returncode == 1 and "GPUS_PER_NODE=eight is not a number" in result.stderr


def test_a_job_without_gpus_stops_at_once_naming_the_fix():
    """No GRES, no nvidia-smi: the chain would otherwise start Ray with 0 GPUs and wait on verl's pools."""
    result = bash("resolve_gpus_per_node", {"PATH": "/usr/bin:/bin"})  # no nvidia-smi here
    assert result.returncode == 1
    assert "no GPU on the job's nodes" in result.stderr and "--gpus-per-node=N" in result.stderr
    assert "GPUS_PER_NODE=2 RAY_NUM_CPUS=16" in result.stderr  # the CPU mode's logical slots
    assert bash("resolve_gpus_per_node", {"GPUS_PER_NODE": "0"}).returncode == 1


def test_network_detection_picks_an_address_of_this_host():
    addresses = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True, check=True).stdout
    result = bash('detect_node_network; echo "$NODE_IFACE $NODE_IP"')
    iface, ip = result.stdout.split()
    assert f"{iface}    inet {ip}/" in addresses or f"{iface}    inet6 {ip}/" in addresses
    result = bash('NETWORK_INTERFACE=lo detect_node_network; echo "$NODE_IFACE $NODE_IP"')
    assert result.stdout.split() == ["lo", "127.0.0.1"]
    result = bash("NETWORK_INTERFACE=nosuchif0 detect_node_network")
    assert result.returncode == 1 and "set NETWORK_INTERFACE" in result.stderr


def test_ray_address_brackets_ipv6_and_markers_are_resource_names():
    result = bash("ray_address fd00::2 6379; echo; ray_address 10.0.0.1 6379; echo; node_marker gpu-01.cluster")
    assert result.stdout.split() == ["[fd00::2]:6379", "10.0.0.1:6379", "slurm_host_gpu_01_cluster"]


def test_training_env_keeps_user_values_and_raises_the_file_limit():
    script = (
        "NODE_IFACE=eth9; export_training_env; export_node_interface; echo $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME "
        "$HYDRA_FULL_ERROR $RAY_memory_monitor_refresh_ms $VLLM_ALLOW_LONG_MAX_MODEL_LEN $NCCL_DEBUG $RAY_AUTH_MODE; "
        "ulimit -n; ulimit -Hn"
    )
    result = bash(script, {"NCCL_SOCKET_IFNAME": "ib0", "NCCL_DEBUG": "INFO"})
    *values, soft, hard = result.stdout.split()
    assert values == ["ib0", "eth9", "1", "0", "1", "INFO", "disabled"]
    assert int(soft) == (65536 if hard == "unlimited" else min(int(hard), 65536))


def test_node_script_reports_the_network_of_its_node():
    result = subprocess.run(
        [TEST_BASH, str(NODE_SCRIPT), "network"],
        capture_output=True,
        text=True,
        env={**os.environ, "NETWORK_INTERFACE": "lo"},
    )
    assert result.stdout.split() == ["lo", "127.0.0.1"]
    result = subprocess.run(
        [TEST_BASH, str(NODE_SCRIPT), "stop"],
        capture_output=True,
        text=True,
        env={key: value for key, value in os.environ.items() if key != "RAY_TMP"},
    )
    assert result.returncode == 1 and "RAY_TMP, the Ray temp dir of this job, must be set" in result.stderr


def test_node_stop_kills_this_jobs_ray_tree_and_nothing_else(tmp_path):
    ray_tmp = tmp_path / "ray_j42"
    # A stand-in for `ray start --block --temp-dir=RAY_TMP` with a child that does not name RAY_TMP, which
    # also ignores SIGTERM after its parent died (the orphan case), and an unrelated process.
    ray_like = subprocess.Popen(
        [TEST_BASH, "-c", "bash -c 'trap \"\" TERM; sleep 300' & wait", "ray", f"--temp-dir={ray_tmp}/1/"]
    )
    # The same job's Ray of another node on this host (node 10: its temp dir starts like node 1's).
    other_node = subprocess.Popen([TEST_BASH, "-c", "sleep 300", "ray", f"--temp-dir={ray_tmp}/10/"])
    other = subprocess.Popen(["sleep", "300"])
    time.sleep(0.5)
    child = int(subprocess.run(["pgrep", "-P", str(ray_like.pid)], capture_output=True, text=True).stdout.split()[0])
    try:
        result = subprocess.run(
            [TEST_BASH, str(NODE_SCRIPT), "stop"],
            capture_output=True,
            text=True,
            timeout=60,
            env={
                **os.environ,
                "RAY_TMP": str(ray_tmp),
                "RAY_NODE_NAME": "n1",
                "RAY_NODE_INDEX": "1",
                "RAY_STOP_GRACE_S": "2",
                "COLUMNS": "80",  # sbatch passes the user's on; ps cut command lines to it, hiding the temp dir
            },
        )
        assert result.returncode == 0, result.stderr
        assert f"node n1: SIGTERM to {ray_like.pid} (ray start)" in result.stdout
        assert "still alive after 2s: SIGKILL" in result.stdout and "node n1: Ray stopped" in result.stdout
        assert ray_like.wait(timeout=5) is not None
        assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
        assert other.poll() is None, "stop killed a process that is not this job's Ray"
        assert other_node.poll() is None, "stop on node 1 killed node 10's Ray"
    finally:
        for process in (ray_like, other, other_node):
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait()
    again = subprocess.run(
        [TEST_BASH, str(NODE_SCRIPT), "stop"],
        capture_output=True,
        text=True,
        env={**os.environ, "RAY_TMP": str(ray_tmp), "RAY_NODE_NAME": "n1"},
    )
    assert "node n1: no Ray process of this job left" in again.stdout


def test_node_start_refuses_a_temp_dir_too_long_for_ray_sockets():
    long_tmp = "/tmp/" + "x" * 40
    result = subprocess.run(
        [TEST_BASH, str(NODE_SCRIPT), "start-head"],
        capture_output=True,
        text=True,
        env={**os.environ, "RAY_TMP": long_tmp, "RAY_BIN": "/bin/false"},
    )
    assert result.returncode == 1
    assert (
        f"Ray temp dir {long_tmp}/0/ is longer than 43 characters" in result.stderr and "RAY_TMP_ROOT" in result.stderr
    )


# bash 4.4 (RHEL / Rocky 8) has no `wait -p` and no `wait -n PID...` (both bash 5.1): this `wait` refuses them as
# 4.4 does, so the watched-run tests below fail if the library relies on either, under any bash.
BASH_44_WAIT = """
wait() {
  local arg
  for arg in "$@"; do
    case $arg in -p|-f) echo "bash: wait: $arg: invalid option" >&2; return 2 ;; esac
  done
  if [[ "${1:-}" == -n && $# -gt 1 ]]; then echo "bash: wait: -n takes no job ids in bash 4.4" >&2; return 2; fi
  builtin wait "$@"
}
"""


def test_run_watched_needs_no_bash_5_wait_options(tmp_path):
    script = f"""{BASH_44_WAIT}
sleep 60 >/dev/null 2>&1 & RAY_STEP_PIDS=($!); RAY_STEP_NODES=(node-a)
status=0; WATCH_POLL_S=0.2 WATCH_LOG={tmp_path}/out.log run_watched bash -c 'sleep 0.5; echo done; exit 4' || status=$?
kill "${{RAY_STEP_PIDS[0]}}"; echo "status=$status"
sleep 0.3 & RAY_STEP_PIDS=($!); RAY_STEP_NODES=(node-b)
status=0; WATCH_POLL_S=0.2 run_watched sleep 4322 || status=$?
echo "status=$status"; pgrep -f "^sleep 4322$" || echo "no sleep left"
"""
    result = bash(script)
    assert "invalid option" not in result.stderr and "takes no job ids" not in result.stderr, result.stderr
    assert result.stdout.splitlines()[:2] == ["done", "status=4"] and (tmp_path / "out.log").read_text() == "done\n"
    assert "Ray on node node-b exited (status 0) while 'sleep' ran: stopping it." in result.stdout
    assert result.stdout.splitlines()[-2:] == ["status=1", "no sleep left"]


def test_the_library_refuses_a_bash_older_than_4_4():
    script = LIB.read_text()
    check = script[script.index("if ((BASH_VERSINFO[0] < 4") : script.index("RAY_SLURM_LIB_DIR=")]
    # BASH_VERSINFO is read-only: run the check with the array renamed to a fake bash 4.3.
    fake = "V=(4 3 30 1 release x86_64); BASH_VERSION=4.3.30; " + check.replace("BASH_VERSINFO", "V")
    result = subprocess.run([TEST_BASH, "-c", fake], capture_output=True, text=True)
    assert result.returncode == 1 and "launch/ needs bash >= 4.4, this is bash 4.3.30" in result.stderr
    accepted = subprocess.run([TEST_BASH, "-c", "V=(4 4 19 1 release x86_64); " + check.replace("BASH_VERSINFO", "V")])
    assert accepted.returncode == 0


def flaky_ray(tmp_path: Path, failures: int) -> str:
    """A `ray` stub: `health-check` / `status` fail `failures` times (connection refused), then succeed; `start` echoes."""
    stub = tmp_path / "ray"
    stub.write_text(f"""#!/usr/bin/env bash
count=$(cat {tmp_path}/calls 2>/dev/null || echo 0); echo $((count + 1)) > {tmp_path}/calls
case $1 in
  health-check|status)
    if [[ $count -lt {failures} ]]; then echo "ConnectionError: failed to connect to GCS: Connection refused"; exit 1; fi
    echo healthy ;;
  start) echo "ray start $*" ;;
esac
""")
    stub.chmod(0o755)
    return str(stub)


def test_a_worker_retries_the_head_until_it_answers_then_starts_ray(tmp_path):
    env = {
        **os.environ,
        "RAY_BIN": flaky_ray(tmp_path, failures=2),
        "RAY_TMP": "/tmp/rj",
        "RAY_HEAD_IP": "10.0.0.1",
        "RAY_PORT": "6390",
        "GPUS_PER_NODE": "8",
        "RAY_NODE_NAME": "gpu-07",
        "RAY_JOIN_POLL_S": "0.1",
        "NETWORK_INTERFACE": "lo",
    }
    result = subprocess.run([TEST_BASH, str(NODE_SCRIPT), "start-worker"], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert "node gpu-07: Ray head at 10.0.0.1:6390 not reachable yet (attempt 1): ConnectionError" in result.stdout
    assert "not reachable yet (attempt 2)" in result.stdout
    assert "node gpu-07: Ray head at 10.0.0.1:6390 answers (attempt 3)" in result.stdout
    assert "ray start start --block --node-ip-address=127.0.0.1" in result.stdout
    assert "--address=10.0.0.1:6390" in result.stdout
    (tmp_path / "calls").unlink()
    env |= {"RAY_BIN": flaky_ray(tmp_path, failures=1000), "RAY_JOIN_TIMEOUT_S": "1", "RAY_JOIN_POLL_S": "0.3"}
    result = subprocess.run([TEST_BASH, str(NODE_SCRIPT), "start-worker"], capture_output=True, text=True, env=env)
    assert result.returncode == 1 and "ray start" not in result.stdout
    assert "node gpu-07: the Ray head at 10.0.0.1:6390 did not answer within 1s" in result.stderr
    assert "last: ConnectionError: failed to connect to GCS: Connection refused" in result.stderr


def test_workers_start_only_once_the_head_answers(tmp_path):
    script = """
NODES=(head-0 node-1); GPUS_PER_NODE=8; RAY_ADDRESS=127.0.0.1:1
sleep 30 >/dev/null 2>&1 & RAY_STEP_PIDS=($!); RAY_STEP_NODES=(head-0)
trap 'kill "${RAY_STEP_PIDS[0]}"' EXIT
wait_for_ray_head /logs
"""
    env = {"RAY_BIN": flaky_ray(tmp_path, failures=2), "RAY_WAIT_POLL_S": "0.1", "RAY_WAIT_TIMEOUT_S": "30"}
    result = bash(script, env)
    assert result.returncode == 0, result.stderr
    assert "Ray head up at 127.0.0.1:1" in result.stdout and (tmp_path / "calls").read_text().strip() == "3"
    (tmp_path / "calls").unlink()
    env |= {"RAY_BIN": flaky_ray(tmp_path, failures=1000), "RAY_WAIT_TIMEOUT_S": "1", "RAY_WAIT_POLL_S": "0.3"}
    result = bash(script, env)
    assert result.returncode == 1
    assert "the Ray head on head-0 did not answer at 127.0.0.1:1 within 1s: ConnectionError" in result.stderr

"""A real Slurm cluster on localhost for the launch tests: munged + slurmctld + one slurmd per node, as root.

Two nodes share this host (each slurmd with `-N NAME` and its own port, spool, pid and log file), so jobs
can use one node or two. Everything (munge key and socket, slurm.conf, gres.conf, state, spool, logs, pid
files) lives in one temporary directory; ports are picked free; each node has fake GPUs (gres.conf `File=`
entries that are symlinks to /dev/null, `AutoDetect=off`). A requeued job waits REQUEUE_DELAY_S before it runs again
(`AuthInfo=cred_expire`; 120 s by default). Teardown cancels the jobs, stops the daemons and kills any process still
holding the temporary directory in its command line or environment, even when a test failed.
Needs the Debian packages slurm-wlm and munge (`make system-deps` installs them when root).

What the site check looks at on a GPU node stands in at the process boundary: `stand_ins/nvidia-smi` first on PATH (the
driver and GPUs of each node, a fault written per node, `nvidia_smi_fault`), and a Hugging Face cache (HF_HOME,
`stand_in_hub`) holding the CPU mode's tiny Qwen2 as the configs' `Qwen/Qwen3-14B` (and MicroCoder's model), so that a job finds its model the
way an offline cluster does, and the data check tokenizes the prompts with a real tokenizer.
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from omegaconf import DictConfig

# launch/*.py import their siblings by name, as `python launch/X.py` runs them (the script's directory first on
# sys.path); the tests that import them in-process do the same.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "launch"))

NODE_NAMES = ("launchnode1", "launchnode2")
# The bash every launch test runs the scripts with: LAUNCH_TEST_BASH=/path/to/bash-4.4/bin/bash runs the suite under
# an older bash (RHEL / Rocky 8 ship 4.4); the default is the bash on PATH.
TEST_BASH = os.environ.get("LAUNCH_TEST_BASH", "bash")


def path_with_test_bash(path: str) -> str:
    """PATH with TEST_BASH's directory first, so `#!/usr/bin/env bash` scripts and srun steps use it too."""
    resolved = shutil.which(TEST_BASH)
    assert resolved, f"LAUNCH_TEST_BASH={TEST_BASH} is not an executable"
    return f"{Path(resolved).parent}:{path}"


FAKE_GPUS = 2
REQUEUE_DELAY_S = 20  # long enough for a step's credential on a loaded 2-core machine
STAND_INS = Path(__file__).resolve().parent / "stand_ins"
HUB_MODELS = ("Qwen/Qwen3-14B", "Qwen/Qwen3-4B-Instruct-2507")  # the configs' models the tests run, as stand-ins
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel", "srun")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def processes_mentioning(*markers: str) -> list[int]:
    """PIDs (not this one) whose command line and environment, together, contain every marker."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            text = (entry / "cmdline").read_bytes() + b"\0" + (entry / "environ").read_bytes()
        except OSError:
            continue
        if all(marker.encode() in text for marker in markers):
            found.append(int(entry.name))
    return found


def slurm_conf(root: Path, ctld_port: int) -> str:
    """Minimal slurm.conf: root daemons, munge on our socket, cons_tres with gpu GRES, no cgroups."""
    memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20 * 9 // 10
    return f"""ClusterName=launchtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket,cred_expire={REQUEUE_DELAY_S}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MailProg=/bin/true
KillWait=30
InactiveLimit=0
MinJobAge=600
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""" + "".join(
        f"NodeName={name} NodeAddr=127.0.0.1 NodeHostname={socket.gethostname()} Port={free_port()} "
        f"CPUs={os.cpu_count()} RealMemory={memory_mb} Gres=gpu:{FAKE_GPUS} State=UNKNOWN\n"
        for name in NODE_NAMES
    )


@dataclass
class LocalSlurm:
    """Handles to a running one-node cluster; `env` makes Slurm client commands talk to it."""

    root: Path
    env: dict[str, str]
    daemons: list[subprocess.Popen] = field(default_factory=list)
    node_name = NODE_NAMES[0]
    node_names = NODE_NAMES
    gpus = FAKE_GPUS
    requeue_delay_s = REQUEUE_DELAY_S
    stand_ins = STAND_INS
    hub_models = HUB_MODELS
    free_port = staticmethod(free_port)
    processes_mentioning = staticmethod(processes_mentioning)
    path_with_test_bash = staticmethod(path_with_test_bash)

    @staticmethod
    def test_bash_version() -> str:
        return subprocess.run([TEST_BASH, "-c", "echo $BASH_VERSION"], capture_output=True, text=True).stdout.strip()

    def run(self, *args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
        kwargs.setdefault("env", self.env)
        return subprocess.run(args, check=check, capture_output=True, text=True, **kwargs)

    def sbatch(self, *args: str, env: dict[str, str], cwd: Path) -> int:
        out = self.run("sbatch", "--parsable", *args, env={**self.env, **env}, cwd=cwd).stdout
        return int(out.strip().split(";")[0])

    def run_job(self, *args: str, env: dict[str, str], cwd: Path, timeout_s: float = 400) -> tuple[int, str, str, str]:
        """sbatch with the output in ``cwd/job-<id>.out`` and wait; returns (job id, state, exit code, output)."""
        job_id = self.sbatch(f"--output={cwd}/job-%j.out", *args, env=env, cwd=cwd)
        state, exit_code = self.wait_job(job_id, timeout_s)
        return job_id, state, exit_code, (cwd / f"job-{job_id}.out").read_text()

    def job_field(self, job_id: int, name: str) -> str:
        record = self.run("scontrol", "show", "job", str(job_id)).stdout
        for token in record.split():
            key, _, value = token.partition("=")
            if key == name:
                return value
        raise KeyError(f"{name} not in scontrol show job {job_id}: {record}")

    def wait_job(self, job_id: int, timeout_s: float = 400) -> tuple[str, str]:
        """(JobState, ExitCode) once the job has left PENDING/RUNNING/COMPLETING (and a requeue's states)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = self.job_field(job_id, "JobState")
            if state not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "REQUEUE_FED"):
                return state, self.job_field(job_id, "ExitCode")
            time.sleep(2)
        self.run("scancel", str(job_id), check=False)
        raise TimeoutError(f"job {job_id} still {state} after {timeout_s}s; cancelled. Logs: {self.root}/log")

    def wait_nodes_idle(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        states = ""
        while time.monotonic() < deadline:
            states = self.run("sinfo", "--noheader", "--Node", "--format=%T", check=False).stdout.split()
            if len(states) == len(NODE_NAMES) and all(state == "idle" for state in states):
                return
            time.sleep(1)
        logs = "\n".join(path.read_text()[-2000:] for path in sorted((self.root / "log").glob("slurm*.log")))
        raise RuntimeError(f"nodes {NODE_NAMES} are {states}, not all idle, after {timeout_s}s:\n{logs}")


def start_cluster(root: Path) -> LocalSlurm:
    for directory in ("munge", "state", "spool", "log", "dev"):
        (root / directory).mkdir(mode=0o711)
    key = root / "munge" / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    for index in range(FAKE_GPUS):
        (root / "dev" / f"gpu{index}").symlink_to("/dev/null")
    conf = root / "slurm.conf"
    conf.write_text(slurm_conf(root, free_port()))
    (root / "gres.conf").write_text(
        "AutoDetect=off\n"
        + "".join(f"NodeName={name} Name=gpu File={root}/dev/gpu[0-{FAKE_GPUS - 1}]\n" for name in NODE_NAMES)
    )
    cluster = LocalSlurm(root=root, env={**os.environ, "SLURM_CONF": str(conf)})
    munge_dir = root / "munge"
    commands = [
        [
            "munged",
            "--foreground",
            "--force",
            f"--socket={munge_dir}/munge.socket",
            f"--key-file={key}",
            f"--log-file={munge_dir}/munged.log",
            f"--pid-file={munge_dir}/munged.pid",
            f"--seed-file={munge_dir}/seed",
        ],
        ["slurmctld", "-D", "-c", "-f", str(conf)],
        *(["slurmd", "-D", "-f", str(conf), "-N", name] for name in NODE_NAMES),
    ]
    for command in commands:
        log = (root / "log" / f"{command[0]}-{len(cluster.daemons)}.stdout").open("w")
        cluster.daemons.append(subprocess.Popen(command, env=cluster.env, stdout=log, stderr=subprocess.STDOUT))
        time.sleep(1 if command[0] == "munged" else 0)
    cluster.wait_nodes_idle()
    return cluster


def stop_cluster(cluster: LocalSlurm) -> None:
    """Cancel jobs, stop the daemons, then kill whatever still mentions the cluster's directory."""
    cluster.run("scancel", "--full", "--user=root", check=False, timeout=30)
    for daemon in reversed(cluster.daemons):
        daemon.terminate()
        try:
            daemon.wait(timeout=15)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
    for pid in processes_mentioning(str(cluster.root)):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="session")
def local_slurm() -> Iterator[LocalSlurm]:
    missing = [name for name in DAEMONS if shutil.which(name) is None]
    if missing:
        pytest.fail(
            f"Slurm/munge programs {missing} not found: install the Debian packages slurm-wlm and munge "
            "(make system-deps does it as root)."
        )
    if os.geteuid() != 0:
        pytest.fail("the launch tests start slurmctld/slurmd/munged as root; run them as root (CI does).")
    root = Path(tempfile.mkdtemp(prefix="slurm", dir="/tmp"))
    root.chmod(0o711)
    cluster = None
    # SIGTERM to pytest (CI cancel, timeout wrappers) would skip this fixture's teardown: make it an interrupt.
    previous_handler = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        cluster = start_cluster(root)
        yield cluster
    finally:
        if cluster is not None:
            stop_cluster(cluster)
        else:
            for pid in processes_mentioning(str(root)):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous_handler)


def write_hub_snapshot(hf_home: Path, repo: str, build) -> Path:
    """A Hugging Face cache entry of `repo` in hf_home's layout (hub/models--ORG--NAME/{refs/main, snapshots/REV/}),
    its files written by `build(directory)`; returns the snapshot directory."""
    revision = "0" * 40
    entry = hf_home / "hub" / f"models--{repo.replace('/', '--')}"
    snapshot = entry / "snapshots" / revision
    build(snapshot)
    (entry / "refs").mkdir(parents=True, exist_ok=True)
    (entry / "refs" / "main").write_text(revision)
    return snapshot


@pytest.fixture(scope="session")
def sample_data(tmp_path_factory) -> Path:
    """The bundled sample's mix (28 training, 16 LiveCodeBench test problems), built once per session (~2 s)."""
    from data_prep.build_deepcoder_mix import main as build_data

    data = tmp_path_factory.mktemp("sample_mix")
    assert build_data(["--from", "sample", "--out", str(data)]) == 0
    return data


@pytest.fixture(scope="session")
def stand_in_hub(tmp_path_factory, sample_data) -> Path:
    """HF_HOME whose cache holds the CPU mode's tiny Qwen2 (random ~1M parameters, a tokenizer trained on the bundled
    sample, Qwen's chat markers) under the hub ids of the configs the tests run; built once per session (~10 s)."""
    from recipe.nouscoder.cpu.tiny_model import build_tiny_model

    hf_home = tmp_path_factory.mktemp("stand_in_hub") / "hf_home"
    parquets = [sample_data / "train.parquet", sample_data / "test.parquet"]
    built = write_hub_snapshot(hf_home, HUB_MODELS[0], lambda directory: build_tiny_model(parquets, directory))
    for repo in HUB_MODELS[1:]:
        write_hub_snapshot(hf_home, repo, lambda directory: shutil.copytree(built, directory))
    return hf_home


@pytest.fixture
def nvidia_smi_fault(tmp_path):
    """`nvidia_smi_fault(node, *gpu_lines)`: what stand_ins/nvidia-smi lists on `node` ("index, uuid, name, driver,
    MiB" lines); returns the NVIDIA_SMI_STAND_IN_DIR to put in the job's environment."""
    directory = tmp_path / "nvidia_smi"
    directory.mkdir(exist_ok=True)

    def fault(node: str, *gpus: str) -> str:
        (directory / f"{node}.csv").write_text("".join(f"{line}\n" for line in gpus))
        return str(directory)

    return fault


@pytest.fixture
def test_bash_path():
    """`test_bash_path(PATH)`: PATH with the directory of the bash under test (LAUNCH_TEST_BASH) first."""
    return path_with_test_bash


@pytest.fixture
def find_processes():
    """`find_processes(*markers)`: PIDs whose command line and environment contain every marker."""
    return processes_mentioning


@functools.cache
def _composed_yaml(directory: str, name: str, overrides: tuple[str, ...]) -> str:
    from omegaconf import OmegaConf

    from recipe.nouscoder.configs import compose_experiment

    return OmegaConf.to_yaml(compose_experiment(name, list(overrides)))


def compose_once(name: str, overrides: Sequence[str] = ()) -> DictConfig:
    """`compose_experiment`, each (config directory, name, overrides) composed once per test session (~0.5 s each);
    every call gets its own copy."""
    from omegaconf import OmegaConf

    from recipe.nouscoder.configs import config_dir

    config = OmegaConf.create(_composed_yaml(str(config_dir()), name, tuple(overrides)))
    assert isinstance(config, DictConfig)
    return config


@pytest.fixture(autouse=True)
def composition_once_per_session(monkeypatch):
    """The launch scripts' in-process composition (launch/chain.py) through the session's cache."""
    import chain

    monkeypatch.setattr(chain, "compose_experiment", compose_once)
    return compose_once

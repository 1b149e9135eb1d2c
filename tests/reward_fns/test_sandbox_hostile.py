"""Hostile programs, graded as the user running the tests (root here: dedicated uid + namespaces).

Each test checks the side effect itself: the file is untouched, the listener got no connection, the secret is
not in anything the program printed, the victim process is alive, no process of the run is left.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from reward_fns.sandbox.isolation import DEDICATED_UID_BASE
from reward_fns.types import GraderConfig, Verdict

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_writes_outside_scratch_leave_files_untouched(run_raw, hostile_programs, tmp_path):
    world_writable = tmp_path / "world_writable.txt"
    world_writable.write_text("original")
    world_writable.chmod(0o666)
    tmp_path.chmod(0o777)
    owned = tmp_path / "owned_by_grader.txt"
    owned.write_text("original")
    new_file = tmp_path / "new_file.txt"
    paths = [str(world_writable), str(owned), str(new_file)]
    code = hostile_programs["write_outside"].replace("WRITE_TARGETS", repr([*paths, "/tmp/nouscoder-escape.txt"]))
    outcome, stdout, _ = run_raw(code)
    assert outcome.exit_code == 0
    assert stdout.count("blocked") == len(paths), stdout
    assert "wrote /tmp/nouscoder-escape.txt" in stdout  # the sandbox's own /tmp, not the host's
    assert world_writable.read_text() == "original"
    assert owned.read_text() == "original"
    assert not new_file.exists()
    assert not os.path.exists("/tmp/nouscoder-escape.txt")


def test_scratch_directory_is_writable_and_fresh_for_every_test(grade):
    code = (
        "import os\n"
        "print(sorted(os.listdir('.')))\n"
        "open('notes.txt', 'w').write('kept?')\n"
        "print(open('notes.txt').read())\n"
    )
    fresh = "['solution.py']\nkept?"  # the program's own source, where __file__ points, as with python3 solution.py
    result = grade(code, [("", fresh), ("", fresh), ("", fresh)])
    assert result.verdict is Verdict.ACCEPTED, result.detail


def test_sabotaged_scratch_directory_is_cleaned_for_the_next_test(grade):
    code = (
        "import os\n"
        "print(len(os.listdir('.')))\n"
        "os.makedirs('locked/inner')\n"
        "open('locked/inner/file', 'w').write('x')\n"
        "os.chmod('locked/inner', 0)\n"
        "os.chmod('locked', 0)\n"
        "os.symlink('/etc', 'link_to_etc')\n"
        "try:\n"
        "    os.chmod('.', 0)\n"  # refused as root (the scratch belongs to the server), allowed in a user namespace
        "except OSError:\n"
        "    pass\n"
    )
    result = grade(code, [("", "1")] * 3)
    assert result.verdict is Verdict.ACCEPTED, result.detail


def test_loopback_listener_of_the_grader_gets_no_connection(run_raw, hostile_programs, tcp_listener):
    port, got_connection = tcp_listener
    outcome, stdout, _ = run_raw(hostile_programs["connect_loopback"].replace("PORT", str(port)))
    assert "blocked" in stdout, stdout
    assert not got_connection()


def test_grader_environment_secret_never_reaches_the_program(run_raw, hostile_programs, monkeypatch):
    secret = secrets.token_hex(16)
    monkeypatch.setenv("NOUSCODER_TEST_SECRET", secret)
    code = hostile_programs["steal_environment"].replace("GRADER_PID", str(os.getpid()))
    outcome, stdout, stderr = run_raw(code)
    assert outcome.exit_code == 0, stderr
    assert "environ" in stdout
    assert secret not in stdout and secret not in stderr
    assert "NOUSCODER_TEST_SECRET" not in stdout


def test_file_readable_only_by_its_owner_stays_private(run_raw, hostile_programs, tmp_path):
    secret = secrets.token_hex(16)
    private = tmp_path / "private.txt"
    private.write_text(secret)
    private.chmod(0o600)
    outcome, stdout, _ = run_raw(hostile_programs["read_private_file"].replace("PRIVATE_PATH", str(private)))
    assert "blocked" in stdout, stdout
    assert secret not in stdout


def test_world_readable_datasets_and_the_repository_are_not_visible(run_raw, hostile_programs):
    """Hidden tests live in world-readable files (parquet, jsonl): the sandbox's root does not contain them."""
    secret = secrets.token_hex(16)
    data_dir = tempfile.mkdtemp(prefix="nouscoder-dataset-")
    try:
        os.chmod(data_dir, 0o755)
        dataset = os.path.join(data_dir, "train.jsonl")
        with open(dataset, "w") as handle:
            handle.write(secret)
        os.chmod(dataset, 0o644)
        sample_dir = str(REPO_ROOT / "data_prep")
        code = hostile_programs["read_dataset"].replace("DATA_PATHS", repr([dataset, data_dir, sample_dir, "/home"]))
        outcome, stdout, _ = run_raw(code)
    finally:
        shutil.rmtree(data_dir)
    assert secret not in stdout
    assert stdout.count("blocked") == 4, stdout


def test_signals_to_the_grader_and_other_processes_are_refused(run_raw, hostile_programs):
    victim = subprocess.Popen(["sleep", "30"])
    try:
        code = hostile_programs["signal_processes"].replace("GRADER_PID", str(os.getpid()))
        outcome, stdout, _ = run_raw(code.replace("VICTIM_PID", str(victim.pid)))
        assert victim.poll() is None, "the program killed a process outside its sandbox"
        assert "sent" not in stdout or "blocked" in stdout
    finally:
        victim.kill()
        victim.wait()


def test_fork_bomb_is_contained_and_leaves_no_process(run_raw, fork_server, hostile_programs):
    config = GraderConfig(time_limit_s=2.0)
    outcome, stdout, _ = run_raw(hostile_programs["fork_bomb"], config=config)
    refusals = stdout.count("fork refused")
    assert 1 <= refusals <= 128, stdout  # every process of the bomb hits RLIMIT_NPROC (128) and reports once
    assert outcome.timed_out
    assert outcome.leftover_processes == 0
    run_uid = DEDICATED_UID_BASE + fork_server.process.pid  # root mode: this worker's dedicated uid
    assert not [proc for proc in psutil.process_iter(["uids"]) if proc.info["uids"].real == run_uid]


def test_setsid_double_fork_escapee_is_killed_before_it_acts(run_raw, fork_server, hostile_programs, tmp_path):
    marker = tmp_path / "marker.txt"
    tmp_path.chmod(0o777)
    outcome, stdout, _ = run_raw(hostile_programs["double_fork_escape"].replace("MARKER_PATH", str(marker)))
    assert outcome.exit_code == 0 and outcome.leftover_processes == 0
    assert stdout.strip() == "EARLY"
    time.sleep(2.0)
    assert "LATE" not in fork_server.read_stdout()
    assert not marker.exists()


def test_grader_file_descriptors_are_closed_in_the_child(run_raw):
    outcome, stdout, _ = run_raw("import os\nprint(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))")
    fds = eval(stdout)
    assert set(fds) - {0, 1, 2, 3} <= {max(fds)}, fds  # the extra one is listdir's own descriptor


def test_expected_output_never_enters_the_sandboxed_process(grade):
    """The program scans its whole address space for the expected output and prints it if found."""
    token = secrets.token_hex(16)
    pattern = "".join(f"{char}(?:)" for char in token)  # matches the token; holds no contiguous copy of it
    code = (
        "import re\n"
        f"needle = re.compile({pattern.encode()!r})\n"
        "found = None\n"
        "with open('/proc/self/maps') as maps, open('/proc/self/mem', 'rb', 0) as mem:\n"
        "    for line in maps.read().splitlines():\n"
        "        start, end = (int(x, 16) for x in line.split()[0].split('-'))\n"
        "        if 'r' not in line.split()[1] or end - start > 1 << 28 or found:\n"
        "            continue\n"
        "        try:\n"
        "            mem.seek(start)\n"
        "            match = needle.search(mem.read(end - start))\n"
        "        except (OSError, ValueError, OverflowError):\n"
        "            continue\n"
        "        found = match.group().decode() if match else None\n"
        "print(found or 'not found')\n"
    )
    result = grade(code, [("", token)])
    assert result.verdict is Verdict.WRONG_ANSWER, result.detail


def test_cannot_see_processes_outside_its_sandbox(run_raw):
    outcome, stdout, _ = run_raw("import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")
    visible = eval(stdout)
    assert len(visible) <= 3, visible  # the worker's fork server and this run only, not the host's processes


GRADER_THAT_DIES = """
import sys
from reward_fns.sandbox.forkserver import ForkServer
from reward_fns.sandbox.grading import compile_program, run_limits
from reward_fns.types import GraderConfig
server = ForkServer()
print(server.process.pid, flush=True)
code = compile_program("import os, time\\nif os.fork() == 0:\\n    os.setsid()\\ntime.sleep(60)")
server.run(code, "", "stdin", None, run_limits(GraderConfig(), 64), 60.0)
"""


def test_runs_die_with_a_grader_that_is_killed_mid_test():
    """The grader is SIGKILLed while a program (and its setsid child) sleeps: launcher, server, program and
    child must all be gone within seconds, not when the 60 s limit expires."""
    grader = subprocess.Popen([sys.executable, "-c", GRADER_THAT_DIES], stdout=subprocess.PIPE, text=True)
    launcher = psutil.Process(int(grader.stdout.readline()))
    deadline = time.monotonic() + 20
    while len(launcher.children(recursive=True)) < 3 and time.monotonic() < deadline:  # server, program, child
        time.sleep(0.05)
    tree = [launcher, *launcher.children(recursive=True)]
    assert len(tree) >= 4, tree
    grader.kill()
    grader.wait()
    gone, alive = psutil.wait_procs(tree, timeout=10)
    assert not alive, alive

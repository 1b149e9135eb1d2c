"""Host probing and degradation: what the host allows is reported, missing mechanisms are loud, strict refuses."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
import time

import pytest

from reward_fns.sandbox import GraderPool, IsolationUnavailableError, forkserver, probe_isolation
from reward_fns.sandbox.forkserver import ForkServer
from reward_fns.sandbox.grading import compile_program, run_limits
from reward_fns.sandbox.isolation import DEDICATED_UID_BASE, DISABLE_ENV, dedicated_uid
from reward_fns.sandbox.memory import CGROUP_ENV, RunCgroup, cgroup_candidates
from reward_fns.sandbox.report import MECHANISMS
from reward_fns.types import GraderConfig, Problem, Verdict
from reward_fns.types import TestCase as Case


def test_probe_matches_a_real_server_and_names_every_mechanism():
    report = probe_isolation()
    server = ForkServer()
    try:  # each made a run cgroup of its own, or neither could
        assert dataclasses.replace(server.report, memory_cgroup="") == dataclasses.replace(report, memory_cgroup="")
    finally:
        server.close()
    summary = report.summary()
    for name in MECHANISMS:
        assert name in summary
    assert report.complete, summary  # this host (root, namespaces allowed) provides every required mechanism
    assert "memory accounting" in summary and (report.memory_cgroup in summary or "must provide" in summary)
    for cgroup in (report.memory_cgroup, server.report.memory_cgroup):
        assert not cgroup or not os.path.exists(cgroup)  # removed with the probe and the server


MOUNTS_V2 = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
MOUNTS_HYBRID = (
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
)


@pytest.mark.parametrize(
    ("mounts", "own", "expected"),
    [
        (
            MOUNTS_V2,
            "0::/user.slice/user-1000.slice/session-3.scope\n",
            [
                (2, "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope"),
                (2, "/sys/fs/cgroup/user.slice/user-1000.slice"),
                (2, "/sys/fs/cgroup/user.slice"),
                (2, "/sys/fs/cgroup"),
            ],
        ),
        (MOUNTS_V2, "0::/\n", [(2, "/sys/fs/cgroup")]),  # a container with its own cgroup namespace
        (MOUNTS_V2.replace(" / /sys", " /docker/abc /sys"), "0::/docker/abc\n", [(2, "/sys/fs/cgroup")]),
        (MOUNTS_V2.replace(" / /sys", " /docker/abc /sys"), "0::/elsewhere\n", []),
        (
            MOUNTS_HYBRID,
            "4:memory:/process_api/c75d\n8:pids:/\n0::/\n",
            [(2, "/sys/fs/cgroup/unified"), (1, "/sys/fs/cgroup/memory/process_api/c75d")],
        ),
    ],
    ids=["v2 host", "v2 container", "v2 bind-mounted subtree", "own cgroup outside the mount", "v1 memory + v2"],
)
def test_run_cgroup_directories_are_found_from_the_mounts_and_the_own_cgroup(mounts, own, expected):
    """Formats: proc(5) ``/proc/PID/mountinfo`` (root and mount point, then the file system type and super options
    after ``-``) and ``/proc/PID/cgroup`` (``hierarchy:controllers:path``, ``0::path`` for cgroup v2)."""
    assert cgroup_candidates(mounts, own) == expected


def test_strict_isolation_refuses_a_host_without_namespaces(monkeypatch):
    monkeypatch.setenv(DISABLE_ENV, "namespaces")
    with pytest.raises(IsolationUnavailableError, match="network_namespace"):
        GraderPool(workers=1, config=GraderConfig(isolation="strict"))


def test_auto_isolation_degrades_with_a_loud_warning_per_missing_mechanism(monkeypatch, caplog):
    monkeypatch.setenv(DISABLE_ENV, "namespaces")
    monkeypatch.setattr(forkserver, "_warned_mechanisms", set())
    with caplog.at_level(logging.WARNING), GraderPool(workers=1) as pool:
        problem = Problem(tests=(Case("2", "4"),))
        [result] = pool.grade_many([("print(int(input()) * 2)", problem)])
    assert result.verdict is Verdict.ACCEPTED, result.detail
    warned = " ".join(record.getMessage() for record in caplog.records)
    for name in ("network_namespace", "mount_namespace", "pid_namespace", "private_proc"):
        assert f"SANDBOX WEAKENED: {name}" in warned
    # root still gives every worker its own uid; an ordinary user without user namespaces shares the grader's
    assert ("SANDBOX WEAKENED: separate_identity" in warned) is (os.geteuid() != 0)


def test_without_namespaces_or_root_the_subreaper_still_kills_double_forks(monkeypatch, hostile_programs, tmp_path):
    """Only the subreaper and the process group are left (run as our own uid): the escapee must still die."""
    monkeypatch.setenv(DISABLE_ENV, "namespaces,root")
    server = ForkServer()
    try:
        assert not server.report.pid_namespace and not server.report.running_as_root
        marker = tmp_path / "marker.txt"
        code = compile_program(hostile_programs["double_fork_escape"].replace("MARKER_PATH", str(marker)))
        outcome = server.run(code, "", "stdin", None, run_limits(GraderConfig(), 64), 5.0)
        assert outcome.exit_code == 0 and outcome.leftover_processes == 0
        time.sleep(2.0)
        assert server.read_stdout().strip() == "EARLY"
        assert not marker.exists()
    finally:
        server.close()


def test_isolation_none_still_grades_with_rlimits(grade):
    # the accepted run gets the default limit: at load ~10 on 2 cores a trivial run once took 2.0 s of wall time
    # (3 ms of CPU), past a 1 s limit extended by its measured CPU wait
    accepted = grade("print(input())", [("ok", "ok")], GraderConfig(isolation="none"))
    assert accepted.verdict is Verdict.ACCEPTED
    endless = GraderConfig(isolation="none", time_limit_s=1.0)
    assert grade("while True:\n    pass", [("", "")], endless).verdict is Verdict.TIME_LIMIT


def test_dedicated_uid_stays_inside_the_mapped_uid_range():
    assert dedicated_uid(4242, "0 0 4294967295\n") == DEDICATED_UID_BASE + 4242
    container = "0 100000 65536\n"
    uids = {dedicated_uid(pid, container) for pid in range(1000, 1100)}
    assert len(uids) == 100 and all(32000 < uid < 65534 for uid in uids)
    assert dedicated_uid(7, "0 1000 1\n") is None  # a one-uid namespace has nothing to spare


def test_probe_command_line_prints_the_table_and_fails_when_incomplete():
    command = [sys.executable, "-m", "reward_fns.sandbox"]
    complete = subprocess.run(command, capture_output=True, text=True, check=False)
    assert complete.returncode == 0, complete.stderr
    assert all(f"[ok]      {name}" in complete.stdout for name in MECHANISMS)
    degraded = subprocess.run(
        [*command, "--json"], capture_output=True, text=True, check=False, env={**os.environ, DISABLE_ENV: "namespaces"}
    )
    assert degraded.returncode == 1
    assert json.loads(degraded.stdout)["network_namespace"] is False


def test_a_misspelt_mechanism_to_disable_is_an_error_naming_the_valid_ones(monkeypatch):
    monkeypatch.setenv(DISABLE_ENV, "namespaces,bogus")
    with pytest.raises(ValueError, match=r"unknown mechanism\(s\) \['bogus'\]; valid: .*'seccomp'"):
        GraderPool(workers=1, config=GraderConfig(isolation="strict"))


def test_a_cgroup_directory_named_that_is_none_is_refused_with_the_reason(tmp_path):
    """``NOUSCODER_SANDBOX_CGROUP`` naming a plain directory: no run cgroup, and the start-up report says why."""
    cgroup, reason = RunCgroup.create({CGROUP_ENV: str(tmp_path)})
    assert cgroup is None and f"{tmp_path}: not a cgroup v1 memory hierarchy" in reason
    assert os.listdir(tmp_path) == []

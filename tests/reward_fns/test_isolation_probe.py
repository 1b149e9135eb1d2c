"""Host probing and degradation: what the host allows is reported, missing mechanisms are loud, strict refuses."""

from __future__ import annotations

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
from reward_fns.sandbox.report import MECHANISMS
from reward_fns.types import GraderConfig, Problem, Verdict
from reward_fns.types import TestCase as Case


def test_probe_matches_a_real_server_and_names_every_mechanism():
    report = probe_isolation()
    server = ForkServer()
    try:
        assert server.report == report
    finally:
        server.close()
    summary = report.summary()
    for name in MECHANISMS:
        assert name in summary
    assert report.complete, summary  # this host (root, namespaces allowed) provides every required mechanism


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

"""The grader run as an ordinary user (as on a cluster): with user namespaces, and without any namespace.

Files, the listener and the victim process are set up here (as root, for the user) and checked here afterwards.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from reward_fns.sandbox.report import IsolationReport

# Graders started as a created plain user through runuser.
pytestmark = pytest.mark.integration


@pytest.fixture
def scenario(tcp_listener, hostile_programs, unprivileged_user_name):
    """Hostile programs with their targets filled in; targets owned by the unprivileged user where it matters."""
    tmp_path = Path(tempfile.mkdtemp(prefix="nouscoder-unprivileged-"))  # pytest's tmp_path is root-only
    tmp_path.chmod(0o777)
    owned_by_user = tmp_path / "owned_by_grader_user.txt"
    owned_by_user.write_text("original")
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(secrets.token_hex(16))
    dataset.chmod(0o644)
    private = tmp_path / "root_only.txt"
    secret = secrets.token_hex(16)
    private.write_text(secret)
    private.chmod(0o600)
    victim_command = ["sleep", "60"]
    if unprivileged_user_name is not None:
        account = pwd.getpwnam(unprivileged_user_name)
        os.chown(owned_by_user, account.pw_uid, account.pw_gid)
        victim_command = [
            "setpriv",
            f"--reuid={account.pw_uid}",
            f"--regid={account.pw_gid}",
            "--clear-groups",
            *victim_command,
        ]
    victim = subprocess.Popen(victim_command)
    port, got_connection = tcp_listener
    marker = tmp_path / "marker.txt"
    fills = {
        "WRITE_TARGETS": repr([str(owned_by_user)]),
        "PORT": str(port),
        "PRIVATE_PATH": str(private),
        "VICTIM_PID": str(victim.pid),
        "MARKER_PATH": str(marker),
        "DATA_PATHS": repr([str(dataset)]),
    }
    programs = {}
    for name, code in hostile_programs.items():
        for placeholder, value in fills.items():
            code = code.replace(placeholder, value)
        programs[name] = code
    yield {
        "programs": programs,
        "secret": secret,
        "dataset": dataset.read_text(),
        "owned": owned_by_user,
        "marker": marker,
        "victim": victim,
        "got_connection": got_connection,
    }
    victim.kill()
    victim.wait()
    shutil.rmtree(tmp_path)


def _holds(observed: dict, scenario: dict) -> dict[str, bool]:
    """Which protections held in one unprivileged run, each judged from its side effect."""
    runs = observed["runs"]
    everything_printed = json.dumps(runs)
    return {
        "file of the grader's uid untouched": Path(scenario["owned"]).read_text() == "original",
        "loopback listener got no connection": not scenario["got_connection"](),
        "grader env secret not readable": scenario["secret"] not in everything_printed
        and "NOUSCODER_TEST_SECRET" not in everything_printed,
        "root-only file not readable": "blocked" in runs["read_private_file"]["stdout"],
        "world-readable dataset not readable": scenario["dataset"] not in everything_printed,
        "victim process of the same uid alive": "signal_processes" in runs and scenario["victim"].poll() is None,
        "fork bomb contained": runs["fork_bomb"]["timed_out"] and runs["fork_bomb"]["leftover_processes"] == 0,
        "double-fork escapee killed": "LATE" not in runs["double_fork_escape"]["stdout"]
        and not Path(scenario["marker"]).exists(),
    }


def test_unprivileged_grader_with_user_namespaces_holds_every_protection(run_unprivileged, scenario):
    observed = run_unprivileged(scenario["programs"], scenario["secret"])
    report = IsolationReport.from_json(observed["report"])
    assert not report.running_as_root and report.complete, report.summary()
    holds = _holds(observed, scenario)
    assert all(holds.values()), holds


def test_unprivileged_grader_without_namespaces_keeps_process_and_secret_protections(run_unprivileged, scenario):
    """A node that forbids user namespaces: rlimits, subreaper and permissions still hold (README table).

    ``signal_processes`` is left out: with the grader's own uid and no pid namespace it can kill the grader.
    """
    programs = {name: code for name, code in scenario["programs"].items() if name != "signal_processes"}
    observed = run_unprivileged(programs, scenario["secret"], disable="user_namespace")
    report = IsolationReport.from_json(observed["report"])
    assert {"network_namespace", "mount_namespace", "pid_namespace"} <= set(report.missing)
    holds = _holds(observed, scenario)
    print(json.dumps(holds, indent=1))
    assert holds["root-only file not readable"]
    assert holds["fork bomb contained"]
    assert holds["double-fork escapee killed"]

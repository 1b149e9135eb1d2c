"""Shared fixtures of the reward_fns tests: problems, raw fork-server runs, hostile programs, unprivileged runs.

Graders run as an ordinary user (``UNPRIVILEGED_USER``, made with ``useradd`` when the tests run as root) get what
they need whatever the checkout's permissions (``UserPython``): a world-readable copy of the ``reward_fns`` package
and this interpreter, made reachable when it lies under a directory the user cannot enter (``/root``).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reward_fns.sandbox import grade_program
from reward_fns.sandbox.forkserver import ForkServer
from reward_fns.sandbox.grading import compile_program, run_limits
from reward_fns.types import GraderConfig, GradeResult, Problem
from reward_fns.types import TestCase as Case

REPO_ROOT = Path(__file__).resolve().parents[2]
UNPRIVILEGED_USER = "nouscoder-sbx"
FAST = GraderConfig(time_limit_s=5.0, total_time_budget_s=30.0)


@pytest.fixture(autouse=True)
def _int_digit_limit_restored() -> Iterator[None]:
    """The harness's result conversion lifts CPython's int <-> str digit limit for its own (sandboxed, exiting)
    process; a test calling it in-process must not leave the lifted limit to later tests (data_prep's
    ``integer_too_long`` check depends on the default)."""
    previous = sys.get_int_max_str_digits()
    yield
    sys.set_int_max_str_digits(previous)


@pytest.fixture
def grade() -> Callable[..., GradeResult]:
    """grade(code, [(input, output), ...], config=FAST) on stdin tests, through the public ``grade_program``."""

    def _grade(code: str, tests: list[tuple[str, str]], config: GraderConfig = FAST) -> GradeResult:
        problem = Problem(tests=tuple(Case(test_input, output) for test_input, output in tests))
        return grade_program(code, problem, config)

    return _grade


@pytest.fixture
def grade_functional() -> Callable[..., GradeResult]:
    """grade_functional(code, fn_name, [(args_json_lines, expected_json), ...])."""

    def _grade(code: str, fn_name: str, tests: list[tuple[str, str]], config: GraderConfig = FAST) -> GradeResult:
        cases = tuple(Case(args, output, "functional") for args, output in tests)
        return grade_program(code, Problem(tests=cases, fn_name=fn_name), config)

    return _grade


@pytest.fixture
def fork_server() -> Iterator[ForkServer]:
    server = ForkServer()
    yield server
    server.close()


@pytest.fixture
def run_raw(fork_server: ForkServer) -> Callable[..., tuple[object, str, str]]:
    """run_raw(code, stdin="", config=FAST) -> (RunOutcome, stdout, stderr tail): what the program really did."""

    def _run(code: str, stdin: str = "", config: GraderConfig = FAST) -> tuple[object, str, str]:
        compiled = compile_program(code)
        assert not isinstance(compiled, str), compiled
        outcome = fork_server.run(compiled, stdin, "stdin", None, run_limits(config, 128), config.time_limit_s)
        return outcome, fork_server.read_stdout(), fork_server.stderr_tail()

    return _run


@pytest.fixture
def tcp_listener() -> Iterator[tuple[int, Callable[[], bool]]]:
    """A listener on 127.0.0.1 opened by the test: (port, got_connection())."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)

    def got_connection() -> bool:
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            return False
        connection.close()
        return True

    yield listener.getsockname()[1], got_connection
    listener.close()


HOSTILE_PROGRAMS = {
    "write_outside": (
        "for path in WRITE_TARGETS:\n"
        "    try:\n"
        "        open(path, 'w').write('PWNED')\n"
        "        print('wrote', path)\n"
        "    except OSError as exc:\n"
        "        print('blocked', path, exc)\n"
    ),
    "connect_loopback": (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', PORT), timeout=2).sendall(b'hi')\n"
        "    print('connected')\n"
        "except OSError as exc:\n"
        "    print('blocked', exc)\n"
    ),
    "steal_environment": (
        "import glob, os\n"
        "print(dict(os.environ))\n"
        "for path in ['/proc/GRADER_PID/environ', '/proc/1/environ', *glob.glob('/proc/*/environ')]:\n"
        "    try:\n"
        "        print(path, open(path, 'rb').read())\n"
        "    except OSError as exc:\n"
        "        print(path, 'blocked', exc)\n"
    ),
    "read_private_file": (
        "try:\n    print(open('PRIVATE_PATH').read())\nexcept OSError as exc:\n    print('blocked', exc)\n"
    ),
    "read_dataset": (
        "import os\n"
        "for path in DATA_PATHS:\n"
        "    try:\n"
        "        print(open(path).read() if os.path.isfile(path) else os.listdir(path))\n"
        "    except OSError as exc:\n"
        "        print('blocked', exc)\n"
    ),
    "signal_processes": (
        "import os, signal\n"
        "for pid in (GRADER_PID, VICTIM_PID):\n"
        "    for sig in (signal.SIGTERM, signal.SIGKILL):\n"
        "        try:\n"
        "            os.kill(pid, sig)\n"
        "            print('sent', pid, sig)\n"
        "        except OSError as exc:\n"
        "            print('blocked', pid, exc)\n"
    ),
    "fork_bomb": (
        "import os, time\n"
        "while True:\n"
        "    try:\n"
        "        os.fork()\n"
        "    except OSError:\n"
        "        print('fork refused', flush=True)\n"
        "        time.sleep(100)\n"
    ),
    "double_fork_escape": (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(1.0)\n"
        "        os.write(1, b'LATE')\n"
        "        try:\n"
        "            open('MARKER_PATH', 'w').write('escaped')\n"
        "        except OSError:\n"
        "            pass\n"
        "    os._exit(0)\n"
        "print('EARLY', flush=True)\n"
    ),
}
"""Hostile programs; upper-case placeholders are filled by each test (paths, ports, pids)."""


@pytest.fixture
def hostile_programs() -> dict[str, str]:
    return dict(HOSTILE_PROGRAMS)


def _ensure_unprivileged_user() -> str:
    try:
        pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", UNPRIVILEGED_USER], check=True
        )
    return UNPRIVILEGED_USER


def _enterable_by_others(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IXOTH)


def _first_closed_ancestor(path: Path) -> Path | None:
    """The outermost directory above ``path`` that other users cannot enter, or None."""
    return next((parent for parent in reversed(path.parents) if not _enterable_by_others(parent)), None)


_REACH_INTERPRETER = """
hold=$1 closed=$2 prefix=$3
shift 3
mount --bind "$prefix" "$hold"
mount -t tmpfs -o mode=0755 nouscoder-interpreter "$closed"
mkdir -p "$prefix"
mount --bind "$hold" "$prefix"
umount "$hold"
exec "$@"
"""
"""In a private mount namespace: cover the closed directory with an empty world-enterable tmpfs holding only the
interpreter's installation, at its own path (a relocated interpreter would not find a ``libpython`` it links by
absolute path)."""


class UserPython:
    """How to run ``python -c ...`` as the ordinary user with the ``reward_fns`` package importable.

    ``shared`` is a world-readable temporary directory (removed by ``close``) holding a copy of the package; the
    interpreter is this one's base installation (the user needs only the standard library), reached through a
    private mount namespace when a directory above it is closed to others (a pyenv or a venv in ``/root``).
    When the tests do not run as root they already are an ordinary user: this interpreter, as it is.
    """

    def __init__(self) -> None:
        self.shared = Path(tempfile.mkdtemp(prefix="nouscoder-user-python-"))
        self.shared.chmod(0o755)
        if closed := _first_closed_ancestor(self.shared):
            raise RuntimeError(f"{self.shared} is not reachable by other users ({closed} is closed): set TMPDIR")
        package = self.shared / "pkg" / "reward_fns"
        shutil.copytree(REPO_ROOT / "reward_fns", package, ignore=shutil.ignore_patterns("__pycache__"))
        for directory, _, files in os.walk(self.shared):
            os.chmod(directory, 0o755)
            for name in files:
                os.chmod(os.path.join(directory, name), 0o644)
        (self.shared / "hold").mkdir(mode=0o755)

    def command(self, *arguments: str) -> list[str]:
        """The argv that runs ``python *arguments`` as the ordinary user."""
        if os.geteuid() != 0:
            return [sys.executable, *arguments]
        runuser = shutil.which("runuser") or "/usr/sbin/runuser"
        executable = Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
        user_command = [runuser, "-u", _ensure_unprivileged_user(), "--", str(executable), *arguments]
        closed = _first_closed_ancestor(executable)
        if closed is None:
            return user_command
        prefix = os.path.realpath(sys.base_prefix)
        if _first_closed_ancestor(Path(prefix) / "x") != closed:
            raise RuntimeError(f"the interpreter {executable} lies outside its prefix {prefix}")
        unshare = shutil.which("unshare") or "/usr/bin/unshare"
        reach = [unshare, "--mount", "--propagation", "private", "--", "sh", "-ec", _REACH_INTERPRETER, "sh"]
        return [*reach, str(self.shared / "hold"), str(closed), prefix, *user_command]

    def environment(self, **extra: str) -> dict[str, str]:
        return {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(self.shared / "pkg"), **extra}

    def close(self) -> None:
        shutil.rmtree(self.shared, ignore_errors=True)


@pytest.fixture(scope="session")
def user_python() -> Iterator[UserPython]:
    python = UserPython()
    yield python
    python.close()


UNPRIVILEGED_SCRIPT = """
import json, os, sys, time
from reward_fns.sandbox.forkserver import ForkServer
from reward_fns.sandbox.grading import compile_program, run_limits
from reward_fns.types import GraderConfig

jobs = json.load(sys.stdin)
assert os.environ["NOUSCODER_TEST_SECRET"] == jobs["secret"]
config = GraderConfig(time_limit_s=3.0)
server = ForkServer()
observations = {"report": server.report.to_json(), "grader_pid": os.getpid(), "runs": {}}
for name, code in jobs["programs"].items():
    code = code.replace("GRADER_PID", str(os.getpid()))
    outcome = server.run(compile_program(code), "", "stdin", None, run_limits(config, 64), config.time_limit_s)
    if name == "double_fork_escape":
        time.sleep(2.0)
    observations["runs"][name] = {"stdout": server.read_stdout(), "timed_out": outcome.timed_out,
                                  "leftover_processes": outcome.leftover_processes}
server.close()
print(json.dumps(observations))
"""


@pytest.fixture(scope="session")
def run_unprivileged(user_python: UserPython) -> Callable[..., dict]:
    """run_unprivileged(programs, secret, disable="") -> observations of the grader run as an ordinary user
    (``user_python``: as root, a ``useradd``-created user through ``runuser``)."""

    def _run(programs: dict[str, str], secret: str, disable: str = "") -> dict:
        environment = user_python.environment(NOUSCODER_TEST_SECRET=secret)
        if disable:
            environment["NOUSCODER_SANDBOX_DISABLE"] = disable
        completed = subprocess.run(
            user_python.command("-c", UNPRIVILEGED_SCRIPT),
            input=json.dumps({"programs": programs, "secret": secret}),
            capture_output=True,
            text=True,
            env=environment,
            timeout=120,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr[-3000:]
        return json.loads(completed.stdout.strip().splitlines()[-1])

    return _run


@pytest.fixture(scope="session")
def unprivileged_user_name() -> str | None:
    """The ordinary user the unprivileged runs use (None: the tests already run unprivileged)."""
    return _ensure_unprivileged_user() if os.geteuid() == 0 else None


SCENARIO_SCRIPT = r"""
import ctypes, json, os, sys

spec_path, out_path = sys.argv[1], sys.argv[2]
spec = json.load(open(spec_path))
libc = ctypes.CDLL(None, use_errno=True)
KEYCTL, ADD_KEY, KEYCTL_READ, KEYCTL_SEARCH, SESSION, USER = 250, 248, 11, 10, -3, -4


def keyring(ring):
    buffer = ctypes.create_string_buffer(4096)
    size = libc.syscall(KEYCTL, KEYCTL_READ, ring, buffer, 4096)
    return sorted(int.from_bytes(buffer.raw[i:i + 4], "little") for i in range(0, max(size, 0), 4))


def grader_key_payload():
    serial = libc.syscall(KEYCTL, KEYCTL_SEARCH, SESSION, b"user", b"nouscoder-grader-key", 0)
    buffer = ctypes.create_string_buffer(256)
    size = libc.syscall(KEYCTL, KEYCTL_READ, serial, buffer, 256)
    return buffer.raw[:max(size, 0)].decode()


from reward_fns.sandbox.forkserver import ForkServer
from reward_fns.sandbox.grading import compile_program, grade_on_server, run_limits
from reward_fns.types import GraderConfig, Problem, TestCase

if spec.get("grader_key"):
    key = spec["grader_key"].encode()
    assert libc.syscall(ADD_KEY, b"user", b"nouscoder-grader-key", key, len(key), SESSION) > 0, ctypes.get_errno()
keys_before = {"session": keyring(SESSION), "user": keyring(USER)}
if spec.get("umask") is not None:
    os.umask(spec["umask"])
if spec.get("cwd"):
    os.chdir(spec["cwd"])
if spec.get("close_std_fds"):
    for fd in (0, 1, 2):
        os.close(fd)
config = GraderConfig(**spec.get("config", {}))
server = ForkServer(config.isolation)
results = []
for run in spec["runs"]:
    tests = tuple(TestCase(test_input, output, run.get("testtype", "stdin")) for test_input, output in run["tests"])
    problem = Problem(tests=tests, fn_name=run.get("fn_name"))
    if run.get("raw"):
        outcome = server.run(compile_program(run["code"]), tests[0].input, "stdin", None, run_limits(config, 128),
                             config.time_limit_s)
        results.append({"stdout": server.read_stdout(), "stderr": server.stderr_tail(), "exit_code": outcome.exit_code,
                        "timed_out": outcome.timed_out, "leftover_processes": outcome.leftover_processes})
    else:
        result = grade_on_server(server, run["code"], problem, config, 128)
        results.append({"verdict": str(result.verdict), "detail": result.detail, "passed": result.passed})
report = server.report.to_json()
server.close()
observed = {"report": report, "results": results, "keys_before": keys_before,
            "keys_after": {"session": keyring(SESSION), "user": keyring(USER)}}
if spec.get("grader_key"):
    observed["grader_key_after"] = grader_key_payload()
with open(out_path, "w") as out:
    json.dump(observed, out)
"""


@pytest.fixture(scope="session")
def run_grader_as(user_python: UserPython) -> Iterator[Callable[..., dict]]:
    """run_grader_as(mode, runs, **grader_setup) -> what a grader process observed, graded on ONE fork server.

    ``mode``: "root" (this interpreter, as root) or "user" (``user_python``: a ``useradd``-created user through
    ``runuser``; the tests' own user when they do not run as root). ``runs``: dicts with ``code``, ``tests``
    [(input, output)], optional ``testtype``/``fn_name``, and ``raw`` (report stdout/stderr instead of a verdict).
    ``grader_setup``: ``config`` (GraderConfig fields), ``grader_key`` (a secret put in the grader's session
    keyring), ``umask``, ``cwd`` (entered before the server starts), ``close_std_fds``, and ``env`` / ``stdio``
    for the grader process.
    """
    shared = Path(tempfile.mkdtemp(prefix="nouscoder-scenarios-"))  # pytest's tmp_path is root-only
    shared.chmod(0o777)

    def _run(mode: str, runs: list[dict], env: dict | None = None, stdio: int | None = None, **setup) -> dict:
        if mode == "root" and os.geteuid() != 0:
            pytest.skip("root mode needs the tests to run as root")
        scenario = Path(tempfile.mkdtemp(dir=shared))
        scenario.chmod(0o777)
        spec, out = scenario / "spec.json", scenario / "observed.json"
        spec.write_text(json.dumps({"runs": runs, **setup}))
        if mode == "user":
            environment = user_python.environment(**(env or {}))
            command = user_python.command("-c", SCENARIO_SCRIPT, str(spec), str(out))
        else:
            environment = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT), **(env or {})}
            command = [sys.executable, "-c", SCENARIO_SCRIPT, str(spec), str(out)]
        streams = {"stdin": stdio, "stdout": stdio, "stderr": stdio} if stdio is not None else {"capture_output": True}
        completed = subprocess.run(command, env=environment, timeout=300, check=False, **streams)
        assert completed.returncode == 0, (completed.stderr or b"")[-3000:].decode(errors="replace")
        return json.loads(out.read_text())

    yield _run
    shutil.rmtree(shared, ignore_errors=True)

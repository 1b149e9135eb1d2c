"""The grader's handle on a fork server (the server process itself: ``server.py``).

``ForkServer`` starts one server (``python -S -c ...``, clean environment, a private work directory), sends it
one test at a time over a socket pair, and reads the outputs the child left in ``io/``. Test inputs are written
to ``io/stdin`` in 1 MB slices; the expected outputs never leave the grader.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import threading
from dataclasses import dataclass
from typing import Any

from reward_fns.sandbox import protocol
from reward_fns.sandbox.isolation import DISABLE_ENV, RunLimits
from reward_fns.sandbox.report import (
    MECHANISMS,
    IsolationReport,
    make_work_dir,
    server_command,
    server_environment,
)

logger = logging.getLogger(__name__)

_STDERR_TAIL_BYTES = 4096
_START_TIMEOUT_S = 60.0


@dataclass(slots=True)
class RunOutcome:
    """What happened to one test child, as the server and the output files tell it."""

    setup_ok: bool
    timed_out: bool
    exit_code: int | None
    signal: int | None
    wall_s: float
    cpu_s: float
    max_rss_kb: int
    stdout_bytes: int
    leftover_processes: int
    setup_error: str = ""


class ServerDied(RuntimeError):
    """The fork server stopped answering (crashed, killed) or failed to run a test; an internal error."""


_warned_mechanisms: set[str] = set()
_warn_lock = threading.Lock()


class ForkServer:
    """Handle on one fork server process: start it, run a test on it, close it. Not thread-safe (one user)."""

    reply_margin_s: float = 30.0
    """A server answers a test at most this long after its time limit (kill, reap, clean up), or is deemed hung
    (``ServerDied``: the caller replaces it)."""

    def __init__(self, isolation_mode: str = "auto") -> None:
        self.isolation_mode = isolation_mode
        self.broken = False
        self.work_dir = make_work_dir("nouscoder-grader-")
        grader_end, server_end = socket.socketpair()
        environment = server_environment()
        if isolation_mode == "none":
            environment[DISABLE_ENV] = "namespaces"
        self.process = subprocess.Popen(
            server_command("--fd", str(server_end.fileno()), "--work-dir", self.work_dir),
            pass_fds=(server_end.fileno(),), env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        )
        server_end.close()
        self.socket = grader_end
        try:
            self.report = IsolationReport.from_json(self._receive()["ready"])
            warn_missing(self.report, isolation_mode)
        except BaseException:
            self.close()
            raise

    def run(self, code: bytes, test_input: str, mode: str, fn_name: str | None, limits: RunLimits,
            timeout_s: float) -> RunOutcome:
        """Run one test: input written to a file (streamed in chunks), outputs left in ``io/`` for ``read_*``."""
        _write_text(os.path.join(self.work_dir, "io", "stdin"), test_input)
        request = {"op": "run", "code": code, "mode": mode, "fn_name": fn_name, "timeout_s": timeout_s,
                   "limits": limits._asdict()}
        try:
            protocol.send(self.socket.fileno(), request)
        except OSError as exc:
            raise ServerDied(f"fork server is gone: {exc}") from exc
        reply = self._receive(timeout_s + self.reply_margin_s)
        if "server_error" in reply:
            raise ServerDied(f"fork server failed to run the test: {reply['server_error']}")
        stdout_bytes = os.path.getsize(os.path.join(self.work_dir, "io", "stdout"))
        setup_error = "" if reply["setup_ok"] else self.stderr_tail()
        return RunOutcome(stdout_bytes=stdout_bytes, setup_error=setup_error, **reply)

    def discard_files(self) -> None:
        """Empty the input and output files (a 100 MB input should not sit on disk until the next test)."""
        for name in ("stdin", "stdout", "stderr", "result"):
            with contextlib.suppress(FileNotFoundError):
                os.truncate(os.path.join(self.work_dir, "io", name), 0)

    def read_stdout(self, limit_bytes: int = -1) -> str:
        """The last run's stdout (its first ``limit_bytes`` bytes when given)."""
        with open(os.path.join(self.work_dir, "io", "stdout"), "rb") as handle:
            return handle.read(limit_bytes).decode("utf-8", errors="replace")

    def read_result(self) -> str:
        with open(os.path.join(self.work_dir, "io", "result"), "rb") as handle:
            return handle.read().decode("utf-8", errors="replace")

    def stderr_tail(self) -> str:
        path = os.path.join(self.work_dir, "io", "stderr")
        with open(path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(path) - _STDERR_TAIL_BYTES))
            return handle.read().decode("utf-8", errors="replace")

    def _receive(self, timeout_s: float = _START_TIMEOUT_S) -> dict[str, Any]:
        try:
            return protocol.receive(self.socket.fileno(), timeout_s)
        except (EOFError, OSError) as exc:  # TimeoutError is an OSError: a hung server is replaced too
            self.broken = True
            raise ServerDied(f"fork server exited with {self.process.poll()}: {exc!r}") from exc

    def close(self) -> None:
        """Stop the server (its pid namespace dies with it) and remove its work directory; a broken server is
        killed at once (the server dies with its launcher: parent-death signal)."""
        if not self.broken:
            with contextlib.suppress(OSError):
                protocol.send(self.socket.fileno(), {"op": "exit"})
        self.socket.close()
        try:
            self.process.wait(timeout=0 if self.broken else 5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.work_dir, ignore_errors=True)


def _write_text(path: str, text: str, chunk_chars: int = 1 << 20) -> None:
    """Write ``text`` as UTF-8 in 1 MB slices, so a 100 MB input never exists twice in the grader's memory."""
    with open(path, "wb") as handle:
        for start in range(0, len(text), chunk_chars):
            handle.write(text[start:start + chunk_chars].encode("utf-8"))


def warn_missing(report: IsolationReport, mode: str) -> None:
    """Log each missing mechanism once per process, loudly; ``strict`` mode refuses (raises) instead."""
    if mode == "strict" and report.missing:
        raise IsolationUnavailableError(
            "isolation='strict' but the host does not allow: " + ", ".join(report.missing)
            + f"\n{report.summary()}\nRun as root, enable user namespaces, or use isolation='auto'."
        )
    with _warn_lock:
        for name in report.missing:
            if name not in _warned_mechanisms:
                _warned_mechanisms.add(name)
                logger.warning("SANDBOX WEAKENED: %s unavailable (%s) -> %s", name,
                               report.errors.get(name, "not allowed here"), MECHANISMS[name])


class IsolationUnavailableError(RuntimeError):
    """``isolation="strict"`` and a required mechanism is missing on this host."""

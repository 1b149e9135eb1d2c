"""The grader's handle on a fork server (the server process itself: ``server.py``).

``ForkServer`` starts one server (``python -S -P -c ...`` in ``/``, clean environment, a private work directory),
sends it one test at a time over a socket pair, and reads the outputs the child left in the test's files. Those
files (``RunFiles``) have no name: the grader creates them with ``memfd_create`` and hands them to the server as
open descriptors. Nothing a program does -- in any isolation mode -- can make the grader open, truncate or block
on anything else. Test inputs are written in 1 MB slices and sealed; the expected outputs never leave the grader.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import logging
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from reward_fns.sandbox import protocol
from reward_fns.sandbox.isolation import DISABLE_ENV, LOAD_STRETCH, RunLimits
from reward_fns.sandbox.memory import remove_cgroup
from reward_fns.sandbox.report import (
    MECHANISMS,
    IsolationReport,
    make_work_dir,
    server_command,
    server_environment,
)
from reward_fns.sandbox.scratch import remove_tree

logger = logging.getLogger(__name__)

_STDERR_TAIL_BYTES = 4096
_START_TIMEOUT_S = 60.0
_CHUNK_BYTES = 1 << 20


class Program(NamedTuple):
    """A compiled program as a fork server runs it: the marshalled code object and the source text (UTF-8)."""

    code: bytes
    source: bytes
    lazy_prelude: bool = False
    """It names something of ``harness.LAZY_PRELUDE_MODULES``: its child completes the prelude first."""


@dataclass(slots=True)
class RunOutcome:
    """What happened to one test child, as the server and the output files tell it."""

    setup_ok: bool
    timed_out: bool
    memory_exceeded: bool
    exit_code: int | None
    signal: int | None
    wall_s: float
    cpu_s: float
    max_rss_kb: int
    stdout_bytes: int
    result_bytes: int
    leftover_processes: int
    cpu_wait_s: float = 0.0
    """Of ``wall_s``, the time the program's main thread waited for a CPU (the machine's load, not its work)."""
    memory_held: str = ""
    """What the run held when the server killed it past the memory limit (``memory.MemoryHeld.describe``)."""
    setup_error: str = ""


class ServerDied(RuntimeError):
    """The fork server stopped answering (crashed, killed) or failed to run a test; an internal error."""


_warned_mechanisms: set[str] = set()
_warn_lock = threading.Lock()


class RunFiles:
    """One test's stdin, stdout, stderr and functional-result files: new ``memfd`` files for every test.

    Without a name only descriptors reach them (the run's uid may still reopen its own through ``/dev/stdin`` or
    ``/dev/stdout``: memfd files are mode 0777). The input is sealed after it is written, so the program cannot
    change or grow it; the outputs are capped by RLIMIT_FSIZE. The child shares the outputs' open file
    descriptions, so it could set flags on them (``O_DIRECT``, ``O_APPEND``): every read here resets the flags
    and uses explicit offsets.
    """

    _INPUT_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE

    def __init__(self, test_input: str) -> None:
        self.stdin = os.memfd_create("stdin", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        self.fds = (self.stdin,)
        try:
            for start in range(0, len(test_input), _CHUNK_BYTES):
                _write_all(self.stdin, test_input[start : start + _CHUNK_BYTES].encode("utf-8"))
            os.lseek(self.stdin, 0, os.SEEK_SET)
            fcntl.fcntl(self.stdin, fcntl.F_ADD_SEALS, self._INPUT_SEALS)
            self.stdout, self.stderr, self.result = (
                os.memfd_create(name, os.MFD_CLOEXEC) for name in ("stdout", "stderr", "result")
            )
        except BaseException:
            self.close()
            raise
        self.fds = (self.stdin, self.stdout, self.stderr, self.result)

    def size(self, fd: int) -> int:
        return os.fstat(fd).st_size

    def text_chunks(self, fd: int, start: int = 0) -> Iterator[str]:
        """The file's bytes from ``start`` decoded as UTF-8 (invalid bytes replaced), 1 MB at a time."""
        fcntl.fcntl(fd, fcntl.F_SETFL, 0)  # O_DIRECT set by the program would make unaligned reads fail
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        offset = start
        while chunk := os.pread(fd, _CHUNK_BYTES, offset):
            offset += len(chunk)
            yield decoder.decode(chunk)
        yield decoder.decode(b"", final=True)

    def read_text(self, fd: int, start: int = 0) -> str:
        return "".join(self.text_chunks(fd, start))

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = ()


class ForkServer:
    """Handle on one fork server process: start it, run a test on it, close it. Not thread-safe (one user)."""

    reply_margin_s: float = 30.0
    """A server answers a test at most this long after its time limit, stretched for load (``LOAD_STRETCH``), has
    passed (kill, reap, clean up), or is deemed hung (``ServerDied``: the caller replaces it)."""

    def __init__(self, isolation_mode: str = "auto") -> None:
        self.isolation_mode = isolation_mode
        self.broken = False
        self.files: RunFiles | None = None
        self.work_dir = make_work_dir("nouscoder-grader-")
        self.server_log = os.memfd_create("fork-server-stderr", os.MFD_CLOEXEC)
        grader_end, server_end = socket.socketpair()
        server_fd = fcntl.fcntl(server_end.fileno(), fcntl.F_DUPFD_CLOEXEC, 3)  # never one of the server's 0-2
        server_end.close()
        environment = server_environment()
        if isolation_mode == "none":
            environment[DISABLE_ENV] = "namespaces"
        try:
            self.process = subprocess.Popen(
                server_command("--fd", str(server_fd), "--work-dir", self.work_dir),
                pass_fds=(server_fd,),
                env=environment,
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self.server_log,
            )
        finally:
            os.close(server_fd)
        self.socket = grader_end
        try:
            self.report = IsolationReport.from_json(self._receive()[0]["ready"])
            warn_missing(self.report, isolation_mode)
        except BaseException:
            self.close()
            raise

    def run(
        self,
        program: Program,
        test_input: str,
        mode: str,
        fn_name: str | None,
        limits: RunLimits,
        timeout_s: float,
        new_completion: bool = True,
    ) -> RunOutcome:
        """Run one test on fresh files (kept for ``read_*`` until the next run or ``discard_files``).

        ``new_completion``: the first test of a program (the server renews what could carry bits from the last
        one); False for the following tests of the same program.
        """
        self.discard_files()
        self.files = RunFiles(test_input)
        request = {
            "op": "run",
            "code": program.code,
            "source": program.source,
            "mode": mode,
            "fn_name": fn_name,
            "timeout_s": timeout_s,
            "limits": limits._asdict(),
            "lazy_prelude": program.lazy_prelude,
            "new_completion": new_completion,
        }
        try:
            protocol.send(self.socket, request, self.files.fds)
        except OSError as exc:
            self.broken = True
            raise ServerDied(f"fork server is gone: {exc}{self._log_tail()}") from exc
        reply, _ = self._receive(timeout_s * LOAD_STRETCH + self.reply_margin_s)
        if "server_error" in reply:
            raise ServerDied(f"fork server failed to run the test: {reply['server_error']}")
        setup_error = "" if reply["setup_ok"] else self.stderr_tail()
        files = self.files
        return RunOutcome(
            stdout_bytes=files.size(files.stdout),
            result_bytes=files.size(files.result),
            setup_error=setup_error,
            **reply,
        )

    def discard_files(self) -> None:
        """Close the last test's files (a 100 MB input should not sit on disk until the next test)."""
        if self.files is not None:
            self.files.close()
            self.files = None

    def stdout_chunks(self) -> Iterator[str]:
        return self._last_files().text_chunks(self.files.stdout)

    def result_chunks(self, start: int = 0) -> Iterator[str]:
        return self._last_files().text_chunks(self.files.result, start)

    def result_head(self, size: int) -> str:
        """The first ``size`` bytes of the functional result file, as text."""
        return os.pread(self._last_files().result, size, 0).decode("utf-8", errors="replace")

    def read_stdout(self, limit_bytes: int = -1) -> str:
        """The last run's stdout (its first ``limit_bytes`` bytes when given; whole, it can be 64 MB)."""
        files = self._last_files()
        if limit_bytes < 0:
            return files.read_text(files.stdout)
        return os.pread(files.stdout, limit_bytes, 0).decode("utf-8", errors="replace")

    def stderr_tail(self) -> str:
        files = self._last_files()
        return files.read_text(files.stderr, max(0, files.size(files.stderr) - _STDERR_TAIL_BYTES))

    def _last_files(self) -> RunFiles:
        if self.files is None:
            raise RuntimeError("no test has run on this fork server since its files were discarded")
        return self.files

    def _receive(self, timeout_s: float = _START_TIMEOUT_S) -> tuple[dict[str, Any], list[int]]:
        try:
            return protocol.receive(self.socket, timeout_s)
        except (EOFError, OSError) as exc:  # TimeoutError is an OSError: a hung server is replaced too
            self.broken = True
            raise ServerDied(f"fork server exited with {self.process.poll()}: {exc!r}{self._log_tail()}") from exc

    def _log_tail(self) -> str:
        """The end of what the server process wrote to its stderr (a traceback when it crashed)."""
        size = os.fstat(self.server_log).st_size
        tail = os.pread(self.server_log, _STDERR_TAIL_BYTES, max(0, size - _STDERR_TAIL_BYTES)).decode(errors="replace")
        return f"; its stderr ends with: {tail.strip()}" if tail.strip() else ""

    def close(self) -> None:
        """Stop the server (its pid namespace dies with it) and remove its work directory; a broken server is
        killed at once (the server dies with its launcher: parent-death signal)."""
        if not self.broken:
            with contextlib.suppress(OSError):
                protocol.send(self.socket, {"op": "exit"})
        self.socket.close()
        try:
            self.process.wait(timeout=0 if self.broken else 5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.discard_files()
        os.close(self.server_log)
        with contextlib.suppress(OSError):
            remove_tree(self.work_dir)
        report = getattr(self, "report", None)
        if report is not None and report.memory_cgroup:
            remove_cgroup(report.memory_cgroup)  # its launcher's job; this one's when the launcher was killed


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def warn_missing(report: IsolationReport, mode: str) -> None:
    """Log each missing mechanism once per process, loudly; ``strict`` mode refuses (raises) instead."""
    if mode == "strict" and report.missing:
        raise IsolationUnavailableError(
            "isolation='strict' but the host does not allow: "
            + ", ".join(report.missing)
            + f"\n{report.summary()}\nRun as root, enable user namespaces, or use isolation='auto'."
        )
    with _warn_lock:
        if "memory_accounting" not in _warned_mechanisms:  # not a required mechanism: both ways bound the memory
            _warned_mechanisms.add("memory_accounting")
            logger.info("sandbox %s", report.memory_accounting().strip())
        for name in report.missing:
            if name not in _warned_mechanisms:
                _warned_mechanisms.add(name)
                logger.warning(
                    "SANDBOX WEAKENED: %s unavailable (%s) -> %s",
                    name,
                    report.errors.get(name, "not allowed here"),
                    MECHANISMS[name],
                )


class IsolationUnavailableError(RuntimeError):
    """``isolation="strict"`` and a required mechanism is missing on this host."""

"""The fork server process: isolated once, then one isolated child per test (grader side: ``forkserver.py``).

Process tree of one worker (namespaces from ``isolation.enter_worker_namespaces``)::

    grader ── launcher (python -S -c ...server.main())   outside the root: renews the scratch tmpfs on request, then
                │                                      waits for the server and forwards its exit status
                └── server  (init of the worker pid namespace, minimal read-only root, no network, non-dumpable)
                      └── test child (run-layer isolation, an ordinary process) ── its processes ...

Per test the server receives the test's input and output files as open descriptors (``SCM_RIGHTS``; files the
grader created without a name, so nothing the program does can make the grader open anything else), forks the
child, waits for it with the wall-clock limit (``pidfd`` + ``poll``; the limit is extended by the time the program
waited for a CPU, up to ``isolation.LOAD_STRETCH`` times), and every ``MEMORY_SAMPLE_S`` counts what the run holds
(``run_memory``). On timeout or past the memory limit it kills the run; when the program has exited it kills and
reaps whatever of the run is left (``kill(-1, SIGKILL)`` from the pid namespace's init reaches every process of it
at once; without a pid namespace: the process group, the subreaper's adopted orphans and, as root, every process
of the run uid), and empties the scratch (contents and the directory's own metadata and inode flags).

Before the first test of each completion (``new_completion`` in the request) it also renews what a program could
use to pass bits to the next completion: a new scratch tmpfs (its inode counter), the pid counter set to a random
value, and a new network namespace if sockets are left (in flight, awaiting the kernel's garbage collector).
Tests of one completion run the same program, which can gain nothing from its own traces. An unmount waits for an
RCU grace period (milliseconds on a loaded machine), so the launcher renews the tmpfs: it moves the old one out of
the root, mounts a new one, answers, and only then unmounts the old one (``_serve_scratch_renewals``).

Imports are kept lean on purpose: every module loaded here makes each per-test ``fork`` slower.

Usage (started by the grader, not by hand):
    python -S -c "from reward_fns.sandbox.server import main; main()" --fd FD --work-dir DIR
    python -S -c "from reward_fns.sandbox.server import main; main()" --probe --work-dir DIR
      --fd FD         inherited socket to the grader (length-prefixed marshal messages, ``protocol.py``)
      --work-dir DIR  the worker's private directory made by ``report.make_work_dir`` (runs/, root/)
      --probe         set the sandbox up, print which mechanisms work as JSON, and exit
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import fcntl
import gc
import json
import marshal
import os
import select
import signal
import socket
import stat
import sys
import time
from typing import Any, NamedTuple

from reward_fns.sandbox import harness, isolation, protocol
from reward_fns.sandbox.scratch import reset_directory

PREIMPORTED_MODULES = (
    "array",
    "bisect",
    "collections",
    "copy",
    "functools",
    "heapq",
    "itertools",
    "math",
    "operator",
    "random",
    "re",
    "string",
    "typing",
)
"""Imported once in the server so the programs' usual imports cost nothing per test (and no more: a bigger
server forks slower)."""

SETUP_OK = b"R"
_RENEW, _RENEWED, _FAILED = b"n", b"k", b"e"
_SETUP_FAILED_STATUS = 125
_HIGH_FD = 100
_KILL_ROUNDS = 100
MEMORY_SAMPLE_S = 0.05
"""How often the server counts the memory a run holds (``run_memory``); less often when counting takes longer than a
tenth of this (a run with thousands of descriptors), so that the server spends at most a tenth of a core on it, but
at least every ``MEMORY_SAMPLE_MAX_S``."""
MEMORY_SAMPLE_MAX_S = 1.0
_MB = 1 << 20


class Server:
    """The loop inside the worker sandbox: one request -> one isolated child -> one reply."""

    def __init__(
        self,
        channel: socket.socket,
        work_dir: str,
        report: dict[str, Any],
        run_uid: int | None,
        pid_counter: tuple[int, int] | None,
        launcher: socket.socket | None,
    ) -> None:
        self.channel = channel
        self.report = report
        self.run_uid = run_uid
        self.run_dir = scratch_directory(work_dir, report)
        self.init_of_run = report["pid_namespace"]
        """The server is init of the pid namespace its runs live in: ``kill(-1)`` reaches exactly them."""
        self.proc_shows_our_pids = report["private_proc"] or not report["pid_namespace"]
        self.user_namespace = report["pid_namespace"] and not report["running_as_root"]
        self.process_baseline = _processes_already_counted(report)
        self.pid_counter = pid_counter
        self.launcher = launcher
        """Asks the launcher for a new scratch tmpfs (``_serve_scratch_renewals``); None without a pid namespace."""
        self.buffers = KernelBuffers(report["network_namespace"], socket_bytes=3 * _default_send_buffer() // 2)
        self.ran = False
        """A run happened since the server started: the next completion needs renewed state."""
        self.reset_scratch()

    def serve(self) -> None:
        protocol.send(self.channel, {"ready": json.dumps(self.report)})
        while True:
            try:
                request, fds = protocol.receive(self.channel)
            except EOFError:
                return
            try:
                if request.get("op") == "exit":
                    return
                reply = self.run(request, fds)
            except Exception as exc:  # reported to the grader as an internal error; the server stays usable
                reply = {"server_error": f"{type(exc).__name__}: {exc}"}
            finally:
                for fd in fds:
                    os.close(fd)
            protocol.send(self.channel, reply)

    def run(self, request: dict[str, Any], files: list[int]) -> dict[str, Any]:
        """Run one test; ``files`` are the test's stdin, stdout, stderr and functional-result files."""
        if len(files) != 4:
            raise ValueError(f"a run needs 4 files (stdin, stdout, stderr, result), got {len(files)}")
        if request.get("new_completion", True) and self.ran:
            self._renew_for_a_new_completion()
        self.ran = True
        ready_read, ready_write = os.pipe()
        started = time.monotonic()
        pid = self._fork_child(request, files, ready_write)
        os.close(ready_write)
        waited = self._wait(pid, started, request["timeout_s"], request["limits"]["memory_bytes"])
        setup_ok = os.read(ready_read, 1) == SETUP_OK  # read after the exit: one wake-up less per test
        os.close(ready_read)
        wall_s = time.monotonic() - started
        leftovers = self._end_run(pid)
        self.reset_scratch()  # what the run wrote is gone before the grader hears the result
        return {
            "setup_ok": setup_ok,
            "timed_out": waited.timed_out,
            "memory_exceeded": waited.memory_exceeded,
            "memory_held": waited.memory_held,
            "exit_code": os.WEXITSTATUS(waited.status) if os.WIFEXITED(waited.status) else None,
            "signal": os.WTERMSIG(waited.status) if os.WIFSIGNALED(waited.status) else None,
            "wall_s": wall_s,
            "cpu_wait_s": waited.cpu_wait_s,
            "cpu_s": waited.usage.ru_utime + waited.usage.ru_stime,
            "max_rss_kb": waited.usage.ru_maxrss,
            "leftover_processes": leftovers,
        }

    def reset_scratch(self) -> None:
        """The scratch as the first run found it, owned by the run's uid: with a mount namespace, the scratch
        tmpfs's root (sticky, world-writable) emptied and a new 0700 working directory in it; without, the working
        directory emptied; in both, the directory's own metadata reset (``scratch.reset_directory``)."""
        if self.report["mount_namespace"]:
            reset_directory(isolation.SCRATCH_DIR, 0o1777, owner=None)
            os.mkdir(self.run_dir, 0o700)
            if self.run_uid is not None:
                os.chown(self.run_dir, self.run_uid, self.run_uid)
        else:
            reset_directory(self.run_dir, 0o700, owner=self.run_uid)

    def _renew_for_a_new_completion(self) -> None:
        """Nothing of the last completion in kernel state the resets do not reach: a new scratch tmpfs (the empty
        old one unmounted), a random pid counter, a new network namespace if the last one still holds sockets."""
        if self.report["mount_namespace"] and self.launcher is not None:
            self.launcher.sendall(_RENEW)
            if self.launcher.recv(1) != _RENEWED:
                raise OSError("the launcher could not mount a new scratch tmpfs")
            os.mkdir(self.run_dir, 0o700)
            if self.run_uid is not None:
                os.chown(self.run_dir, self.run_uid, self.run_uid)
        if self.pid_counter is not None:
            isolation.randomize_pid_counter(*self.pid_counter)
        if self.buffers.count_namespace_sockets and namespace_sockets():
            isolation.new_network_namespace()

    def _wait(self, pid: int, started: float, timeout_s: float, memory_limit: int) -> _Wait:
        """Wait for the child; kill the run when its time is up or it holds more than ``memory_limit`` bytes.

        Time is up at ``timeout_s`` of wall-clock time plus the time the program waited for a CPU (a saturated
        machine is not the program's fault), ``isolation.LOAD_STRETCH`` times ``timeout_s`` at the latest.
        Memory is counted every ``MEMORY_SAMPLE_S`` (``run_memory``): RLIMIT_AS bounds each process, not their
        sum, nor the kernel buffers they fill. If the grader goes away meanwhile (its end of the socket closes),
        the run is killed and the server exits: nothing of a run outlives the grader that asked for it.
        """
        pidfd = os.pidfd_open(pid)
        grader_fd = self.channel.fileno()
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(grader_fd, select.POLLIN | select.POLLHUP)
        deadline, latest = started + timeout_s, started + timeout_s * isolation.LOAD_STRETCH
        next_sample = started + MEMORY_SAMPLE_S
        timed_out = memory_exceeded = False
        held = ""
        while not (events := dict(poller.poll(max(0.0, min(next_sample, deadline) - time.monotonic()) * 1000))):
            now = time.monotonic()
            if now >= deadline:
                deadline = min(latest, started + timeout_s + self._cpu_wait_s(pid))
                if now >= deadline:
                    timed_out = True
                    break
            if now >= next_sample:
                memory = run_memory(self.buffers)
                if memory.total > memory_limit:
                    memory_exceeded, held = True, memory.describe()
                    break
                spent = time.monotonic() - now
                next_sample = now + spent + min(MEMORY_SAMPLE_MAX_S, max(MEMORY_SAMPLE_S, 10 * spent))
        if timed_out or memory_exceeded or grader_fd in events:
            self._kill_run(pid)
        cpu_wait_s = self._cpu_wait_s(pid) if time.monotonic() - started > MEMORY_SAMPLE_S else 0.0
        os.close(pidfd)
        _, status, usage = os.wait4(pid, 0)
        if grader_fd in events and pidfd not in events:
            raise SystemExit("fork server: the grader closed the connection during a run")
        return _Wait(timed_out, memory_exceeded, held, status, usage, cpu_wait_s)

    def _cpu_wait_s(self, pid: int) -> float:
        """Seconds the program's main thread has spent runnable but waiting for a CPU (``/proc/PID/schedstat``,
        second field; 0 where the kernel keeps no scheduler statistics or ``/proc`` numbers processes otherwise)."""
        if not self.proc_shows_our_pids:
            return 0.0
        try:
            with open(f"/proc/{pid}/schedstat", "rb") as handle:
                return int(handle.read().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return 0.0

    def _kill_run(self, pid: int) -> None:
        """SIGKILL the run: every process of the pid namespace at once, or (without one) the child."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1 if self.init_of_run else pid, signal.SIGKILL)

    def _end_run(self, pid: int) -> int:
        """Kill and reap what the run left after its program exited; returns how many of its processes are still
        alive (0 unless the kernel refused a kill, which it cannot in a pid namespace of ours)."""
        if not self.init_of_run:
            return self._kill_leftovers(pid)
        try:
            os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return 0  # nothing left: the common case costs one system call
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # every process of our pid namespace but us (the kernel holds the task
        while True:  # list while it signals them: none can fork past it), then reap them all; orphans come to us
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                return 0

    def _fork_child(self, request: dict[str, Any], fds: list[int], ready_write: int) -> int:
        pid = isolation.fork_without_python_hooks()
        if pid == 0:
            self._child_main(request, fds, ready_write)
        return pid

    def _child_main(self, request: dict[str, Any], fds: list[int], ready_write: int) -> None:
        """The forked test child: isolate, tell the server set-up worked, run the program, exit. Never returns."""
        status = _SETUP_FAILED_STATUS
        try:
            high_fds = [fcntl.fcntl(fd, fcntl.F_DUPFD, _HIGH_FD) for fd in (*fds, ready_write)]
            for target, fd in enumerate(high_fds):
                os.dup2(fd, target)  # 0 stdin, 1 stdout, 2 stderr, 3 functional result, 4 set-up-done pipe
            os.closerange(5, 1 << 16)
            limits = isolation.RunLimits(**request["limits"])
            limits = limits._replace(processes=limits.processes + self.process_baseline)
            isolation.isolate_child(self.run_uid, self.run_dir, limits, self.user_namespace)
            isolation.set_dumpable(True)
            harness.reset_interpreter_state()
            if request.get("lazy_prelude"):
                harness.complete_the_prelude()
            harness.write_source(request["source"])
            code = marshal.loads(request["code"])
            os.write(4, SETUP_OK)
            os.close(4)
            if request["mode"] == "functional":
                status = harness.run_functional(code, request["fn_name"])
            elif request["mode"] == "evalplus":
                status = harness.run_evalplus(code, request["fn_name"])
            else:
                status = harness.run_main_script(code)
        except BaseException as exc:  # set-up failure: the server sees no SETUP_OK and reports an internal error
            with contextlib.suppress(BaseException):
                os.write(2, f"sandbox set-up failed: {exc!r}\n".encode())
        finally:
            harness.exit_now(status)

    def _kill_leftovers(self, pid: int) -> int:
        """Without a pid namespace: SIGKILL and reap the run's process group, adopted orphans and (root) every
        process of the run uid; returns how many are still alive afterwards (0 unless the kernel refused a kill)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        victims = self._run_processes()
        for _ in range(_KILL_ROUNDS):
            if not victims:
                return 0
            for victim in victims:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(victim, signal.SIGKILL)
            _reap_killed(victims)
            victims = self._run_processes()
        return len(victims)

    def _run_processes(self) -> set[int]:
        """Processes of the run still there: adopted orphans, and (root) every process of the run uid."""
        victims = set(_own_children())
        if self.run_uid is not None:
            victims |= set(_processes_of_uid(self.run_uid))
        return victims


class _Wait(NamedTuple):
    timed_out: bool
    memory_exceeded: bool
    memory_held: str
    status: int
    usage: Any
    cpu_wait_s: float


class KernelBuffers(NamedTuple):
    """What the kernel buffers of a run can hold, per object: the seccomp filter keeps every pipe at its default
    capacity and every socket a Unix stream socket with the default send buffer (``seccomp.py``)."""

    count_namespace_sockets: bool
    """The worker has its own network namespace: every Unix socket in it is the run's (``/proc/net/unix`` lists
    them all, also those only in flight between sockets and connections not yet accepted); without one, the
    sockets in the run's descriptor tables are counted."""
    pipe_bytes: int = 16 * os.sysconf("SC_PAGE_SIZE")
    """A pipe holds at most 16 pages (its default capacity)."""
    socket_bytes: int = 3 * 212_992 // 2
    """A Unix stream socket holds at most 1.5 send buffers (the kernel lets the last write pass the buffer by up to
    half of it): what it sent and its live peer has not read yet, or, once the peer has closed (which frees what
    this one sent it), what that peer left in this one's queue; the default send buffer is
    ``net.core.wmem_default`` (212,992 bytes unless set otherwise)."""


class MemoryHeld(NamedTuple):
    total: int
    processes: int
    sockets: int
    pipes: int

    def describe(self) -> str:
        return (
            f"the run's processes and kernel buffers together held {self.total / _MB:.0f} MB ({self.processes / _MB:.0f}"
            f" MB in its processes, {self.sockets} Unix sockets and {self.pipes} pipes at their buffer capacity)"
        )


def run_memory(buffers: KernelBuffers) -> MemoryHeld:
    """What the processes below this one (in the fork server: the run's) hold together: their proportional set
    size (a page shared by k processes counts 1/k in each) plus what their pipes and sockets can hold in kernel
    buffers (``KernelBuffers``), which no rlimit sees. 0 for one process with no pipe or socket (RLIMIT_AS bounds
    it)."""
    processes = _descendants()
    pipes: set[tuple[int, int]] = set()
    sockets: set[tuple[int, int]] = set()
    for process in processes:
        _add_buffer_files(process, pipes, sockets)
    socket_count = namespace_sockets() if buffers.count_namespace_sockets else len(sockets)
    in_buffers = len(pipes) * buffers.pipe_bytes + socket_count * buffers.socket_bytes
    if len(processes) <= 1 and not in_buffers:
        return MemoryHeld(0, 0, 0, 0)
    total_kb = 0
    for process in processes:
        with contextlib.suppress(OSError, StopIteration):
            with open(f"/proc/{process}/smaps_rollup") as rollup:
                total_kb += int(next(line for line in rollup if line.startswith("Pss:")).split()[1])
    return MemoryHeld(total_kb * 1024 + in_buffers, total_kb * 1024, socket_count, len(pipes))


def _add_buffer_files(process: int, pipes: set[tuple[int, int]], sockets: set[tuple[int, int]]) -> None:
    """Add the pipes (FIFOs too) and sockets open in ``process`` to the sets, as (device, inode). The descriptors'
    link texts name pipes and sockets; only a path (which could be a FIFO) costs a ``stat``."""
    directory = f"/proc/{process}/fd"
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            with contextlib.suppress(OSError):
                target = os.readlink(f"{directory}/{name}")
                if target.startswith("pipe:["):
                    pipes.add((0, int(target[6:-1])))
                elif target.startswith("socket:["):
                    sockets.add((0, int(target[8:-1])))
                elif target.startswith("/") and not target.startswith(_NOT_FIFOS):
                    info = os.stat(f"{directory}/{name}")
                    if stat.S_ISFIFO(info.st_mode):
                        pipes.add((info.st_dev, info.st_ino))


_NOT_FIFOS = ("/memfd:", "/dev/", "/proc/", "/usr/", "/lib", "/etc/")
"""Link texts of descriptors that cannot be FIFOs in the sandbox (the test's files, devices, the read-only root)."""


def _default_send_buffer() -> int:
    """``net.core.wmem_default``: the send buffer of every socket of a run (the filter refuses changing it)."""
    try:
        with open("/proc/sys/net/core/wmem_default") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 212_992  # the kernel's default


def namespace_sockets() -> int:
    """How many Unix sockets the network namespace of this process holds."""
    with open("/proc/net/unix", "rb") as listing:
        return listing.read().count(b"\n") - 1


def _descendants() -> list[int]:
    """Every process below the server: the run's (the server has no other children; orphans of a run are adopted
    by the server, init of their pid namespace or the subreaper)."""
    found, frontier = [], _own_children()
    while frontier:
        found += frontier
        frontier = [child for parent in frontier for child in _children_of(parent)]
    return found


def _children_of(pid: int | str) -> list[int]:
    children = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children") as handle:
                children.extend(int(child) for child in handle.read().split())
    return children


def _processes_already_counted(report: dict[str, Any]) -> int:
    """Tasks RLIMIT_NPROC already counts for the child's uid: none (dedicated uid), launcher + server (user
    namespace), or every thread of our uid on the host (no namespaces; measured once at start)."""
    if report["running_as_root"]:
        return 0
    if report["separate_identity"]:
        return 2
    uid, count = os.getuid(), 0
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                count += len(os.listdir(f"/proc/{entry}/task"))
    return count


def _own_children() -> list[int]:
    return _children_of("self")


def _processes_of_uid(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    found.append(int(entry))
    return found


def _reap_killed(victims: set[int]) -> None:
    """Reap the killed victims that are our children (at most 1 s). Children that appear meanwhile (a grandchild
    reparented to us when its killed parent died) are not waited for: the caller's next round kills them."""
    pending = set(victims)
    deadline = time.monotonic() + 1.0
    while pending and time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            pending.discard(pid)
            continue
        pending &= set(_own_children())
        if pending:
            time.sleep(0.001)


def scratch_directory(work_dir: str, report: dict[str, Any]) -> str:
    """The run's working directory: ``WORK_DIR`` in the scratch tmpfs of the minimal root, else
    ``<work_dir>/runs/run``."""
    return isolation.WORK_DIR if report["mount_namespace"] else os.path.join(work_dir, "runs", "run")


CHILD_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONIOENCODING": "utf-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
"""Every test child's environment, plus ``HOME`` (the working directory), ``TMPDIR`` (the scratch tmpfs, else the
working directory) and ``PYTHONPATH`` (the grader's site-packages, so that ``subprocess``/``multiprocessing``
interpreters import what the program can).
One thread per numeric library, as on a judge: OpenBLAS starts one thread per core of a 128-core node at
``import numpy``, which RLIMIT_NPROC and RLIMIT_AS would refuse."""


def _use_child_environment(run_dir: str, report: dict[str, Any]) -> None:
    """The server's environment becomes exactly the one every test child gets (nothing of the grader's)."""
    checkout = isolation.package_root()
    site_dirs = [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path and path != checkout]
    temporary = isolation.SCRATCH_DIR if report["mount_namespace"] else run_dir
    os.environ.clear()
    os.environ.update(
        CHILD_ENVIRONMENT | {"HOME": run_dir, "TMPDIR": temporary, "PYTHONPATH": os.pathsep.join(site_dirs)}
    )


def _install_exit_builtins() -> None:
    """``quit()`` and ``exit()``, which ``site`` (not loaded: ``-S``) normally adds to builtins."""
    import _sitebuiltins

    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")


class Worker(NamedTuple):
    """What ``_enter_sandbox`` gives the server."""

    report: dict[str, Any]
    """The fields of ``report.IsolationReport``."""
    run_uid: int | None
    """The dedicated uid of the test children (root), or None."""
    pid_counter: tuple[int, int] | None
    """Descriptor of the worker pid namespace's ``ns_last_pid`` and its ``pid_max``, or None."""
    launcher: socket.socket | None
    """The server's end of the channel to the launcher (``_serve_scratch_renewals``), or None."""


def _enter_sandbox(work_dir: str, grader_fd: int | None) -> Worker:
    """Enter the worker namespaces, fork the server as init of the worker pid namespace, build its root.

    Returns in the server; the launcher renews the server's scratch tmpfs on request until the server exits, then
    exits with its status.
    """
    disabled = isolation.disabled_mechanisms()
    as_root = os.getuid() == 0 and "root" not in disabled
    run_uid = None
    if as_root:
        with open("/proc/self/uid_map") as uid_map:
            run_uid = isolation.dedicated_uid(os.getpid(), uid_map.read())
    launcher, server_end = socket.socketpair()  # before the network namespace: none of the run's sockets
    available, errors = isolation.enter_worker_namespaces(disabled)
    if as_root and run_uid is None:
        errors["separate_identity"] = "this user namespace maps too few uids for a dedicated one"
    to_launcher: socket.socket | None = None
    if available.get("pid_namespace"):
        pid = os.fork()
        if pid != 0:
            if grader_fd is not None:
                os.close(grader_fd)
            server_end.close()
            _serve_scratch_renewals(launcher, work_dir)
            _, status = os.waitpid(pid, 0)
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
        isolation.set_parent_death_signal()
        to_launcher = server_end
    else:
        server_end.close()
    launcher.close()
    pid_counter = None
    if available:
        filesystem = isolation.setup_worker_filesystem(work_dir, isolation.interpreter_paths())
        available |= filesystem.available
        errors |= filesystem.errors
        if filesystem.pid_counter is not None:
            pid_counter = (filesystem.pid_counter, filesystem.pid_max)
    return Worker(_report_fields(as_root, run_uid, available, errors, disabled), run_uid, pid_counter, to_launcher)


def _serve_scratch_renewals(channel: socket.socket, work_dir: str) -> None:
    """In the launcher, outside the sandbox's root but in its mount namespace, until the server closes the channel:
    for each request, move the server's scratch tmpfs out of the root, mount a new one in its place, answer, and only
    then unmount the old one (an unmount waits for an RCU grace period: the server, busy with the completion's tests,
    does not). The launcher cannot use a thread for it: a process that made a pid namespace for its children may
    not start threads."""
    scratch = os.path.join(work_dir, "root") + isolation.SCRATCH_DIR
    held = os.path.join(work_dir, "old-scratch")
    os.mkdir(held, 0o700)
    while channel.recv(1) == _RENEW:
        try:
            isolation.move_mount(scratch, held)
            isolation.mount_scratch(scratch)
        except OSError:
            channel.sendall(_FAILED)
            continue
        channel.sendall(_RENEWED)
        with contextlib.suppress(OSError):
            isolation.detach_mount(held)


def _report_fields(
    as_root: bool, run_uid: int | None, available: dict[str, bool], errors: dict[str, str], disabled: frozenset[str]
) -> dict[str, Any]:
    """Apply the process-wide mechanisms (seccomp last: it refuses what the others need) and return the fields of
    ``report.IsolationReport`` (built on the grader side)."""
    fields: dict[str, Any] = {}
    for name, enable in (
        ("subreaper", isolation.set_child_subreaper),
        ("no_new_privs", isolation.set_no_new_privs),
        ("session_keyring", isolation.join_new_session_keyring),
        ("seccomp", isolation.install_syscall_filter),
    ):
        try:
            if name in disabled:
                raise OSError(errno.EPERM, f"disabled by {isolation.DISABLE_ENV}")
            enable()
            fields[name] = True
        except OSError as exc:  # a kernel without keyrings has no keyring to leak: ENOSYS counts as available
            fields[name] = name == "session_keyring" and exc.errno == errno.ENOSYS
            if not fields[name]:
                errors[name] = str(exc)
    isolation.set_dumpable(False)
    fields |= {
        "running_as_root": as_root,
        "separate_identity": run_uid is not None or available.get("user_namespace", False),
        "network_namespace": available.get("network_namespace", False),
        "mount_namespace": available.get("mount_namespace", False),
        "pid_namespace": available.get("pid_namespace", False),
        "private_proc": available.get("private_proc", False),
        "cgroup_v2": isolation.cgroup_v2_writable(),
        "errors": errors,
    }
    return fields


def _parse_arguments(argv: list[str]) -> dict[str, Any]:
    """The flags in the module docstring (argparse would cost every forked child its imports)."""
    if "--help" in argv or "-h" in argv:
        print(__doc__)
        raise SystemExit(0)
    arguments: dict[str, Any] = {"fd": None, "work_dir": None, "probe": "--probe" in argv}
    for flag, key, convert in (("--fd", "fd", int), ("--work-dir", "work_dir", str)):
        if flag in argv:
            arguments[key] = convert(argv[argv.index(flag) + 1])
    if arguments["work_dir"] is None or (arguments["fd"] is None and not arguments["probe"]):
        raise SystemExit(f"fork server: --work-dir and one of --fd/--probe are required; got {argv}\n{__doc__}")
    return arguments


def main(argv: list[str] | None = None) -> None:
    """Start a fork server (``--fd``) or report what the sandbox set-up achieves here (``--probe``)."""
    arguments = _parse_arguments(sys.argv[1:] if argv is None else argv)
    os.umask(0o022)  # not the grader's: with 077 the run uid could not enter the directories made for it
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # no parent-death signal here: it fires when the grader *thread*
    # that started us exits (verl's thread pools); the server leaves when its socket to the grader closes instead
    _install_exit_builtins()
    for name in PREIMPORTED_MODULES:
        __import__(name)
    worker = _enter_sandbox(arguments["work_dir"], arguments["fd"])
    report = worker.report
    if arguments["probe"]:
        print(json.dumps(report), flush=True)
        return
    run_dir = scratch_directory(arguments["work_dir"], report)
    _use_child_environment(run_dir, report)
    harness.prepare_fork_server(run_dir)
    gc.freeze()
    channel = socket.socket(fileno=arguments["fd"])
    Server(channel, arguments["work_dir"], report, worker.run_uid, worker.pid_counter, worker.launcher).serve()

"""The fork server process: isolated once, then one isolated child per test (grader side: ``forkserver.py``).

Process tree of one worker (namespaces from ``isolation.enter_worker_namespaces``)::

    grader ── launcher (python -S -c ...server.main())                 outside: waits, forwards the exit status
                └── server  (init of the worker pid namespace, minimal read-only root, no network, non-dumpable)
                      └── test child (init of a per-run pid namespace, run-layer isolation) ── its processes ...

Per test the server receives the test's input and output files as open descriptors (``SCM_RIGHTS``; files the
grader created without a name, so nothing the program does can make the grader open anything else), forks the
child, waits for it with the wall-clock limit (``pidfd`` + ``poll``), kills it on timeout, then kills and reaps
everything the run left (the per-run pid namespace dies with its init; the process group, the subreaper's
adopted orphans and, as root, every process of the run uid are killed too), checks that no process of the run
is left, and resets the scratch directory (contents, mode, times, extended attributes).

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
_SETUP_FAILED_STATUS = 125
_HIGH_FD = 100
_KILL_ROUNDS = 100
MEMORY_SAMPLE_S = 0.05
"""How often the server sums the memory of a run that has started other processes."""


class Server:
    """The loop inside the worker sandbox: one request -> one isolated child -> one reply."""

    def __init__(self, channel: socket.socket, work_dir: str, report: dict[str, Any], run_uid: int | None) -> None:
        self.channel = channel
        self.report = report
        self.run_uid = run_uid
        self.run_dir = scratch_directory(work_dir, report)
        self.own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY) if report["pid_namespace"] else None
        self.user_namespace = report["pid_namespace"] and not report["running_as_root"]
        self.process_baseline = _processes_already_counted(report)
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
        ready_read, ready_write = os.pipe()
        started = time.monotonic()
        pid = self._fork_child(request, files, ready_write)
        os.close(ready_write)
        memory_limit = request["limits"]["memory_bytes"]
        waited = _wait(pid, started + request["timeout_s"], self.channel.fileno(), memory_limit)
        setup_ok = os.read(ready_read, 1) == SETUP_OK  # read after the exit: one wake-up less per test
        os.close(ready_read)
        wall_s = time.monotonic() - started
        leftovers = 0 if self.own_pid_ns is not None else self._kill_leftovers(pid)
        self.reset_scratch()  # what the run wrote is gone before the grader hears the result
        return {
            "setup_ok": setup_ok,
            "timed_out": waited.timed_out,
            "memory_exceeded": waited.memory_exceeded,
            "exit_code": os.WEXITSTATUS(waited.status) if os.WIFEXITED(waited.status) else None,
            "signal": os.WTERMSIG(waited.status) if os.WIFSIGNALED(waited.status) else None,
            "wall_s": wall_s,
            "cpu_s": waited.usage.ru_utime + waited.usage.ru_stime,
            "max_rss_kb": waited.usage.ru_maxrss,
            "leftover_processes": leftovers,
        }

    def reset_scratch(self) -> None:
        """The scratch as the first run found it: with a mount namespace, the scratch tmpfs's root (sticky,
        world-writable) emptied and a new working directory in it; without, a 0700 directory; both owned by the
        run's uid."""
        if self.report["mount_namespace"]:
            reset_directory(isolation.SCRATCH_DIR, 0o1777, owner=None)
            os.mkdir(self.run_dir, 0o700)
            if self.run_uid is not None:
                os.chown(self.run_dir, self.run_uid, self.run_uid)
        else:
            reset_directory(self.run_dir, 0o700, owner=self.run_uid)

    def _fork_child(self, request: dict[str, Any], fds: list[int], ready_write: int) -> int:
        if self.own_pid_ns is not None:
            isolation.unshare(isolation.CLONE_NEWPID)
        pid = isolation.fork_without_python_hooks()
        if pid == 0:
            self._child_main(request, fds, ready_write)
        if self.own_pid_ns is not None:
            isolation.setns(self.own_pid_ns, isolation.CLONE_NEWPID)
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
            harness.write_source(request["source"])
            code = marshal.loads(request["code"])
            os.write(4, SETUP_OK)
            os.close(4)
            if request["mode"] == "functional":
                status = harness.run_functional(code, request["fn_name"])
            else:
                status = harness.run_main_script(code)
        except BaseException as exc:  # set-up failure: the server sees no SETUP_OK and reports an internal error
            with contextlib.suppress(BaseException):
                os.write(2, f"sandbox set-up failed: {exc!r}\n".encode())
        finally:
            harness.exit_now(status)

    def _kill_leftovers(self, pid: int) -> int:
        """SIGKILL and reap the run's process group, adopted orphans and (root) every process of the run uid.

        Only without a per-run pid namespace: with one, the kernel has killed and reaped every process of the
        namespace before its init's exit completed (``zap_pid_ns_processes``), i.e. before ``_wait`` returned.
        Returns how many processes of the run are still alive afterwards (0 unless the kernel refused a kill).
        """
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
    status: int
    usage: Any


def _wait(pid: int, deadline: float, grader_fd: int, memory_limit: int) -> _Wait:
    """Wait for the child until ``deadline`` (monotonic) and SIGKILL it then, or as soon as the run's processes
    together hold more than ``memory_limit`` bytes (sampled every ``MEMORY_SAMPLE_S``: RLIMIT_AS bounds each
    process, not their sum).

    If the grader goes away meanwhile (its end of the socket closes), the child is killed and the server exits:
    nothing of a run outlives the grader that asked for it.
    """
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(grader_fd, select.POLLIN | select.POLLHUP)
    timed_out = memory_exceeded = False
    while not (events := dict(poller.poll(max(0.0, min(MEMORY_SAMPLE_S, deadline - time.monotonic())) * 1000))):
        timed_out = time.monotonic() >= deadline
        memory_exceeded = not timed_out and run_memory() > memory_limit
        if timed_out or memory_exceeded:
            break
    if timed_out or memory_exceeded or grader_fd in events:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    os.close(pidfd)
    _, status, usage = os.wait4(pid, 0)
    if grader_fd in events and pidfd not in events:
        raise SystemExit("fork server: the grader closed the connection during a run")
    return _Wait(timed_out, memory_exceeded, status, usage)


def run_memory() -> int:
    """Bytes the processes below this one hold together (proportional set size: a page shared by k processes
    counts 1/k in each), or 0 while there is at most one (RLIMIT_AS bounds that one). In the fork server: the
    run's processes."""
    processes = _descendants()
    if len(processes) <= 1:
        return 0
    total_kb = 0
    for process in processes:
        with contextlib.suppress(OSError, StopIteration):
            with open(f"/proc/{process}/smaps_rollup") as rollup:
                total_kb += int(next(line for line in rollup if line.startswith("Pss:")).split()[1])
    return total_kb * 1024


def _descendants() -> list[int]:
    """Every process below the server: the run's (the server has no other children; orphans of a run without
    its own pid namespace are adopted by the server, the subreaper)."""
    found, frontier = [], _children_of(os.getpid())
    while frontier:
        found += frontier
        frontier = [child for parent in frontier for child in _children_of(parent)]
    return found


def _children_of(pid: int) -> list[int]:
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
    return _children_of(os.getpid())


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


def reset_directory(path: str, mode: int, owner: int | None) -> None:
    """Empty ``path`` and reset its own metadata (owner, mode, times, extended attributes and ACLs), so that
    nothing a run left -- not even in the directory's inode -- reaches the next run. Whatever the run left at
    ``path`` itself (a symbolic link, a file: possible only without a mount namespace) is replaced by a directory;
    symbolic links are removed, never followed."""
    if not _is_real_directory(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.mkdir(path, mode)
    if owner is not None:
        os.chown(path, owner, owner)
    os.chmod(path, mode)
    for name in os.listdir(path):
        entry = os.path.join(path, name)
        remove_tree(entry) if _is_real_directory(entry) else os.unlink(entry)
    os.utime(path, ns=(0, 0))
    for attribute in os.listxattr(path):
        with contextlib.suppress(OSError):  # security.* labels are not ours to remove
            os.removexattr(path, attribute)


def _is_real_directory(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def remove_tree(top: str) -> None:
    """Delete ``top`` and everything in it, also what the program made unreadable (chmod 000 directories);
    symbolic links are removed, never followed."""
    os.chmod(top, 0o700)
    for root, dirs, _ in os.walk(top):
        for name in dirs:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o700)
    for root, dirs, files in os.walk(top, topdown=False):
        for name in files:
            os.unlink(os.path.join(root, name))
        for name in dirs:
            path = os.path.join(root, name)
            os.unlink(path) if os.path.islink(path) else os.rmdir(path)
    os.rmdir(top)


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


def _enter_sandbox(work_dir: str, grader_fd: int | None) -> tuple[dict[str, Any], int | None]:
    """Enter the worker namespaces, fork the server as init of the worker pid namespace, build its root.

    Returns (report fields, dedicated run uid or None) in the server; the launcher waits for the server and
    exits with its status.
    """
    disabled = isolation.disabled_mechanisms()
    as_root = os.getuid() == 0 and "root" not in disabled
    run_uid = None
    if as_root:
        with open("/proc/self/uid_map") as uid_map:
            run_uid = isolation.dedicated_uid(os.getpid(), uid_map.read())
    available, errors = isolation.enter_worker_namespaces(disabled)
    if as_root and run_uid is None:
        errors["separate_identity"] = "this user namespace maps too few uids for a dedicated one"
    if available.get("pid_namespace"):
        pid = os.fork()
        if pid != 0:
            if grader_fd is not None:
                os.close(grader_fd)
            _, status = os.waitpid(pid, 0)
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
        isolation.set_parent_death_signal()
    if available:
        fs_available, fs_errors = isolation.setup_worker_filesystem(work_dir, isolation.interpreter_paths())
        available |= fs_available
        errors |= fs_errors
    return _report_fields(as_root, run_uid, available, errors, disabled), run_uid


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
    report, run_uid = _enter_sandbox(arguments["work_dir"], arguments["fd"])
    if arguments["probe"]:
        print(json.dumps(report), flush=True)
        return
    run_dir = scratch_directory(arguments["work_dir"], report)
    _use_child_environment(run_dir, report)
    harness.prepare_fork_server(run_dir)
    gc.freeze()
    Server(socket.socket(fileno=arguments["fd"]), arguments["work_dir"], report, run_uid).serve()

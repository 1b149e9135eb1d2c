"""Linux isolation mechanisms of the sandbox, applied inside the fork server (lean imports: it forks per test).

Two layers (threat model and per-mechanism table: ``reward_fns/README.md``):

* **worker layer**, applied once when a fork server starts (``enter_worker_namespaces`` then
  ``setup_worker_filesystem``): new network, IPC and mount namespaces; in the mount namespace the server
  ``chroot``s into a minimal read-only root (system directories and the interpreter; a private ``/proc``, a
  minimal ``/dev`` and a size-capped scratch tmpfs on ``/tmp``; nothing of the grader's work directory); a new
  pid namespace whose init is the fork server. Unprivileged users get these through a user namespace; root gets
  them directly. Then a fresh session keyring and the seccomp filter (``seccomp.py``).
* **run layer**, applied in every forked test child (``isolate_child``): a new session, a dedicated uid when the
  grader is root, rlimits, parent-death signal, no capabilities. The child is an ordinary process of the worker
  pid namespace (not its init: signals it sends itself act as on any machine); the server kills whatever is left
  of a run with ``kill(-1, SIGKILL)``, which reaches every process of that namespace but the server.
* **between completions** (before a program's first test): a new scratch tmpfs (the launcher, outside the root,
  moves the old one out with ``move_mount``, mounts a new one with ``mount_scratch``, answers, then unmounts the
  old one), the worker's pid counter set to a random value (``randomize_pid_counter``), and a new network
  namespace when a run left sockets behind: nothing a program leaves, not even in kernel counters, reaches the
  next one.

Python 3.11 has no ``os.unshare``/``mount``, so these go through ``ctypes`` calls into libc.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import sys
from typing import TYPE_CHECKING, NamedTuple

from reward_fns.sandbox import seccomp
from reward_fns.sandbox.seccomp import CLONE_NEWNET

if TYPE_CHECKING:  # the fork server imports no more than it needs
    from collections.abc import Mapping

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000

_MS_RDONLY = 0x1
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_BIND = 0x1000
_MS_MOVE = 0x2000
_MS_REC = 0x4000
_MS_PRIVATE = 0x40000
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38

_KEYCTL_JOIN_SESSION_KEYRING = 1
_SYS_MOUNT_SETATTR = 442  # the same number on every architecture (syscalls added after 5.0 share one table)
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

SCRATCH_DIR = "/tmp"
"""Inside the minimal root: a tmpfs emptied after every test; ``TMPDIR``, and the target of ``/dev/shm`` (POSIX
semaphores and shared memory of ``multiprocessing``)."""
WORK_DIR = SCRATCH_DIR + "/work"
"""Inside the minimal root: the run's working directory and ``HOME`` (its ``solution.py``), made afresh in the
scratch tmpfs for every test."""
SCRATCH_SIZE = "256m"
"""Size of the scratch tmpfs: tmpfs pages are not in RLIMIT_AS, so this caps the memory a run can park in files
(each file is also capped by RLIMIT_FSIZE); a write past it fails with ENOSPC, graded ``memory_limit``."""
SCRATCH_INODES = 16384
"""Files and directories the scratch tmpfs can hold (bounds the server's cleanup after a test)."""
_SCRATCH_OPTIONS = f"size={SCRATCH_SIZE},nr_inodes={SCRATCH_INODES},mode=1777"
_MNT_DETACH = 0x2
LOAD_STRETCH = 3.0
"""A test's wall-clock limit is extended by the time its program spent waiting for a CPU (a saturated machine is
not the program's fault), up to this multiple of the limit."""
DEVICES = ("null", "zero", "full", "random", "urandom")
"""Device nodes of the minimal ``/dev`` (bind mounts of the host's: a user namespace cannot ``mknod``)."""
DEVICE_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
    "shm": SCRATCH_DIR,
}
"""Symbolic links of the minimal ``/dev`` (``open('/dev/stdin')`` is a common judge pattern)."""

_libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols, libc's among them (no ctypes.util: it
# imports subprocess, shutil and the compression modules, and every module makes each fork slower)
_libc.syscall.restype = ctypes.c_long
_fflush = _libc.fflush


def flush_c_streams() -> None:
    """``fflush(NULL)``: write out what C stdio buffered (``printf`` from ``ctypes`` or an extension), as ``exit(3)``
    does before ``_exit``."""
    _fflush(None)


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _check(result: int, what: str) -> None:
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def mount_scratch(target: str) -> None:
    """Mount a new, empty scratch tmpfs (``SCRATCH_SIZE``, ``SCRATCH_INODES``, sticky and world-writable) on
    ``target``: none of a previous one's contents, metadata, inode flags or inode counter."""
    _mount("tmpfs", target, "tmpfs", _MS_NOSUID | _MS_NODEV, _SCRATCH_OPTIONS)


def move_mount(source: str, target: str) -> None:
    """Move the mount on ``source`` to ``target`` (``MS_MOVE``: no unmount, so no wait for an RCU grace period)."""
    _mount(source, target, None, _MS_MOVE)


def detach_mount(path: str) -> None:
    """Unmount the topmost mount on ``path`` lazily (``MNT_DETACH``). The kernel waits for an RCU grace period
    before it returns: microseconds on an idle machine, tens of milliseconds on a saturated one."""
    _check(_libc.umount2(path.encode(), ctypes.c_int(_MNT_DETACH)), f"umount {path}")


def new_network_namespace() -> None:
    """Move this process (the fork server) to a new, empty network namespace (loopback down, no sockets)."""
    unshare(CLONE_NEWNET)


def randomize_pid_counter(counter_fd: int, pid_max: int) -> None:
    """Set the pid namespace's last allocated pid (``ns_last_pid``, open at ``counter_fd``) to a random value, so
    the pids the next run gets say nothing about how many processes earlier runs created."""
    last = 300 + int.from_bytes(os.urandom(4), "little") % max(1, pid_max - 1300)
    os.pwrite(counter_fd, str(last).encode(), 0)


def unshare(flags: int) -> None:
    """``unshare(2)``: move the calling process into new namespaces (``CLONE_NEW*`` flags)."""
    _check(_libc.unshare(ctypes.c_int(flags)), f"unshare({flags:#x})")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encode = lambda text: None if text is None else text.encode()  # noqa: E731
    result = _libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data))
    _check(result, f"mount {source} on {target}")


def _mount_setattr(path: str, recursive: bool, attr_set: int = 0, attr_clr: int = 0) -> None:
    attr = _MountAttr(attr_set, attr_clr, 0, 0)
    flags = _AT_RECURSIVE if recursive else 0
    result = _libc.syscall(
        ctypes.c_long(_SYS_MOUNT_SETATTR),
        ctypes.c_int(_AT_FDCWD),
        path.encode(),
        ctypes.c_uint(flags),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    _check(result, f"mount_setattr {path}")


_python_libc = ctypes.PyDLL(None)  # calls keep the GIL: a plain fork(2) with no Python-level at-fork work
_python_libc.fork.restype = ctypes.c_int


def fork_without_python_hooks() -> int:
    """``fork(2)`` without CPython's at-fork machinery (thread/lock re-initialisation, ``os.register_at_fork``
    hooks): the fork server is single-threaded, so that work only costs the child page faults (about 170 of
    them, ~0.5-1 ms per test). The child must reseed ``random`` itself (``harness.reset_interpreter_state``).
    """
    pid = _python_libc.fork()
    _check(pid, "fork")
    return pid


def _prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0), f"prctl({option})")


def set_child_subreaper() -> None:
    """Orphans of our descendants re-parent to us (not to init), so a double-forked process can still be found."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def set_parent_death_signal() -> None:
    """SIGKILL us when our parent dies (a server never outlives its grader, a child never outlives its server)."""
    _prctl(_PR_SET_PDEATHSIG, 9)


def set_no_new_privs() -> None:
    """execve can never grant privileges again (setuid binaries, file capabilities)."""
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)


def set_dumpable(dumpable: bool) -> None:
    """A non-dumpable process's ``/proc/PID/{mem,environ,fd}`` are closed to same-uid processes without privileges."""
    _prctl(_PR_SET_DUMPABLE, int(dumpable))


def join_new_session_keyring() -> None:
    """A new, empty session keyring (``keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)``): the grader's session keyring,
    inherited through fork and exec, is no longer reachable from here or from the test children."""
    keyctl = ctypes.c_long(seccomp.syscall_number("keyctl"))
    _check(_libc.syscall(keyctl, ctypes.c_int(_KEYCTL_JOIN_SESSION_KEYRING), None), "keyctl(JOIN_SESSION_KEYRING)")


def install_syscall_filter() -> None:
    """The seccomp filter of ``seccomp.py`` on this process and all it starts (needs ``no_new_privs`` first)."""
    seccomp.install(_libc)


def drop_capabilities() -> None:
    """Empty the effective/permitted/inheritable sets (a user-namespace creator holds every capability there)."""
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    capset = ctypes.c_long(seccomp.syscall_number("capset"))
    _check(_libc.syscall(capset, ctypes.byref(header), ctypes.byref(data)), "capset")


class WorkerFilesystem(NamedTuple):
    """What ``setup_worker_filesystem`` achieved: mechanisms available, why others failed, and an open handle on
    the worker pid namespace's ``ns_last_pid`` with its ``pid_max`` (None without a private ``/proc``)."""

    available: dict[str, bool]
    errors: dict[str, str]
    pid_counter: int | None = None
    pid_max: int = 0


class RunLimits(NamedTuple):
    """Per-test resource limits, applied as rlimits in the child before the program runs."""

    cpu_time_s: float
    memory_bytes: int
    output_bytes: int
    processes: int
    open_files: int = 512


def isolate_child(run_uid: int | None, run_dir: str, limits: RunLimits, user_namespace: bool) -> None:
    """Run-layer isolation inside the freshly forked test child (order matters: setuid clears pdeathsig).

    ``run_uid``: the worker's dedicated uid (grader is root) or None (keep ours). The environment is not set
    here: the fork server's own environment already is the child's; neither are ``no_new_privs`` and the seccomp
    filter, which the child inherits from the server.
    """
    os.setsid()
    if run_uid is not None:
        os.setgroups([])
        os.setgid(run_uid)
        os.setuid(run_uid)
    set_parent_death_signal()
    if user_namespace:
        drop_capabilities()
    _apply_rlimits(limits)
    os.chdir(run_dir)


def _apply_rlimits(limits: RunLimits) -> None:
    cpu_soft = max(1, int(limits.cpu_time_s + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_soft, cpu_soft + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.output_bytes, limits.output_bytes))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _, stack_hard = resource.getrlimit(resource.RLIMIT_STACK)
    deep_stack = min(limits.memory_bytes, 1 << 30) if stack_hard == resource.RLIM_INFINITY else stack_hard
    resource.setrlimit(resource.RLIMIT_STACK, (deep_stack, stack_hard))


DISABLE_ENV = "NOUSCODER_SANDBOX_DISABLE"
"""Comma-separated mechanisms to switch off (``DISABLE_NAMES``): simulates a cluster node that forbids them, for
tests, benchmarks and hosts where a mechanism misbehaves."""
DISABLE_NAMES = frozenset(
    {"user_namespace", "namespaces", "root", "seccomp", "session_keyring", "subreaper", "no_new_privs", "memory_cgroup"}
)


DEDICATED_UID_BASE = 1_000_000
"""Root mode: worker uid = base + launcher pid (unique among live servers, above every ordinary account)."""


def dedicated_uid(launcher_pid: int, uid_map: str) -> int | None:
    """The uid the test children of a root-run worker become, or None when the user namespace maps too few.

    ``uid_map`` is ``/proc/self/uid_map`` ("inside outside count" lines; "0 0 4294967295" on a plain host).
    Inside a container that maps fewer ids, the uid comes from the upper half of the largest mapped range
    (below 65534, ``nobody``), still unique per launcher pid within that half.
    """
    ranges = [(int(inside), int(count)) for inside, _, count in (line.split() for line in uid_map.splitlines())]
    preferred = DEDICATED_UID_BASE + launcher_pid
    if any(start <= preferred < start + count for start, count in ranges):
        return preferred
    start, count = max(ranges, key=lambda mapped: mapped[1], default=(0, 0))
    top = min(start + count, 65534) - 1
    half = (top - start) // 2
    if half < 1024:
        return None
    return top - launcher_pid % half


def disabled_mechanisms(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """The names in ``DISABLE_ENV``; a name outside ``DISABLE_NAMES`` is an error (a typo would leave it on)."""
    names = frozenset(name.strip() for name in environ.get(DISABLE_ENV, "").split(",") if name.strip())
    if unknown := names - DISABLE_NAMES:
        raise ValueError(f"{DISABLE_ENV}: unknown mechanism(s) {sorted(unknown)}; valid: {sorted(DISABLE_NAMES)}")
    return names


def enter_worker_namespaces(disabled: frozenset[str]) -> tuple[dict[str, bool], dict[str, str]]:
    """Unshare the worker-layer namespaces in the calling (single-threaded) process; returns (available, errors).

    Root unshares network, mount, ipc and pid namespaces directly; anyone else first creates a user namespace
    that maps only its own uid and gid. The next forked child becomes init of the new pid namespace.
    """
    uid, gid = os.getuid(), os.getgid()
    as_root = uid == 0 and "root" not in disabled
    flags = CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWPID
    errors: dict[str, str] = {}
    if "namespaces" in disabled or (not as_root and "user_namespace" in disabled):
        errors["namespaces"] = f"disabled by {DISABLE_ENV}"
        return {}, errors
    try:
        unshare(flags if as_root else flags | CLONE_NEWUSER)
    except OSError as exc:
        errors["namespaces"] = str(exc)
        return {}, errors
    if not as_root:
        _write_file("/proc/self/setgroups", "deny")
        _write_file("/proc/self/uid_map", f"{uid} {uid} 1")
        _write_file("/proc/self/gid_map", f"{gid} {gid} 1")
    return {"network_namespace": True, "pid_namespace": True, "user_namespace": not as_root}, errors


SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""Host paths visible in the sandbox's root besides the interpreter's own directories."""


def setup_worker_filesystem(work_dir: str, interpreter_paths: list[str]) -> WorkerFilesystem:
    """Give the worker (init of its pid namespace, in its own mount namespace) a minimal read-only root.

    The new root is a tmpfs (mounted on ``<work_dir>/root``) holding read-only bind mounts of ``SYSTEM_PATHS`` and
    the interpreter's directories, a private ``/proc``, a minimal ``/dev`` (``DEVICES``, ``DEVICE_LINKS``) and the
    scratch tmpfs on ``SCRATCH_DIR``, the only writable place. The server ``chroot``s into it: home directories,
    datasets (the hidden tests!), the grader's work directory, the host's ``/dev`` (terminals included) and the
    rest of the host are simply not there. The ``/proc`` is read-only too; only the pid counter is kept open for
    writing (``randomize_pid_counter``).
    """
    new_root = os.path.join(work_dir, "root")
    try:
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
        _mount("tmpfs", new_root, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=755")
        _populate_root(new_root, interpreter_paths)
    except OSError as exc:
        return WorkerFilesystem({}, {"mount_namespace": str(exc), "private_proc": "no minimal root to mount it in"})
    available, errors = {"private_proc": True}, {}
    pid_counter, pid_max = None, 0
    try:
        pid_counter, pid_max = _open_pid_counter(new_root + "/proc")
    except OSError as exc:  # a kernel without checkpoint/restore support has no ns_last_pid
        errors["pid_counter"] = str(exc)
    try:
        _mount("proc", new_root + "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    except OSError as exc:
        available["private_proc"], errors["private_proc"] = False, str(exc)
    try:
        _mount_setattr(new_root, recursive=True, attr_set=_MOUNT_ATTR_RDONLY)
        mount_scratch(new_root + SCRATCH_DIR)
        os.chroot(new_root)
        os.chdir("/")
    except OSError as exc:
        return WorkerFilesystem(available, errors | {"mount_namespace": str(exc)}, pid_counter, pid_max)
    return WorkerFilesystem(available | {"mount_namespace": True}, errors, pid_counter, pid_max)


def _open_pid_counter(mount_point: str) -> tuple[int, int]:
    """(writable descriptor of this pid namespace's ``ns_last_pid``, its ``pid_max``), through a ``/proc`` mounted on
    ``mount_point`` and detached at once: the descriptor keeps working, and the sandbox's own ``/proc`` (mounted
    next) can be read-only."""
    _mount("proc", mount_point, "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    try:
        counter = os.open(mount_point + "/sys/kernel/ns_last_pid", os.O_WRONLY | os.O_CLOEXEC)
        with open(mount_point + "/sys/kernel/pid_max") as handle:
            pid_max = int(handle.read())
    finally:
        detach_mount(mount_point)
    return counter, pid_max


def _populate_root(new_root: str, interpreter_paths: list[str]) -> None:
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            os.symlink(os.readlink(path), new_root + path)
        elif os.path.isdir(path):
            _bind_into(new_root, path, recursive=True)
    bound = [path for path in SYSTEM_PATHS if os.path.isdir(path)]
    for path in sorted(set(interpreter_paths), key=len):
        if _is_within(path, SCRATCH_DIR):
            raise OSError(
                errno.EINVAL,
                f"the interpreter's directory {path} lies under {SCRATCH_DIR}, which the "
                "sandbox replaces by its scratch tmpfs: install the environment elsewhere",
            )
        if os.path.isdir(path) and not any(_is_within(path, outer) for outer in bound):
            _bind_into(new_root, path, recursive=True)
            bound.append(path)
    for directory in ("/proc", SCRATCH_DIR):
        os.makedirs(new_root + directory, mode=0o755, exist_ok=True)
    _populate_dev(new_root + "/dev")


def _populate_dev(dev: str) -> None:
    """The minimal ``/dev``: the harmless devices, bound one by one, and ``DEVICE_LINKS``."""
    os.mkdir(dev, 0o755)
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            os.close(os.open(f"{dev}/{name}", os.O_CREAT | os.O_WRONLY, 0o600))  # mount point of the bind
            _mount(f"/dev/{name}", f"{dev}/{name}", None, _MS_BIND)
    for name, target in DEVICE_LINKS.items():
        os.symlink(target, f"{dev}/{name}")


def _bind_into(new_root: str, path: str, recursive: bool) -> None:
    target = new_root + path
    os.makedirs(target, mode=0o755, exist_ok=True)
    _mount(path, target, None, _MS_BIND | (_MS_REC if recursive else 0))


def _is_within(path: str, outer: str) -> bool:
    return path == outer or path.startswith(outer.rstrip("/") + "/")


def interpreter_paths() -> list[str]:
    """The interpreter's directories (prefixes, ``sys.path``, the executable's), as given and resolved.

    Not the checkout this package runs from (on ``sys.path`` for the fork server, which imported everything it
    needs before entering the sandbox): a repository may hold datasets and their hidden tests.
    """
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable), *sys.path]
    paths = {os.path.abspath(path) for path in candidates if path}
    paths |= {os.path.realpath(path) for path in paths}
    checkout = {package_root(), os.path.realpath(package_root())}
    return sorted(paths - checkout)


def package_root() -> str:
    """The checkout (or site-packages) directory holding the ``reward_fns`` package."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _write_file(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def stale_names(directory: str, prefix: str) -> list[str]:
    """Entries of ``directory`` named ``<prefix><pid>-...`` whose process ``pid`` no longer exists (left by a grader
    or launcher that was killed before it could remove them)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    owners = {name: name[len(prefix) :].split("-", 1)[0] for name in names if name.startswith(prefix)}
    return [name for name, owner in owners.items() if owner.isdigit() and not _process_exists(int(owner))]


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

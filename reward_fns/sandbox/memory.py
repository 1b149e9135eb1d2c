"""The memory a run holds: charged by a memory cgroup where the node gives one, else counted from ``/proc``.

Memory outside every rlimit: RLIMIT_AS bounds each process's address space, not the kernel memory a process makes
the kernel hold for it -- page tables (a program mapping one page per gigabyte made the host's ``PageTables`` grow
by ~1 GB under a 256 MB limit: 8 KB of tables per 4 KB mapping), kernel stacks, the kernel's record of each
mapping, epoll watches, file locks --, nor what several processes hold together, nor pipe and socket buffers. Two
ways to bound it, chosen when a fork server starts (``RunCgroup.create``; the start-up report names the one in
force):

* **memory cgroup** (exact, the kernel's own): every run of a worker lives in one cgroup of its own, whose limit is
  the memory limit (plus what the run's output files can hold, ``RunCgroup.set_limit``). The kernel charges it
  the processes' pages, page tables, kernel stacks, mappings, epoll and lock objects, pipe buffers and tmpfs files,
  and kills the run at the limit (``oom_kill`` in its events): ``memory_limit``. It does not charge Unix socket
  buffers, which the server still counts (``KernelBuffers``). A cgroup v2 hierarchy needs a directory whose
  children get the memory controller (``memory`` in its ``cgroup.subtree_control``), writable by the grader's
  user together with the ``cgroup.procs`` of a common ancestor of it and the grader's own cgroup (cgroup v2 moves a
  process only so): the nearest such ancestor of the grader's cgroup is found, or ``NOUSCODER_SANDBOX_CGROUP``
  names one (root on a systemd host: the grader's slice; a plain user: a unit with ``Delegate=yes``, e.g.
  ``systemd-run --user --scope -p Delegate=yes``). A cgroup v1 memory hierarchy works too, where the grader may
  write it (root).
* **counted** (every ``MEMORY_SAMPLE_S``, ``run_memory``): the processes' proportional set size, their
  page tables (``VmPTE``), kernel stacks (16 KB per thread) and mappings (``MAPPING_BYTES`` each), every pipe and
  Unix socket at its buffer capacity, every epoll watch and, with a private ``/proc``, every file lock of the run.
  Cheap first: ``/proc/PID/status`` alone bounds the total from above (resident size, mappings at most
  ``VmSize``/page); only a bound over the limit reads ``smaps_rollup`` and the mapping lists. A sample: a run can
  pass the limit by what it allocates within one interval. What neither count sees is refused by the seccomp filter
  (inotify, SysV and POSIX shared memory, memfd, io_uring) or bounded by rlimits (threads by RLIMIT_NPROC, files
  by RLIMIT_NOFILE).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import socket
import stat
import time
from collections.abc import Callable, Mapping
from typing import NamedTuple

from reward_fns.sandbox.isolation import stale_names

_MB = 1 << 20
MEMORY_SAMPLE_S = 0.05
"""How often the fork server counts the memory a run holds (``run_memory``, ``cgroup_memory``); less often when counting takes longer than a
tenth of this (a run with thousands of descriptors), so that the server spends at most a tenth of a core on it, but
at least every ``MEMORY_SAMPLE_MAX_S``."""
MEMORY_SAMPLE_MAX_S = 1.0
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
KERNEL_STACK_BYTES = 16 << 10
"""A thread's kernel stack (``THREAD_SIZE`` on x86_64 and arm64)."""
MAPPING_BYTES = 256
"""What the kernel holds per mapping: a ``vm_area_struct`` (192 bytes on Linux 6.x, ``/proc/slabinfo``) and its
share of the maple tree and anon_vma chains."""
EPOLL_WATCH_BYTES = 192
"""An epoll watch: an ``epitem`` (128 bytes) and its wait-queue entry."""
LOCK_BYTES = 192
"""A POSIX or flock lock (``file_lock_cache``: 192 bytes)."""


class KernelBuffers(NamedTuple):
    """What the kernel buffers of a run can hold, per object: the seccomp filter keeps every pipe at its default
    capacity and every socket a Unix stream socket with the default send buffer (``seccomp.py``)."""

    count_namespace_sockets: bool
    """The worker has its own network namespace: every Unix socket in it is the run's (``/proc/net/unix`` lists
    them all, also those only in flight between sockets and connections not yet accepted); without one, the
    sockets in the run's descriptor tables are counted."""
    count_locks: bool = False
    """``/proc/locks`` shows only the locks of the worker's pid namespace (a private ``/proc``): count them."""
    pipe_bytes: int = 16 * PAGE_BYTES
    """A pipe holds at most 16 pages (its default capacity)."""
    socket_bytes: int = 3 * 212_992 // 2
    """A Unix stream socket holds at most 1.5 send buffers (the kernel lets the last write pass the buffer by up to
    half of it): what it sent and its live peer has not read yet, or, once the peer has closed (which frees what
    this one sent it), what that peer left in this one's queue; the default send buffer is
    ``net.core.wmem_default`` (212,992 bytes unless set otherwise)."""
    max_mappings: int = 65_530
    """``vm.max_map_count``: the most mappings one process can have."""


def kernel_buffers(network_namespace: bool, private_proc: bool) -> KernelBuffers:
    """The sizes of this host (``net.core.wmem_default``, ``vm.max_map_count``)."""
    return KernelBuffers(
        network_namespace,
        count_locks=private_proc,
        socket_bytes=3 * _sysctl("net/core/wmem_default", 212_992) // 2,
        max_mappings=_sysctl("vm/max_map_count", 65_530),
    )


def _sysctl(name: str, default: int) -> int:
    try:
        with open(f"/proc/sys/{name}") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return default


class MemoryHeld(NamedTuple):
    total: int
    processes: int
    kernel: int
    """Page tables, kernel stacks, mappings, epoll watches and locks (counted), or 0 when the cgroup charged them."""
    sockets: int
    pipes: int
    cgroup: bool = False

    def describe(self) -> str:
        if self.cgroup:
            held = f"its memory cgroup (processes, page tables, kernel stacks, pipes, tmpfs) held {self.processes / _MB:.0f} MB"
        else:
            held = (
                f"{self.processes / _MB:.0f} MB in its processes, {self.kernel / _MB:.0f} MB of page tables, kernel"
                f" stacks, mappings, epoll watches and locks, {self.pipes} pipes"
            )
        return (
            f"the run's processes and kernel memory together held {self.total / _MB:.0f} MB ({held},"
            f" {self.sockets} Unix sockets at their buffer capacity)"
        )


class _Status(NamedTuple):
    resident: int
    page_tables: int
    size: int
    threads: int


def _status(process: int) -> _Status:
    """Resident size, page tables, address-space size (bytes) and threads from ``/proc/PID/status``."""
    fields = {}
    with open(f"/proc/{process}/status", "rb") as handle:
        for line in handle:
            if line.startswith((b"VmRSS:", b"VmPTE:", b"VmSize:", b"Threads:")):
                name, value = line.split(b":", 1)
                fields[name] = int(value.split()[0])
    return _Status(
        fields.get(b"VmRSS", 0) * 1024,
        fields.get(b"VmPTE", 0) * 1024,
        fields.get(b"VmSize", 0) * 1024,
        fields.get(b"Threads", 1),
    )


def run_memory(buffers: KernelBuffers, limit: int) -> MemoryHeld:
    """What the processes below this one (in the fork server: the run's) hold together, counted (module docstring).

    Exact only where it matters: first a bound from what is cheap to read (``/proc/PID/status``: resident size, page
    tables, threads, address-space size; the descriptor links), which returns when it is within ``limit``; then the
    proportional set size of every process (a page shared by k processes counts 1/k in each), and the bounds of the
    largest estimates -- mappings (at most one per page of address space) and epoll watches (at most every epoll
    descriptor watching every descriptor) -- replaced by their counts (``/proc/PID/maps``, ``fdinfo``) until the
    total is within the limit or all are counted."""
    processes = descendants()
    pipes: set[tuple[int, int]] = set()
    sockets: set[tuple[int, int]] = set()
    epolls = {process: _add_buffer_files(process, pipes, sockets) for process in processes}
    socket_count = namespace_sockets() if buffers.count_namespace_sockets else len(sockets)
    in_buffers = len(pipes) * buffers.pipe_bytes + socket_count * buffers.socket_bytes
    if buffers.count_locks:
        in_buffers += _lock_count() * LOCK_BYTES
    statuses = {}
    for process in processes:
        with contextlib.suppress(OSError, ValueError):
            statuses[process] = _status(process)
    kernel = sum(status.page_tables + status.threads * KERNEL_STACK_BYTES for status in statuses.values())
    estimates: list[tuple[int, Callable[[], int]]] = []  # (bound, the exact count) of what is costly to count
    for process, status in statuses.items():
        mappings = min(status.size // PAGE_BYTES, buffers.max_mappings)
        estimates.append((mappings * MAPPING_BYTES, functools.partial(_mapping_bytes, process)))
        epoll_fds, fd_count = epolls.get(process, ([], 0))
        if epoll_fds:
            bound = len(epoll_fds) * fd_count * EPOLL_WATCH_BYTES
            estimates.append((bound, functools.partial(_watch_bytes, process, epoll_fds)))
    kernel += sum(bound for bound, _ in estimates)
    resident = sum(status.resident for status in statuses.values())
    if resident + kernel + in_buffers <= limit:
        return MemoryHeld(resident + kernel + in_buffers, resident, kernel, socket_count, len(pipes))
    proportional = sum(_proportional_set_size(process) for process in statuses)
    for bound, count in sorted(estimates, key=lambda estimate: estimate[0], reverse=True):
        if proportional + kernel + in_buffers <= limit:
            break
        kernel += count() - bound
    return MemoryHeld(proportional + kernel + in_buffers, proportional, kernel, socket_count, len(pipes))


def cgroup_memory(cgroup: RunCgroup, buffers: KernelBuffers, outputs: list[int]) -> MemoryHeld:
    """What a run in ``cgroup`` holds: what the kernel charged the cgroup (less the run's output files) and its Unix
    sockets at their buffer capacity, which the kernel does not charge."""
    if buffers.count_namespace_sockets:
        sockets = namespace_sockets()
    else:
        found: set[tuple[int, int]] = set()
        for process in descendants():
            _add_buffer_files(process, set(), found)
        sockets = len(found)
    charged = cgroup.held(outputs)
    return MemoryHeld(charged + sockets * buffers.socket_bytes, charged, 0, sockets, 0, cgroup=True)


def _proportional_set_size(process: int) -> int:
    with contextlib.suppress(OSError, StopIteration), open(f"/proc/{process}/smaps_rollup") as rollup:
        return int(next(line for line in rollup if line.startswith("Pss:")).split()[1]) * 1024
    return 0


def _mapping_bytes(process: int) -> int:
    """``MAPPING_BYTES`` for each mapping of ``process`` (a line each in its ``maps``)."""
    count = 0
    with contextlib.suppress(OSError), open(f"/proc/{process}/maps", "rb") as maps:
        while chunk := maps.read(1 << 20):
            count += chunk.count(b"\n")
    return count * MAPPING_BYTES


def _lock_count() -> int:
    """Locks of the worker's pid namespace (and OFD locks, which ``/proc/locks`` shows in every namespace)."""
    with contextlib.suppress(OSError), open("/proc/locks", "rb") as listing:
        return listing.read().count(b"\n")
    return 0


def _add_buffer_files(
    process: int, pipes: set[tuple[int, int]], sockets: set[tuple[int, int]]
) -> tuple[list[str], int]:
    """Add the pipes (FIFOs too) and sockets open in ``process`` to the sets, as (device, inode); returns its epoll
    descriptors and how many descriptors it has. The descriptors' link texts name pipes, sockets and epoll
    instances; only a path (which could be a FIFO) costs a ``stat``."""
    directory = f"/proc/{process}/fd"
    epoll_fds: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return epoll_fds, 0
    for name in names:
        with contextlib.suppress(OSError):
            target = os.readlink(f"{directory}/{name}")
            if target.startswith("pipe:["):
                pipes.add((0, int(target[6:-1])))
            elif target.startswith("socket:["):
                sockets.add((0, int(target[8:-1])))
            elif target == "anon_inode:[eventpoll]":
                epoll_fds.append(name)
            elif target.startswith("/") and not target.startswith(_NOT_FIFOS):
                info = os.stat(f"{directory}/{name}")
                if stat.S_ISFIFO(info.st_mode):
                    pipes.add((info.st_dev, info.st_ino))
    return epoll_fds, len(names)


def _watch_bytes(process: int, epoll_fds: list[str]) -> int:
    """``EPOLL_WATCH_BYTES`` for each watch of ``process``'s epoll descriptors (a ``tfd:`` line each in its
    ``fdinfo``)."""
    watches = 0
    for name in epoll_fds:
        with contextlib.suppress(OSError), open(f"/proc/{process}/fdinfo/{name}", "rb") as info:
            watches += info.read().count(b"\ntfd:")
    return watches * EPOLL_WATCH_BYTES


_NOT_FIFOS = ("/memfd:", "/dev/", "/proc/", "/usr/", "/lib", "/etc/")
"""Link texts of descriptors that cannot be FIFOs in the sandbox (the test's files, devices, the read-only root)."""


def namespace_sockets() -> int:
    """How many Unix sockets the network namespace of this process holds."""
    with open("/proc/net/unix", "rb") as listing:
        return listing.read().count(b"\n") - 1


def descendants() -> list[int]:
    """Every process below this one: in the fork server, the run's (the server has no other children; orphans of a
    run are adopted by the server, init of their pid namespace or the subreaper)."""
    found, frontier = [], children_of("self")
    while frontier:
        found += frontier
        frontier = [child for parent in frontier for child in children_of(parent)]
    return found


def children_of(pid: int | str) -> list[int]:
    children: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children") as handle:
                children.extend(int(child) for child in handle.read().split())
    return children


# ---- the memory cgroup ----

CGROUP_ENV = "NOUSCODER_SANDBOX_CGROUP"
"""A cgroup directory (v2, or a v1 memory hierarchy's) in which each fork server makes its run cgroup; by default the
nearest usable ancestor of the grader's own cgroup (module docstring)."""
_CGROUP_PREFIX = "nouscoder-run-"
CGROUP_NEEDS = (
    "a cgroup v2 directory whose children get the memory controller ('memory' in its cgroup.subtree_control), "
    "writable by the grader's user with the cgroup.procs of an ancestor shared with the grader's own cgroup: found "
    f"among the grader's cgroup's ancestors or named by {CGROUP_ENV} (root: the grader's slice; a plain user: a "
    "unit with Delegate=yes, e.g. systemd-run --user --scope -p Delegate=yes); or a cgroup v1 memory hierarchy "
    "the grader may write (root)"
)
"""What the node must provide for the memory cgroup (printed by the start-up report when it is missing)."""
CGROUP_CHARGES = (
    "processes, page tables, kernel stacks, mappings, pipes and tmpfs charged together at the memory limit; Unix "
    "socket buffers counted every sample"
)
COUNTED = (
    "processes' proportional set size, page tables, kernel stacks, mappings, pipe and socket buffers, epoll watches, "
    "locks; a run can pass the limit by what it allocates between two counts"
)


class _Files(NamedTuple):
    """A cgroup version's file names."""

    current: str
    events: str
    limit: str
    swap_limit: str
    set_up: tuple[tuple[str, str], ...]


_V2 = _Files("memory.current", "memory.events", "memory.max", "", (("memory.swap.max", "0"), ("memory.oom.group", "1")))
"""cgroup v2 (docs.kernel.org, admin-guide/cgroup-v2, "Memory Interface Files"): no swap, and an OOM kill takes the
whole run."""
_V1 = _Files("memory.usage_in_bytes", "memory.oom_control", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes", ())
"""cgroup v1 (admin-guide/cgroup-v1/memory): memory + swap limited to the same value, so no swap either."""


def cgroup_candidates(mountinfo: str, own_cgroups: str) -> list[tuple[int, str]]:
    """(version, directory) where a run cgroup could be made, best first, from ``/proc/self/mountinfo`` and
    ``/proc/self/cgroup`` (proc(5)): the cgroup v2 mount's directories from the grader's own cgroup up to the
    mount's root, then its own cgroup in a v1 memory hierarchy."""
    own_v2 = own_v1 = None
    for line in own_cgroups.splitlines():
        hierarchy, controllers, path = line.split(":", 2)
        if hierarchy == "0" and not controllers:
            own_v2 = path
        elif "memory" in controllers.split(","):
            own_v1 = path
    candidates: list[tuple[int, str]] = []
    for line in mountinfo.splitlines():
        fields = line.split()
        separator = fields.index("-")
        root, mount_point = fields[3], fields[4]
        fstype, super_options = fields[separator + 1], fields[separator + 3].split(",")
        if fstype == "cgroup2" and own_v2 is not None and _within(own_v2, root):
            path = own_v2[len(root.rstrip("/")) :]
            while True:
                candidates.insert(sum(version == 2 for version, _ in candidates), (2, mount_point + path.rstrip("/")))
                if path in ("", "/"):
                    break
                path = path.rsplit("/", 1)[0]
        elif fstype == "cgroup" and "memory" in super_options and own_v1 is not None and _within(own_v1, root):
            candidates.append((1, mount_point + own_v1[len(root.rstrip("/")) :].rstrip("/")))
    return candidates


def _within(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def _usable(version: int, directory: str) -> str:
    """Why ``directory`` cannot hold run cgroups, or ""."""
    if version == 2:
        try:
            with open(os.path.join(directory, "cgroup.subtree_control")) as handle:
                controllers = handle.read().split()
        except OSError as exc:
            return f"{directory}: {exc.strerror}"
        if "memory" not in controllers:
            return f"{directory}: no memory controller for its children (cgroup.subtree_control: {controllers})"
    elif not os.path.exists(os.path.join(directory, _V1.limit)):
        return f"{directory}: not a cgroup v1 memory hierarchy"
    if not (os.access(directory, os.W_OK) and os.access(os.path.join(directory, "cgroup.procs"), os.W_OK)):
        return f"{directory}: not writable by uid {os.getuid()}"
    return ""


class RunCgroup:
    """The run cgroup of one fork server, made by its launcher before it enters the worker's namespaces; the server
    keeps its files open (``/sys/fs/cgroup`` is not in the sandbox's root), each test child moves itself in."""

    def __init__(self, version: int, path: str) -> None:
        self.version = version
        self.path = path
        self.files = _V2 if version == 2 else _V1
        for name, value in self.files.set_up:
            with contextlib.suppress(FileNotFoundError):  # no swap accounting: nothing to limit
                _write(os.path.join(path, name), value)
        self._procs = self._open("cgroup.procs", os.O_WRONLY)
        self._current = self._open(self.files.current, os.O_RDONLY)
        self._events = self._open(self.files.events, os.O_RDONLY)
        self._limit = self._open(self.files.limit, os.O_WRONLY)
        swap = os.path.join(path, self.files.swap_limit)
        self._swap_limit = (
            self._open(self.files.swap_limit, os.O_WRONLY) if self.files.swap_limit and os.path.exists(swap) else -1
        )
        self.limit_bytes: int | None = None
        """The limit last written; None: the cgroup's own (unlimited)."""
        self.kills = self.oom_kills()

    def _open(self, name: str, flags: int) -> int:
        return os.open(os.path.join(self.path, name), flags | os.O_CLOEXEC)

    @classmethod
    def create(cls, environ: Mapping[str, str]) -> tuple[RunCgroup | None, str]:
        """A new run cgroup (version, path) in ``CGROUP_ENV`` or the best usable candidate; (None, why not)."""
        try:
            with open("/proc/self/mountinfo") as mounts, open("/proc/self/cgroup") as own:
                candidates = cgroup_candidates(mounts.read(), own.read())
        except OSError as exc:
            return None, f"cannot read this process's cgroups: {exc}"
        if explicit := environ.get(CGROUP_ENV):
            candidates = [(2 if os.path.exists(os.path.join(explicit, "cgroup.subtree_control")) else 1, explicit)]
        reasons = []
        for version, directory in candidates:
            if reason := _usable(version, directory):
                reasons.append(reason)
                continue
            _remove_stale(directory)
            path = os.path.join(
                directory, f"{_CGROUP_PREFIX}{socket.gethostname()}-{os.getpid()}-{os.urandom(4).hex()}"
            )
            try:
                os.mkdir(path, 0o755)
                cgroup = cls(version, path)
            except OSError as exc:
                remove_cgroup(path)
                reasons.append(f"{directory}: {exc}")
                continue
            try:
                cgroup.try_join()
            except OSError as exc:
                cgroup.close()
                remove_cgroup(path)
                reasons.append(str(exc))
                continue
            return cgroup, ""
        return None, "; ".join(reasons) or "no cgroup v2 mount or cgroup v1 memory hierarchy holds this process"

    def close(self) -> None:
        for fd in (self._procs, self._current, self._events, self._limit, self._swap_limit):
            if fd >= 0:
                os.close(fd)

    def join(self) -> None:
        """Move the calling process (a test child, before it runs anything) into the run cgroup."""
        os.write(self._procs, b"0")

    def try_join(self) -> None:
        """Move a throw-away child in, as a test child will: raises OSError where the kernel refuses (cgroup v2 moves
        a process only where the mover may write the ``cgroup.procs`` of both cgroups' common ancestor)."""
        pid = os.fork()
        if pid == 0:
            try:
                self.join()
                os._exit(0)
            except OSError as exc:
                os._exit(exc.errno or 1)
        _, status = os.waitpid(pid, 0)
        if code := os.waitstatus_to_exitcode(status):
            raise OSError(code, f"a process cannot be moved into {self.path}: {os.strerror(code)}")

    def set_limit(self, memory_bytes: int, output_bytes: int) -> None:
        """The kernel's limit: the memory limit, plus what the run's three output files (``memfd`` pages, charged to
        the run that writes them) can hold; ``held`` takes those pages out again, so the limit a run gets is its own."""
        limit = memory_bytes + 3 * output_bytes
        if limit == self.limit_bytes:
            return
        lower = self.limit_bytes is None or limit < self.limit_bytes
        order = [self._limit, self._swap_limit] if lower else [self._swap_limit, self._limit]
        for fd in order:  # cgroup v1 wants memory + swap >= memory at every step
            if fd >= 0:
                os.pwrite(fd, str(limit).encode(), 0)
        self.limit_bytes = limit

    def oom_kills(self) -> int:
        """How many processes the kernel has killed in this cgroup at its limit (``oom_kill`` of its events)."""
        for line in os.pread(self._events, 4096, 0).splitlines():
            if line.startswith(b"oom_kill "):
                return int(line.split()[1])
        return 0

    def held(self, output_fds: list[int]) -> int:
        """Bytes charged to the cgroup, less the pages of the run's output files."""
        current = int(os.pread(self._current, 64, 0))
        return max(0, current - sum(os.fstat(fd).st_blocks * 512 for fd in output_fds))

    def new_kills(self) -> int:
        """Kills at the limit since the last call (0 in a run that stayed under it)."""
        kills = self.oom_kills()
        new, self.kills = kills - self.kills, kills
        return new


def remove_cgroup(path: str) -> None:
    """Remove a run cgroup once its last process is gone (``rmdir`` fails with EBUSY until the kernel has released
    them: retried for up to a second)."""
    for _ in range(100):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                return
            time.sleep(0.01)


def _remove_stale(directory: str) -> None:
    """Remove run cgroups of this host whose launcher is gone (a grader killed before it could remove them)."""
    for name in stale_names(directory, f"{_CGROUP_PREFIX}{socket.gethostname()}-"):
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(directory, name))


def _write(path: str, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)

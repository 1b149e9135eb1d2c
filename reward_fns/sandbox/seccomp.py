"""The fork server's seccomp filter: system calls no solution needs are refused, kernel-wide.

Installed once in the fork server after its set-up (``install``); every test child inherits it, so it costs
nothing per test (the kernel caches the verdict of every system call that does not depend on its arguments).
It closes what namespaces and rlimits leave open (threat model: ``reward_fns/README.md``):

* memory held outside RLIMIT_AS -- ``memfd_create``/``memfd_secret``, SysV shared memory and message queues,
  POSIX message queues -- fails with ENOMEM, so the program's ``MemoryError``/``[Errno 12]`` is graded
  ``memory_limit``;
* kernel buffers bounded so the server can count them (``memory.run_memory``): sockets are Unix stream sockets
  only (another family fails with EAFNOSUPPORT -- there is no network anyway, and the counters of other protocols
  are gone with them --, datagram and seqpacket types with ESOCKTNOSUPPORT: a datagram queue collects from any
  number of senders), their buffer sizes stay the default (``SO_SNDBUF``/``SO_RCVBUF`` and the ``FORCE``
  variants: EPERM), pipes keep their default capacity (``F_SETPIPE_SZ``: EPERM), and no pipe or socket can hold
  references to pages it does not count (``splice``, ``vmsplice``, ``sendfile``: EPERM; ``shutil`` falls back
  to plain copies);
* channels between tests that outlive a process -- the kernel keyrings (``keyctl``, ``add_key``,
  ``request_key``: also the grader's session keyring), SysV semaphores -- fail with EPERM;
* reaching other processes' memory or descriptors (``ptrace``, ``process_vm_readv/writev``, ``pidfd_getfd``,
  ``process_madvise``, ``kcmp``), kernel attack surface (``bpf``, ``perf_event_open``, ``userfaultfd``,
  ``io_uring_*`` (whose operations bypass seccomp), ``fanotify_init``, ``syslog``), kernel memory no count sees
  (``inotify_init``/``inotify_init1``: watches and queued events), and changing the sandbox itself (``mount`` and
  the new mount API, ``umount2``, ``pivot_root``, ``chroot``, new namespaces through ``unshare``/``clone``/
  ``setns``) fail with EPERM;
* changing another process's limits, priority, scheduling or memory placement: ``prlimit64``, ``sched_setparam``,
  ``sched_setscheduler``, ``sched_setaffinity``, ``sched_setattr``, ``migrate_pages`` and ``move_pages`` only on
  pid 0 (the caller), ``setpriority`` and ``ioprio_set`` only on the caller or its process group (who 0): EPERM
  otherwise. Without root the program has the fork server's uid (pid 1 of its namespace), so ``prlimit(1, ...)``
  used to lower the limits every later test inherits, or its priority;
* ``clone3`` fails with ENOSYS (its flags sit behind a pointer a filter cannot read): glibc then falls back to
  ``clone``, whose flags are checked;
* another system-call ABI (i386 ``int 0x80``, x32) is refused as a whole.

The only namespace operation let through is the fork server's own, between completions, with exactly its
argument: ``unshare(CLONE_NEWNET)`` (a new network namespace); a program calling it fails anyway, for want of the
capability (it has none, in any user namespace, and cannot make one). ``setns`` is refused outright; mounts are
renewed by the launcher, outside the filter.
The program is classic BPF written here (``struct sock_filter``, ``linux/filter.h``), so no library is needed.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

# struct seccomp_data (linux/seccomp.h): int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
_NR_OFFSET, _ARCH_OFFSET = 0, 4
_ARGUMENT_OFFSETS = (16, 24, 32, 40, 48, 56)  # the low 32 bits of each (little-endian)
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_JSET_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_BPF_ALU_AND_K, _BPF_JA = 0x54, 0x05
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_X32_SYSCALL_BIT = 0x40000000

CLONE_NEWNET = 0x40000000
_CLONE_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | CLONE_NEWNET
"""CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET."""
_AF_UNIX, _SOCK_STREAM, _SOCK_TYPE_MASK = 1, 1, 0xF
_F_SETPIPE_SZ = 1031
_SO_SNDBUF, _SO_RCVBUF, _SO_SNDBUFFORCE, _SO_RCVBUFFORCE = 7, 8, 32, 33
_PRIO_PROCESS, _PRIO_PGRP = 0, 1  # PRIO_USER (2) reaches every process of the uid: the fork server too
_IOPRIO_WHO_PROCESS, _IOPRIO_WHO_PGRP = 1, 2  # IOPRIO_WHO_USER (3): likewise

_UNIFIED_NUMBERS = {
    # System calls added since Linux 5.1 have one number on every architecture (include/uapi/asm-generic/unistd.h).
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "clone3": 435,
    "pidfd_getfd": 438,
    "process_madvise": 440,
    "mount_setattr": 442,
    "memfd_secret": 447,
}

_ARCHES = {
    # machine: (AUDIT_ARCH_*, numbers of the system calls the sandbox filters or makes itself;
    # arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h)
    "x86_64": (
        0xC000003E,
        {
            **_UNIFIED_NUMBERS,
            "memfd_create": 319,
            "socket": 41,
            "socketpair": 53,
            "setsockopt": 54,
            "fcntl": 72,
            "sendfile": 40,
            "splice": 275,
            "vmsplice": 278,
            "shmget": 29,
            "msgget": 68,
            "mq_open": 240,
            "semget": 64,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "kcmp": 312,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "fanotify_init": 300,
            "syslog": 103,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "chroot": 161,
            "clone": 56,
            "unshare": 272,
            "setns": 308,
            "capset": 126,
            "inotify_init": 253,
            "inotify_init1": 294,
            "prlimit64": 302,
            "setpriority": 141,
            "sched_setparam": 142,
            "sched_setscheduler": 144,
            "sched_setaffinity": 203,
            "sched_setattr": 314,
            "ioprio_set": 251,
            "migrate_pages": 256,
            "move_pages": 279,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            **_UNIFIED_NUMBERS,
            "memfd_create": 279,
            "socket": 198,
            "socketpair": 199,
            "setsockopt": 208,
            "fcntl": 25,
            "sendfile": 71,
            "splice": 76,
            "vmsplice": 75,
            "shmget": 194,
            "msgget": 186,
            "mq_open": 180,
            "semget": 190,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "kcmp": 272,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "fanotify_init": 262,
            "syslog": 116,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "chroot": 51,
            "clone": 220,
            "unshare": 97,
            "setns": 268,
            "capset": 91,
            "inotify_init1": 26,
            "prlimit64": 261,
            "setpriority": 140,
            "sched_setparam": 118,
            "sched_setscheduler": 119,
            "sched_setaffinity": 122,
            "sched_setattr": 274,
            "ioprio_set": 30,
            "migrate_pages": 238,
            "move_pages": 239,
        },
    ),
}

REFUSED: dict[str, int] = {
    **dict.fromkeys(("memfd_create", "memfd_secret", "shmget", "msgget", "mq_open"), errno.ENOMEM),
    **dict.fromkeys(
        (
            "semget",
            "keyctl",
            "add_key",
            "request_key",
            "ptrace",
            "process_vm_readv",
            "process_vm_writev",
            "pidfd_getfd",
            "process_madvise",
            "kcmp",
            "bpf",
            "perf_event_open",
            "userfaultfd",
            "io_uring_setup",
            "io_uring_enter",
            "io_uring_register",
            "fanotify_init",
            "syslog",
            "mount",
            "umount2",
            "setns",
            "sendfile",
            "splice",
            "vmsplice",
            "pivot_root",
            "chroot",
            "open_tree",
            "move_mount",
            "fsopen",
            "fsconfig",
            "fsmount",
            "fspick",
            "mount_setattr",
            "inotify_init",
            "inotify_init1",
        ),
        errno.EPERM,
    ),
    "clone3": errno.ENOSYS,
}
"""System calls refused outright, with the errno the program sees (a name an architecture does not have, such as
``inotify_init`` on aarch64, is skipped there)."""

ArgumentCheck = tuple[int, int | None, frozenset[int], bool, int]
"""(argument index, mask or None, values, whether the values are the only ones allowed, errno when refused)."""


def _zero(argument: int) -> ArgumentCheck:
    """Argument ``argument`` (a pid, or the ``who`` of a ``which``/``who`` pair) must be 0: the caller itself (its
    process group with ``PRIO_PGRP``/``IOPRIO_WHO_PGRP``). A filter cannot compare with the caller's own pid, and
    ``setrlimit``, ``nice``, ``os.sched_setaffinity(0, ...)`` all pass 0."""
    return (argument, None, frozenset({0}), True, errno.EPERM)


ARGUMENT_RULES: dict[str, tuple[ArgumentCheck, ...]] = {
    "socket": (
        (0, None, frozenset({_AF_UNIX}), True, errno.EAFNOSUPPORT),
        (1, _SOCK_TYPE_MASK, frozenset({_SOCK_STREAM}), True, errno.ESOCKTNOSUPPORT),
    ),
    "socketpair": (
        (0, None, frozenset({_AF_UNIX}), True, errno.EAFNOSUPPORT),
        (1, _SOCK_TYPE_MASK, frozenset({_SOCK_STREAM}), True, errno.ESOCKTNOSUPPORT),
    ),
    "setsockopt": (
        (2, None, frozenset({_SO_SNDBUF, _SO_RCVBUF, _SO_SNDBUFFORCE, _SO_RCVBUFFORCE}), False, errno.EPERM),
    ),
    "fcntl": ((1, None, frozenset({_F_SETPIPE_SZ}), False, errno.EPERM),),
    "clone": ((0, _CLONE_NAMESPACE_FLAGS, frozenset({0}), True, errno.EPERM),),
    "unshare": ((0, None, frozenset({CLONE_NEWNET}), True, errno.EPERM),),
    **dict.fromkeys(
        (
            "prlimit64",
            "sched_setparam",
            "sched_setscheduler",
            "sched_setaffinity",
            "sched_setattr",
            "migrate_pages",
            "move_pages",
        ),
        (_zero(0),),
    ),
    "setpriority": ((0, None, frozenset({_PRIO_PROCESS, _PRIO_PGRP}), True, errno.EPERM), _zero(1)),
    "ioprio_set": ((0, None, frozenset({_IOPRIO_WHO_PROCESS, _IOPRIO_WHO_PGRP}), True, errno.EPERM), _zero(1)),
}
"""System calls allowed only with some arguments (every check must pass), in the order checked."""


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def _statement(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def _arch(machine: str | None) -> tuple[int, dict[str, int]]:
    machine = machine or os.uname().machine
    if machine not in _ARCHES:
        raise OSError(errno.ENOSYS, f"no seccomp filter for the {machine} architecture (x86_64, aarch64 only)")
    return _ARCHES[machine]


def syscall_number(name: str, machine: str | None = None) -> int:
    """Number of the system call ``name`` (one ``_ARCHES`` lists) on ``machine`` (default: this one)."""
    return _arch(machine)[1][name]


def filter_program(machine: str | None = None) -> bytes:
    """The BPF program (``struct sock_filter`` array) for ``machine`` (default: this one).

    Raises:
        OSError: ENOSYS on an architecture whose system call numbers are not listed here.
    """
    audit_arch, numbers = _arch(machine)
    refuse = lambda code: _statement(_BPF_RET_K, _RET_ERRNO | code)  # noqa: E731
    allow = _statement(_BPF_RET_K, _RET_ALLOW)
    program = [
        _statement(_BPF_LD_W_ABS, _ARCH_OFFSET),
        _statement(_BPF_JEQ_K, audit_arch, jt=1),  # another ABI: refused
        refuse(errno.EPERM),
        _statement(_BPF_LD_W_ABS, _NR_OFFSET),
    ]
    if audit_arch == _ARCHES["x86_64"][0]:
        program += [_statement(_BPF_JGE_K, _X32_SYSCALL_BIT, jf=1), refuse(errno.EPERM)]
    for name, code in REFUSED.items():
        if name in numbers:
            program += [_statement(_BPF_JEQ_K, numbers[name], jf=1), refuse(code)]
    for name, checks in ARGUMENT_RULES.items():
        body = [instruction for check in checks for instruction in _argument_check(check)] + [allow]
        program += [_statement(_BPF_JEQ_K, numbers[name], jf=len(body)), *body]
    return b"".join([*program, allow])


def _argument_check(check: ArgumentCheck) -> list[bytes]:
    """Instructions that load one argument (masked), return ``errno`` when the check fails, else fall through."""
    argument, mask, values, only_allowed, code = check
    loads = [_statement(_BPF_LD_W_ABS, _ARGUMENT_OFFSETS[argument])]
    if mask is not None:
        loads.append(_statement(_BPF_ALU_AND_K, mask))
    ordered = sorted(values)  # a match jumps over the other tests and then the refusal (allowed values) or to it
    tests = [_statement(_BPF_JEQ_K, value, jt=len(ordered) - index) for index, value in enumerate(ordered)]
    refusal = _statement(_BPF_RET_K, _RET_ERRNO | code)
    if only_allowed:
        return [*loads, *tests, refusal]
    return [*loads, *tests, _statement(_BPF_JA, 1), refusal]


def install(libc: ctypes.CDLL) -> None:
    """Apply the filter to the calling process and every process it starts from now on (irreversible).

    Needs ``no_new_privs`` (or CAP_SYS_ADMIN). Raises OSError when the kernel refuses (no CONFIG_SECCOMP_FILTER).
    """
    program = filter_program()
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_char_p))
    if libc.prctl(_PR_SET_SECCOMP, ctypes.c_ulong(_SECCOMP_MODE_FILTER), ctypes.byref(fprog), 0, 0) == -1:
        code = ctypes.get_errno()
        raise OSError(code, f"seccomp filter: {errno.errorcode.get(code, code)}")

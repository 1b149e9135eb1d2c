"""Second round of hostile programs, each class judged by its side effect, as root and as an ordinary user.

"root": the grader runs as root (dedicated uid per worker). "user": a ``useradd``-created user runs the grader
through ``runuser`` (user namespaces). Each scenario grades its programs in order on ONE fork server, so a
later program sees whatever an earlier one could leave behind; victims (files, terminals, keys) are set up here
and checked here.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import select
import shutil
import tempfile
from pathlib import Path

import pytest

from reward_fns.sandbox.isolation import DEVICE_LINKS, DEVICES, SCRATCH_SIZE
from reward_fns.sandbox.seccomp import syscall_number

pytestmark = pytest.mark.integration  # whole graders in subprocesses

MODES = ["root", "user"]
PROBE = ("print(input())", [("ping", "ping")])
"""A harmless completion graded after the hostile ones: the server must still grade it correctly."""


@pytest.fixture
def shared_dir(unprivileged_user_name):
    """A directory both the test and the unprivileged grader can use (pytest's tmp_path is root-only)."""
    path = Path(tempfile.mkdtemp(prefix="nouscoder-hardening-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _owned_by_grader(path: Path, mode: str, unprivileged_user_name: str | None) -> None:
    if mode == "user" and unprivileged_user_name is not None:
        account = pwd.getpwnam(unprivileged_user_name)
        os.chown(path, account.pw_uid, account.pw_gid)


def _run(code: str, tests: list[tuple[str, str]], **extra) -> dict:
    return {"code": code, "tests": tests, **extra}


# ---- 1. nothing the sandbox does makes the grader open, truncate or block on another file ----

REPLACE_IO_FILES = """
import os
victim = VICTIM
directories = {os.path.abspath(path) for path in ("../../io", "../../files", "../io", ".")}
for fd in range(4):
    try:
        directories.add(os.path.dirname(os.readlink(f"/proc/self/fd/{fd}").split(" (deleted)")[0]))
    except OSError:
        pass
done = []
for directory in sorted(directories):
    names = set()
    try:
        names = set(os.listdir(directory))
    except OSError:
        pass
    for name in names | {"stdin", "stdout", "stderr", "result"}:
        path = os.path.join(directory, name)
        try:
            if os.path.lexists(path) and not os.path.isdir(path):
                os.unlink(path)
            os.symlink(victim, path)
            done.append(path)
        except OSError:
            pass
    try:
        os.mkfifo(os.path.join(directory, "stdin.fifo"))
    except OSError:
        pass
print(input())
"""


@pytest.mark.parametrize("mode", MODES)
def test_program_cannot_redirect_the_graders_file_operations(mode, run_grader_as, shared_dir, unprivileged_user_name):
    victim = shared_dir / "victim.txt"
    victim.write_text("original bytes")
    _owned_by_grader(victim, mode, unprivileged_user_name)
    hostile = REPLACE_IO_FILES.replace("VICTIM", repr(str(victim)))
    observed = run_grader_as(mode, [_run(hostile, [("a", "a"), ("b", "b")]), _run(*PROBE), _run(*PROBE)])
    assert victim.read_text() == "original bytes"
    assert [result["verdict"] for result in observed["results"]] == ["accepted"] * 3, observed["results"]


# ---- 2. no channel between tests: IPC objects, keyrings, files, the scratch directory's own metadata ----

LEAVE_STATE = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def call(number, *args):
    result = libc.syscall(number, *args)
    return result if result >= 0 else -ctypes.get_errno()
done = {}
serial = call(250, 10, -3, b"user", b"nouscoder-grader-key", 0)  # KEYCTL_SEARCH the session keyring
buffer = ctypes.create_string_buffer(256)
done["grader_key"] = buffer.raw[:call(250, 11, serial, buffer, 256)] if serial > 0 else serial
for ring in (-3, -4, -5, -2):  # session, user, user-session, process keyrings
    done[f"add_key{ring}"] = call(248, b"user", b"left-behind", b"x", 1, ring)
done["shmget"] = call(29, 0x4E43, 1 << 20, 0o1666)
done["semget"] = call(64, 0x4E43, 1, 0o1666)
done["msgget"] = call(68, 0x4E43, 0o1666)
done["mq_open"] = call(240, b"left-behind", os.O_CREAT | os.O_RDWR, 0o600, None)
for path in ("/tmp/left-behind", "/dev/shm/left-behind", "left-behind", "/tmp/dir/inner"):
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        open(path, "w").write("x")
        done[path] = "written"
    except OSError as exc:
        done[path] = exc.errno
for directory in (".", "/tmp"):  # the working directory and the scratch tmpfs's root
    for name, action in (("xattr", lambda: os.setxattr(directory, "user.left", b"x")),
                         ("utime", lambda: os.utime(directory, (12345, 12345))),
                         ("chmod", lambda: os.chmod(directory, 0o700))):
        try:
            action()
            done[f"{name} {directory}"] = "done"
        except OSError as exc:
            done[f"{name} {directory}"] = exc.errno
print(done)
"""

FIND_STATE = r"""
import ctypes, os, stat
libc = ctypes.CDLL(None, use_errno=True)
left = []
for kind in ("shm", "sem", "msg"):
    rows = open(f"/proc/sysvipc/{kind}").read().splitlines()[1:]
    if rows:
        left.append((kind, rows))
if libc.syscall(240, b"left-behind", os.O_RDWR, 0, None) >= 0:
    left.append("posix message queue")
for ring in (-3, -4, -5, -2):
    if libc.syscall(250, 10, ring, b"user", b"left-behind", 0) > 0:
        left.append(("key", ring))
if sorted(os.listdir(".")) != ["solution.py"] or sorted(os.listdir("/dev/shm")) != ["work"]:
    left.append(("files", os.listdir("."), os.listdir("/dev/shm")))
for directory, mode in ((".", 0o700), ("/tmp", 0o1777)):
    info = os.stat(directory)
    if int(info.st_mtime) == 12345 or os.listxattr(directory) or stat.S_IMODE(info.st_mode) != mode:
        left.append(("metadata", directory, info.st_mtime, os.listxattr(directory), oct(info.st_mode)))
print(left or "clean")
"""


@pytest.mark.parametrize("mode", MODES)
def test_nothing_a_program_leaves_reaches_the_next_one_or_the_graders_keys(mode, run_grader_as):
    secret = secrets.token_hex(16)
    observed = run_grader_as(
        mode,
        [
            _run(LEAVE_STATE, [("", "")], raw=True),
            _run(FIND_STATE, [("", "clean")]),
            _run(LEAVE_STATE, [("", "x")]),
            _run(FIND_STATE, [("", "clean")]),
        ],
        grader_key=secret,
    )
    left = eval(observed["results"][0]["stdout"])
    assert secret not in observed["results"][0]["stdout"]
    assert left["grader_key"] < 0 and all(left[f"add_key{ring}"] < 0 for ring in (-3, -4, -5, -2)), left
    assert all(left[name] < 0 for name in ("shmget", "semget", "msgget", "mq_open")), left
    assert left["/tmp/left-behind"] == "written"  # the program's own private /tmp
    assert observed["results"][1]["verdict"] == "accepted", observed["results"][1]
    assert observed["results"][3]["verdict"] == "accepted", observed["results"][3]
    assert observed["keys_after"] == observed["keys_before"]
    assert observed["grader_key_after"] == secret


# ---- 3. memory outside RLIMIT_AS: memfd, SysV shared memory, files in tmpfs ----

HOLD_MEMORY = {
    "memfd": "import os\nheld = 0\n"
    "try:\n    fd = os.memfd_create('hold')\n    while held < 1024:\n        os.write(fd, b'x' * (1 << 20))\n"
    "        held += 1\nfinally:\n    print(held, flush=True)\n",
    "sysv_shm": "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nheld = 0\n"
    "if libc.syscall(29, 0, 1 << 30, 0o1600) >= 0:\n    held = 1024\nprint(held, flush=True)\n"
    "if not held:\n    raise MemoryError('shmget refused')\n",
    "tmpfs_files": "import os\nheld = 0\ntry:\n    while held < 1024:\n"
    "        with open(f'/dev/shm/hold{held // 32}', 'ab') as f:\n"
    "            f.write(b'x' * (1 << 20))\n        held += 1\n"
    "finally:\n    print(held, flush=True)\n",
}
"""Each tries to hold 1 GB outside its 512 MB address space and prints how many MB it got."""


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("way", sorted(HOLD_MEMORY))
def test_memory_held_outside_the_address_space_is_bounded_and_memory_limit(mode, way, run_grader_as):
    code = HOLD_MEMORY[way]
    config = {"memory_limit_mb": 512}
    observed = run_grader_as(mode, [_run(code, [("", "")], raw=True), _run(code, [("", "1024")])], config=config)
    held_mb = int(observed["results"][0]["stdout"].split()[0])
    scratch_mb = int(SCRATCH_SIZE.rstrip("m"))
    assert held_mb <= (scratch_mb if way == "tmpfs_files" else 0), observed["results"][0]
    assert observed["results"][1]["verdict"] == "memory_limit", observed["results"][1]


KERNEL_BUFFERS = {
    "socket buffers": r"""
import os, socket, time
for _ in range(3):
    if os.fork() == 0:
        break
held = []
try:
    while True:
        a, b = socket.socketpair()
        try:
            a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
        except OSError:
            pass
        a.setblocking(False)
        try:
            while True:
                a.send(b"x" * 65536)
        except BlockingIOError:
            pass
        held.append((a, b))
except OSError:
    pass
time.sleep(3)
print("held", flush=True)
""",
    "pipe buffers": r"""
import fcntl, os, time
for _ in range(30):
    if os.fork() == 0:
        break
held = []
try:
    while True:
        r, w = os.pipe()
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
        except OSError:
            pass
        os.set_blocking(w, False)
        try:
            while True:
                os.write(w, b"p" * 65536)
        except BlockingIOError:
            pass
        held.append((r, w))
except OSError:
    pass
time.sleep(3)
print("held", flush=True)
""",
}
"""Each parks what it can in kernel buffers (enlarged where the kernel allows) from several processes, far past a
256 MB limit (with 8 MB send buffers: 768 MB held and accepted before), then prints ``held``."""

BUFFER_LIMITS = r"""
import errno, fcntl, os, socket
def refused(action):
    try:
        action()
        return "allowed"
    except OSError as exc:
        return errno.errorcode[exc.errno]
a, b = socket.socketpair()
r, w = os.pipe()
print({
    "SO_SNDBUF": refused(lambda: a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)),
    "SO_RCVBUFFORCE": refused(lambda: a.setsockopt(socket.SOL_SOCKET, 33, 1 << 22)),
    "F_SETPIPE_SZ": refused(lambda: fcntl.fcntl(w, 1031, 1 << 20)),
    "AF_INET": refused(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)),
    "AF_NETLINK": refused(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)),
    "SOCK_DGRAM": refused(lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)),
    "splice": refused(lambda: os.splice(r, w, 1, flags=os.SPLICE_F_NONBLOCK)),
    "sendfile": refused(lambda: os.sendfile(w, r, None, 1)),
    "unix stream": refused(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)),
})
"""


@pytest.mark.parametrize("mode", MODES)
def test_kernel_buffers_past_the_limit_are_memory_limit(mode, run_grader_as):
    """Pipes and sockets hold memory no rlimit sees: the filter keeps their buffers at the default size and the
    server counts each at that capacity (sockets also with a memory cgroup, which does not charge them)."""
    runs = [{"code": code, "tests": [("", "held")]} for code in KERNEL_BUFFERS.values()]
    runs.append({"code": BUFFER_LIMITS, "tests": [("", "")], "raw": True})
    observed = run_grader_as(mode, [*runs, _run(*PROBE)], config={"memory_limit_mb": 256, "time_limit_s": 20.0})
    charged = bool(json.loads(observed["report"])["memory_cgroup"])
    for name, result in zip(KERNEL_BUFFERS, observed["results"], strict=False):
        if name == "pipe buffers" and charged:
            # a memory cgroup charges pipes as they fill, and a plain uid's pipes past fs.pipe-user-pages-soft
            # (64 MB) get one page: this run never holds the limit, and is graded on its output (31 lines)
            assert result["verdict"] == "wrong_answer", (name, result)
            continue
        assert result["verdict"] == "memory_limit", (name, result)
        assert "buffer capacity" in result["detail"], (name, result)
    assert eval(observed["results"][2]["stdout"]) == {
        "SO_SNDBUF": "EPERM",
        "SO_RCVBUFFORCE": "EPERM",
        "F_SETPIPE_SZ": "EPERM",
        "AF_INET": "EAFNOSUPPORT",
        "AF_NETLINK": "EAFNOSUPPORT",
        "SOCK_DGRAM": "ESOCKTNOSUPPORT",
        "splice": "EPERM",
        "sendfile": "EPERM",
        "unix stream": "allowed",
    }
    assert observed["results"][3]["verdict"] == "accepted"


# ---- 5. the host's terminals and devices are not in the sandbox ----

WRITE_TERMINALS = """
import glob, json, os
hits = []
candidates = ["/dev/tty", "/dev/console", *glob.glob("/dev/pts/*"), *glob.glob("/dev/tty*")]
candidates += [path for path in glob.glob("/proc/[0-9]*/fd/*") if not path.startswith(f"/proc/{os.getpid()}/")]
for path in candidates:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
        os.write(fd, b"PWNED-TERMINAL")
        os.close(fd)
        hits.append(path)
    except OSError:
        pass
print(json.dumps({"dev": sorted(os.listdir("/dev")), "hits": hits}))
"""


@pytest.mark.parametrize("mode", MODES)
def test_program_cannot_write_to_the_graders_terminal(mode, run_grader_as, unprivileged_user_name):
    controller, terminal = os.openpty()
    try:
        if mode == "user" and unprivileged_user_name is not None:
            os.chown(os.ttyname(terminal), pwd.getpwnam(unprivileged_user_name).pw_uid, -1)
        observed = run_grader_as(mode, [_run(WRITE_TERMINALS, [("", "")], raw=True)], stdio=terminal)
        written = b""
        while select.select([controller], [], [], 0.2)[0]:
            written += os.read(controller, 65536)
    finally:
        os.close(terminal)
        os.close(controller)
    assert b"PWNED" not in written
    seen = json.loads(observed["results"][0]["stdout"])
    assert seen["dev"] == sorted([*DEVICES, *DEVICE_LINKS]), seen


# ---- 6. the grader does not depend on its caller's umask, cwd, environment or standard streams ----

SHADOWING_MODULE = "open({marker!r}, 'w').write('imported from the working directory')\n"


@pytest.mark.parametrize("mode", MODES)
def test_grader_started_with_umask_077_in_a_hostile_directory_grades_correctly(mode, run_grader_as, shared_dir):
    workdir = shared_dir / "cwd"
    workdir.mkdir(mode=0o777)
    marker = shared_dir / "marker"
    for module in ("random", "json", "marshal", "reward_fns"):
        (workdir / f"{module}.py").write_text(SHADOWING_MODULE.format(marker=str(marker)))
    runs = [
        _run("a, b = map(int, input().split())\nprint(a + b)", [("2 3", "5"), ("1 1", "2")]),
        _run(
            "class Solution:\n    def twice(self, x):\n        return [2 * x]\n",
            [("21", "[42]")],
            testtype="functional",
            fn_name="twice",
        ),
        _run("import random, json\nprint(json.dumps(random.Random(1).random() < 1))", [("", "true")]),
    ]
    tmpdir = shared_dir / "tmp"
    tmpdir.mkdir(mode=0o777)
    observed = run_grader_as(
        mode,
        runs,
        umask=0o077,
        cwd=str(workdir),
        close_std_fds=True,
        env={
            "TMPDIR": str(tmpdir),
            "PYTHONHASHSEED": "0",
            "PYTHONIOENCODING": "latin-1",
            "LANG": "tr_TR.ISO-8859-9",
            "LC_ALL": "tr_TR.ISO-8859-9",
        },
    )
    assert [result["verdict"] for result in observed["results"]] == ["accepted"] * 3, observed["results"]
    assert not marker.exists()


# ---- 7. correct programs a judge accepts ----

FALSE_NEGATIVES = {
    "scratch files in /tmp": (
        "import os, tempfile\nopen('/tmp/scratch.txt', 'w').write(input())\n"
        "with tempfile.NamedTemporaryFile('w+') as f:\n    f.write('!')\n    f.seek(0)\n    tail = f.read()\n"
        "print(open('/tmp/scratch.txt').read() + tail)",
        [("data", "data!")],
        {},
    ),
    "multiprocessing spawn": (
        "import multiprocessing as mp\ndef square(x):\n    return x * x\n"
        "if __name__ == '__main__':\n    with mp.get_context('spawn').Pool(2) as pool:\n"
        "        print(sum(pool.map(square, range(int(input())))))",
        [("10", "285")],
        {},
    ),
    "multiprocessing forkserver": (
        "import multiprocessing as mp\ndef square(x):\n    return x * x\n"
        "if __name__ == '__main__':\n    with mp.get_context('forkserver').Pool(2) as pool:\n"
        "        print(sum(pool.map(square, range(int(input())))))",
        [("10", "285")],
        {},
    ),
    "open('/dev/stdin')": ("print(sum(map(int, open('/dev/stdin').read().split())))", [("1 2\n3", "6")], {}),
    "U+2028 and U+0085 in a string argument": (
        "class Solution:\n    def size(self, s, t):\n        return [len(s), t]\n",
        [(json.dumps("a\u2028b\x85c", ensure_ascii=False) + "\n" + json.dumps("\u2029"), '[5, "\\u2029"]')],
        {"testtype": "functional", "fn_name": "size"},
    ),
    "integer results past 4,300 digits": (
        "def power(n):\n    return [10 ** n, n]\n",
        [("5000", "[1" + "0" * 5000 + ", 5000]")],
        {"testtype": "functional", "fn_name": "power"},
    ),
    "integer arguments past 4,300 digits": (
        "def last(x):\n    return x % 1000\n",
        [("1" + "0" * 4999 + "7", "7")],
        {"testtype": "functional", "fn_name": "last"},
    ),
}


@pytest.mark.parametrize("mode", MODES)
def test_programs_a_judge_accepts_are_accepted(mode, run_grader_as):
    runs = [_run(code, tests, **extra) for code, tests, extra in FALSE_NEGATIVES.values()]
    observed = run_grader_as(mode, runs, config={"time_limit_s": 10.0})
    verdicts = {
        name: (result["verdict"], result["detail"][-300:])
        for name, result in zip(FALSE_NEGATIVES, observed["results"], strict=True)
    }
    assert all(verdict == "accepted" for verdict, _ in verdicts.values()), verdicts


SPLIT_MEMORY = """
import os, time
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = bytearray(200 << 20)  # each process stays far below its own 256 MB address space
        block[::4096] = b"x" * len(block[::4096])
        time.sleep(5)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print("done")
"""


@pytest.mark.parametrize("mode", MODES)
def test_memory_split_over_several_processes_is_memory_limit(mode, run_grader_as):
    observed = run_grader_as(
        mode, [_run(SPLIT_MEMORY, [("", "done")]), _run(*PROBE)], config={"memory_limit_mb": 256, "time_limit_s": 20.0}
    )
    assert observed["results"][0]["verdict"] == "memory_limit", observed["results"][0]
    assert "together" in observed["results"][0]["detail"]
    assert observed["results"][1]["verdict"] == "accepted"


REFUSED_WITHOUT_NAMESPACES = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def errno_of(number, *args):
    return 0 if libc.syscall(number, *args) >= 0 else ctypes.get_errno()
results = {"keyctl": errno_of(250, 10, -3, b"user", b"nouscoder-grader-key", 0),
           "add_key": errno_of(248, b"user", b"left-behind", b"x", 1, -4),
           "shmget": errno_of(29, 0, 1 << 20, 0o1600), "ptrace": errno_of(101, 16, 1, 0, 0),
           "unshare_user": errno_of(272, 0x10000000)}
try:
    os.memfd_create("x")
    results["memfd_create"] = 0
except OSError as exc:
    results["memfd_create"] = exc.errno
print(results)
"""


@pytest.mark.parametrize("mode", MODES)
def test_the_syscall_filter_holds_on_a_node_without_namespaces(mode, run_grader_as):
    """seccomp needs no namespace: keyrings, SysV memory, memfd, ptrace, new namespaces stay refused."""
    disable = "namespaces" if mode == "root" else "user_namespace"
    secret = secrets.token_hex(16)
    observed = run_grader_as(
        mode,
        [_run(REFUSED_WITHOUT_NAMESPACES, [("", "")], raw=True)],
        env={"NOUSCODER_SANDBOX_DISABLE": disable},
        grader_key=secret,
    )
    report = json.loads(observed["report"])
    assert report["seccomp"] and not report["mount_namespace"], report
    refused = eval(observed["results"][0]["stdout"])
    assert refused == {"keyctl": 1, "add_key": 1, "shmget": 12, "ptrace": 1, "unshare_user": 1, "memfd_create": 12}
    assert observed["keys_after"] == observed["keys_before"] and observed["grader_key_after"] == secret


# ---- 8. nothing a run does reaches the fork server: its limits, priority, scheduling, memory placement ----

REACH_THE_SERVER = r"""
import ctypes, errno, json, os, resource, struct
libc = ctypes.CDLL(None, use_errno=True)
NR = NUMBERS
def refused(action):
    try:
        result = action()
        if isinstance(result, int) and result < 0:
            return errno.errorcode[ctypes.get_errno()]
        return "allowed"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, exc.errno)
def call(name, *args):
    return lambda: libc.syscall(NR[name], *args)
attr = ctypes.create_string_buffer(struct.pack("<IIQiIQQQII", 56, 5, 0, 0, 0, 0, 0, 0, 0, 0))  # SCHED_IDLE
nodes = ctypes.c_ulong(1)
results = {
    f"prlimit(1, {name})": refused(lambda: resource.prlimit(1, getattr(resource, name), (4, 4)))
    for name in ("RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_STACK")
}
results |= {
    "setpriority(PROCESS, 1)": refused(lambda: os.setpriority(os.PRIO_PROCESS, 1, 19)),
    "setpriority(USER, 0)": refused(lambda: os.setpriority(os.PRIO_USER, 0, 19)),
    "sched_setaffinity(1)": refused(lambda: os.sched_setaffinity(1, {0})),
    "sched_setscheduler(1)": refused(lambda: os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0))),
    "sched_setparam(1)": refused(lambda: os.sched_setparam(1, os.sched_param(0))),
    "sched_setattr(1)": refused(call("sched_setattr", 1, attr, 0)),
    "ioprio_set(PROCESS, 1)": refused(call("ioprio_set", 1, 1, 3 << 13)),
    "ioprio_set(USER, 0)": refused(call("ioprio_set", 3, 0, 3 << 13)),
    "migrate_pages(1)": refused(call("migrate_pages", 1, 64, ctypes.byref(nodes), ctypes.byref(nodes))),
    "move_pages(1)": refused(call("move_pages", 1, 0, None, None, None, 0)),
    "process_madvise": refused(call("process_madvise", 0, None, 0, 0, 0)),
    "inotify_init1": refused(lambda: libc.inotify_init1(0)),
}
for root, _, files in os.walk("/proc/1"):
    for name in files:
        try:
            with open(os.path.join(root, name), "w") as handle:
                handle.write("0")
            results[os.path.join(root, name)] = "written"
        except OSError:
            pass
# on itself, as programs do
resource.setrlimit(resource.RLIMIT_STACK, resource.getrlimit(resource.RLIMIT_STACK))
os.nice(1)
os.sched_setaffinity(0, os.sched_getaffinity(0))
print(json.dumps(results))
"""

SERVER_STATE = r"""
stat = open("/proc/1/stat").read().rsplit(")", 1)[1].split()
status = [line for line in open("/proc/1/status") if line.startswith("Cpus_allowed_list")]
print(open("/proc/1/limits").read(), "nice", stat[16], "policy", stat[38], status)
"""

NEEDS_THE_SERVERS_LIMITS = [
    ("def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\nprint(depth(40000))\n", [("", "40000")]),
    (
        "files = [open('/dev/null') for _ in range(400)]\nimport sys\nsys.stdout.write('x' * (1 << 20))\n",
        [("", "x" * (1 << 20))],
    ),
]
"""Correct programs a lowered stack, file or output limit of the server (inherited by every test) would fail."""


@pytest.mark.parametrize("mode", MODES)
def test_a_run_cannot_change_the_fork_server(mode, run_grader_as):
    """Plain user: the program has the server's uid (pid 1 of its namespace). Every call that acts on another process
    is refused (EPERM) and the server's limits, nice value, scheduling policy and CPUs are as before."""
    called = ("sched_setattr", "ioprio_set", "migrate_pages", "move_pages", "process_madvise")
    numbers = {name: syscall_number(name) for name in called}
    hostile = REACH_THE_SERVER.replace("NUMBERS", repr(numbers))
    runs = [
        _run(SERVER_STATE, [("", "")], raw=True),
        _run(hostile, [("", "")], raw=True),
        _run(SERVER_STATE, [("", "")], raw=True),
        *(_run(code, tests) for code, tests in NEEDS_THE_SERVERS_LIMITS),
    ]
    observed = run_grader_as(mode, runs, config={"time_limit_s": 10.0})
    before, attempt, after, *later = observed["results"]
    results = json.loads(attempt["stdout"])
    assert results == {name: "EPERM" for name in results} and len(results) == 15, results
    assert after["stdout"] == before["stdout"] and "Max open files" in before["stdout"]
    assert [result["verdict"] for result in later] == ["accepted"] * len(NEEDS_THE_SERVERS_LIMITS), later


# ---- 9. kernel memory no rlimit sees: page tables, mappings, epoll watches ----

KERNEL_MEMORY = {
    "page tables": r"""
import ctypes, os, time
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
parent = os.getpid()
for _ in range(2):
    if os.fork() == 0:
        break
base = (1 << 40) + (os.getpid() % 64) * (1 << 40)
for i in range(65_000):  # one page per gigabyte, read: 8 KB of page tables for 4 KB of address space
    address = libc.mmap(base + i * (1 << 30), 4096, 1, 0x22 | 0x100000, -1, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        break
    ctypes.c_char.from_address(address).value
time.sleep(3)
if os.getpid() == parent:
    print("held", flush=True)
""",
    "mappings": r"""
import ctypes, os, time
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
parent = os.getpid()
for _ in range(31):
    if os.fork() == 0:
        break
base = libc.mmap(None, 20_000 * 4096, 0, 0x22 | 0x4000, -1, 0)
for page in range(0, 20_000, 2):  # 20,000 mappings no page backs: every other untouched page readable
    libc.mprotect(base + page * 4096, 4096, 1)
time.sleep(3)
if os.getpid() == parent:
    print("held", flush=True)
""",
    "epoll watches": r"""
import os, select, time
parent = os.getpid()
for _ in range(11):
    if os.fork() == 0:
        break
targets = [os.eventfd(0) for _ in range(300)]
pollers = []
for _ in range(200):
    pollers.append(select.epoll())
    for fd in targets:
        pollers[-1].register(fd, select.EPOLLIN)
time.sleep(10)
if os.getpid() == parent:
    print("held", flush=True)
""",
}
"""Each makes the kernel hold far more than a 128 MB limit for it while its processes' own memory stays small (the
page tables of 3 processes: ~1 GB, and accepted before), then prints ``held``."""


@pytest.mark.parametrize(
    ("mode", "disable"),
    [("root", ""), ("root", "memory_cgroup"), ("user", "")],
    ids=["root, memory cgroup where the node gives one", "root, counted", "user, counted unless delegated"],
)
def test_kernel_memory_past_the_limit_is_memory_limit(mode, disable, run_grader_as):
    """What the kernel holds for a run counts toward its memory limit, charged by the run's memory cgroup or counted
    by the server; the server then grades the next program as usual."""
    runs = [_run(code, [("", "held")]) for code in KERNEL_MEMORY.values()]
    env = {"NOUSCODER_SANDBOX_DISABLE": disable} if disable else {}
    observed = run_grader_as(
        mode, [*runs, _run(*PROBE)], env=env, config={"memory_limit_mb": 128, "time_limit_s": 30.0}
    )
    report = json.loads(observed["report"])
    if disable:
        assert not report["memory_cgroup"] and "disabled" in report["errors"]["memory_cgroup"], report
    else:  # the start-up report says which accounting is in force, or why the cgroup is not
        assert bool(report["memory_cgroup"]) != bool(report["errors"].get("memory_cgroup")), report
    for name, result in zip(KERNEL_MEMORY, observed["results"], strict=False):
        assert result["verdict"] == "memory_limit", (name, report["memory_cgroup"], result)
    assert observed["results"][-1]["verdict"] == "accepted"

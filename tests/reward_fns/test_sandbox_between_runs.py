"""Nothing a run leaves reaches the next one, and nothing it leaves can break the server's clean-up.

Each scenario grades its programs in order on ONE fork server, as root and as a plain user (``run_grader_as``):

* storage channels: a program leaves traces in state the old reset did not renew -- the scratch tmpfs's inode
  counter, inode flags (``chattr``'s NODUMP/NOATIME) on ``/tmp`` and the working directory, the worker's pid
  counter (visible in ``/proc/self``), the network namespace's counters (``/proc/net/snmp``) and an abstract
  socket name kept bound by sockets in flight -- and an observer graded before and after must see the same;
* clean-up: a 3,000-level directory tree (with directories made unreadable) in the scratch made the reset fail
  with RecursionError (``internal_error``, server restarted); with and without namespaces, the same server must
  grade it and the next program.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from reward_fns.sandbox.server import reset_directory

MODES = ["root", "user"]

OBSERVE = r"""
import fcntl, os, socket, struct
seen = {}
open("/tmp/probe", "w").close()
seen["inode of a new file"] = os.stat("/tmp/probe").st_ino
seen["inode of the working directory"] = os.stat(".").st_ino
def flags(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        return struct.unpack("i", fcntl.ioctl(fd, 0x80086601, bytes(4)))[0]  # FS_IOC_GETFLAGS
    except OSError as exc:
        return -exc.errno
    finally:
        os.close(fd)
seen["flags of /tmp"], seen["flags of ."] = flags("/tmp"), flags(".")
seen["pid in /proc"] = int(os.readlink("/proc/self"))
seen["ip counters"] = [line for line in open("/proc/net/snmp") if line.startswith("Ip:")][1]
try:
    socket.socket(socket.AF_UNIX).connect(b"\0nouscoder-channel")
    seen["abstract name"] = "connected"
except OSError as exc:
    seen["abstract name"] = type(exc).__name__
print(seen)
"""
"""Prints what a program can learn from the state the previous runs left."""

LEAVE = r"""
import fcntl, os, socket, struct
for _ in range(FORKS):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
for index in range(300):
    open(f"/tmp/file{index}", "w").close()
for path in ("/tmp", "."):
    try:
        fd = os.open(path, os.O_RDONLY)
        fcntl.ioctl(fd, 0x40086602, struct.pack("i", 0x40 | 0x80))  # FS_IOC_SETFLAGS: NODUMP | NOATIME
        os.close(fd)
    except OSError:
        pass
for _ in range(37):
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 9))
    except OSError:
        pass
listener = socket.socket(socket.AF_UNIX)
listener.bind(b"\0nouscoder-channel")
listener.listen(1)
a, b = socket.socketpair()  # a cycle of sockets in flight keeps the listener alive after every descriptor closes
socket.send_fds(a, [b"x"], [listener.fileno(), a.fileno()])
socket.send_fds(b, [b"y"], [b.fileno()])
print("left")
"""
"""Leaves traces: FORKS processes, 300 files, inode flags, network counters, an abstract name held in flight."""


def _observe() -> dict:
    return {"code": OBSERVE, "tests": [("", "")], "raw": True}


def _leave(forks: int) -> dict:
    return {"code": LEAVE.replace("FORKS", str(forks)), "tests": [("", "left")], "raw": True}


@pytest.fixture(scope="module", params=MODES)
def views(request, run_grader_as) -> list[dict]:
    """What three observers saw, graded before, between and after two leaving runs (50 forks, then none) on one
    server; one grader subprocess per mode (~1 s) shared by the channel tests below."""
    observed = run_grader_as(request.param, [_observe(), _leave(50), _observe(), _leave(0), _observe()])
    leaving = [observed["results"][index] for index in (1, 3)]
    assert all(run["stdout"].strip() == "left" for run in leaving), leaving
    return [eval(observed["results"][index]["stdout"]) for index in (0, 2, 4)]


def _same_for_every_observer(views: list[dict], name: str) -> bool:
    return views[0][name] == views[1][name] == views[2][name]


@pytest.mark.integration
def test_the_scratch_inode_counter_does_not_carry(views):
    assert _same_for_every_observer(views, "inode of a new file"), views
    assert _same_for_every_observer(views, "inode of the working directory"), views


@pytest.mark.integration
def test_inode_flags_do_not_carry(views):
    assert all(view["flags of /tmp"] in (0, views[0]["flags of /tmp"]) and view["flags of ."] == 0 for view in views)


@pytest.mark.integration
def test_the_pid_counter_does_not_carry(views):
    pids = [view["pid in /proc"] for view in views]
    assert (pids[1] - pids[0]) - (pids[2] - pids[1]) != 50, pids  # a counter left as it was: exactly 50


@pytest.mark.integration
def test_network_counters_do_not_carry(views):
    assert _same_for_every_observer(views, "ip counters"), views


@pytest.mark.integration
def test_an_abstract_socket_name_does_not_carry(views):
    assert all(view["abstract name"] != "connected" for view in views), views


DEEP_TREE = r"""
import os
top = os.open(".", os.O_RDONLY)
for level in range(3000):
    os.mkdir("d")
    if level % 500 == 0:
        os.symlink("/", "link")
        open("file", "w").write("x")
    os.chdir("d")
os.fchdir(top)
os.chdir("d/d/d")
os.chmod("d", 0o000)
os.fchdir(top)
os.chmod("d", 0o100)
print("deep")
"""
"""3,000 nested directories in the working directory, some unreadable, with files and links to / among them."""
IN_MEMORY = "/dev/shm"
"""A tmpfs for scratch directories outside the sandbox's own (3,000 directories on a VM's disk take seconds)."""
CLEAN = "import os\nprint(sorted(os.listdir('.')))\n"


@pytest.mark.integration  # two grader subprocesses per case: ~1 s each
@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "no-namespaces"])
@pytest.mark.parametrize("mode", MODES)
def test_a_deep_directory_tree_is_cleaned_up_by_the_same_server(mode, namespaces, run_grader_as):
    env = {}
    if not namespaces:  # the scratch is then a directory of the grader's TMPDIR: in memory, where there is one
        env["NOUSCODER_SANDBOX_DISABLE"] = "namespaces" if mode == "root" else "user_namespace"
        env |= {"TMPDIR": IN_MEMORY} if os.path.isdir(IN_MEMORY) else {}
    runs = [
        {"code": DEEP_TREE, "tests": [("", "deep"), ("", "deep")]},
        {"code": CLEAN, "tests": [("", "['solution.py']")]},
    ]
    observed = run_grader_as(mode, runs, env=env)
    assert [result["verdict"] for result in observed["results"]] == ["accepted", "accepted"], observed["results"]


def test_reset_directory_empties_any_tree_without_following_links(tmp_path):
    """In-process: 5,000 levels (paths far past PATH_MAX), unreadable and unsearchable directories, links."""
    if os.path.isdir(IN_MEMORY):
        tmp_path = Path(tempfile.mkdtemp(dir=IN_MEMORY))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept").write_text("kept")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    top = os.open(scratch, os.O_RDONLY)
    try:
        current = os.dup(top)
        for level in range(5000):
            os.mkdir("d", dir_fd=current)
            os.symlink(str(outside), "link", dir_fd=current)
            if level % 1000 == 0:
                os.mkdir("sibling", dir_fd=current)
                os.chmod("sibling", 0, dir_fd=current)
            below = os.open("d", os.O_RDONLY, dir_fd=current)
            os.close(current)
            current = below
        os.close(current)
    finally:
        os.close(top)
    os.setxattr(scratch, "user.left", b"x")
    reset_directory(str(scratch), 0o700, owner=None)
    assert os.listdir(scratch) == [] and not os.listxattr(scratch)
    assert stat.S_IMODE(scratch.stat().st_mode) == 0o700
    assert (outside / "kept").read_text() == "kept" and sorted(os.listdir(outside)) == ["kept"]
    shutil.rmtree(tmp_path)

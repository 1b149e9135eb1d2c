"""What isolation the host allows: the report a fork server sends at start-up, and ``probe_isolation``.

The mechanisms themselves are applied in ``isolation.py`` (inside the fork server); this module is the grader's
view of them. Missing mechanisms are logged loudly (``forkserver.warn_missing``); ``strict`` refuses to run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import site
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from reward_fns.sandbox.isolation import DISABLE_ENV, disabled_mechanisms, package_root, stale_names
from reward_fns.sandbox.memory import (
    CGROUP_CHARGES,
    CGROUP_ENV,
    CGROUP_NEEDS,
    COUNTED,
    MEMORY_SAMPLE_S,
    remove_cgroup,
)
from reward_fns.sandbox.scratch import remove_tree

MECHANISMS: dict[str, str] = {
    "separate_identity": "a uid the program does not share with the grader (dedicated uid as root, user namespace "
    "otherwise); without it the program can signal and ptrace the grader's other processes",
    "network_namespace": "network namespace; without it the program can open sockets (network and loopback)",
    "mount_namespace": "mount namespace with a minimal read-only root (minimal /dev, size-capped scratch tmpfs); "
    "without it the program can read every world-readable file (datasets with the hidden tests included), write "
    "every file its uid may write (the host's /tmp, /dev/shm and terminals too) and leave files for later tests",
    "pid_namespace": "the worker's pid namespace, whose init is the server; without it a run's processes are found "
    "through the subreaper and process group only, pids carry from run to run, and the program sees and can signal "
    "the grader's processes",
    "private_proc": "a /proc of the worker's pid namespace; without it /proc shows the grader (its environ, "
    "when the uid is shared)",
    "no_new_privs": "no_new_privs; without it setuid binaries could raise privileges",
    "subreaper": "child subreaper; without it double-forked processes escape process-tree cleanup",
    "session_keyring": "a fresh session keyring for the server; without it a program reaches the grader's session "
    "keyring wherever seccomp is missing too",
    "seccomp": "the system-call filter (reward_fns/sandbox/seccomp.py); without it a program can hold memory outside "
    "RLIMIT_AS (memfd, SysV shared memory, message queues), leave kernel keys and IPC objects for later tests, and "
    "reach ptrace, bpf, perf_event_open, userfaultfd and io_uring",
}
"""Every mechanism ``strict`` isolation requires, with what goes missing without it (logged as a warning)."""


@dataclass(frozen=True, slots=True)
class IsolationReport:
    """Which isolation mechanisms this host allows the grader (as the user it runs as)."""

    running_as_root: bool
    separate_identity: bool
    network_namespace: bool
    mount_namespace: bool
    pid_namespace: bool
    private_proc: bool
    no_new_privs: bool
    subreaper: bool
    session_keyring: bool
    seccomp: bool
    memory_cgroup: str = ""
    """The run cgroup (a directory of the grader's cgroup hierarchy) in which the kernel charges every run's memory,
    or "": the server counts it (``memory.py``; not required: both bound the memory no rlimit sees)."""
    memory_cgroup_version: int = 0
    errors: dict[str, str] = dataclasses.field(default_factory=dict)
    """Why each missing mechanism failed (the OS error)."""

    @property
    def missing(self) -> list[str]:
        """Required mechanisms (``MECHANISMS``) that are not available."""
        return [name for name in MECHANISMS if not getattr(self, name)]

    @property
    def complete(self) -> bool:
        return not self.missing

    def summary(self) -> str:
        """One line per mechanism: available or missing (and the consequence), then the optional ones."""
        if self.running_as_root:
            who = "root (dedicated uid per worker)"
        else:
            who = "an ordinary user" + (" (user namespace)" if self.separate_identity else " (no user namespace)")
        lines = [f"sandbox isolation as {who}:"]
        for name, consequence in MECHANISMS.items():
            if getattr(self, name):
                lines.append(f"  [ok]      {name}")
            else:
                reason = f" ({self.errors[name]})" if name in self.errors else ""
                lines.append(f"  [missing] {name}{reason}: {consequence}")
        lines.append(self.memory_accounting())
        return "\n".join(lines)

    def memory_accounting(self) -> str:
        """Which bound of the memory no rlimit sees is in force, and what the node must provide for the exact one."""
        if self.memory_cgroup:
            return (
                f"  [ok]      memory accounting by the kernel: cgroup v{self.memory_cgroup_version} {self.memory_cgroup}"
                f" ({CGROUP_CHARGES})"
            )
        return (
            f"  [counted] memory accounting every {MEMORY_SAMPLE_S * 1000:.0f} ms from /proc ({COUNTED}); no memory cgroup"
            f" ({self.errors.get('memory_cgroup', 'none')}). For the kernel's exact limit the node must provide"
            f" {CGROUP_NEEDS}"
        )

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> IsolationReport:
        """From the fields a server reports; a failed ``unshare`` is named as the reason of each missing one."""
        fields = json.loads(text)
        namespace_error = fields["errors"].pop("namespaces", None)
        report = cls(**fields)
        if namespace_error:
            for name in report.missing:
                report.errors.setdefault(name, namespace_error)
        return report


SERVER_ENTRY = "from reward_fns.sandbox.server import main; main()"
"""``python -S -P -c`` program of a fork server: no ``site`` (fewer modules = a cheaper fork per test), and no
current directory on ``sys.path`` (a ``random.py`` where the grader was started must not replace the stdlib's)."""

_cached_report: IsolationReport | None = None


def probe_isolation() -> IsolationReport:
    """Which mechanisms this host allows, found by a real fork server's set-up in a throw-away process (cached)."""
    global _cached_report
    if _cached_report is None:
        work_dir = make_work_dir("nouscoder-probe-")
        try:
            completed = subprocess.run(
                server_command("--probe", "--work-dir", work_dir),
                capture_output=True,
                text=True,
                env=server_environment(),
                cwd="/",
                check=False,
            )
        finally:
            remove_tree(work_dir)
        if completed.returncode != 0:
            raise RuntimeError(f"isolation probe failed (exit {completed.returncode}): {completed.stderr[-2000:]}")
        _cached_report = IsolationReport.from_json(completed.stdout.strip().splitlines()[-1])
        if _cached_report.memory_cgroup:
            remove_cgroup(_cached_report.memory_cgroup)
    return _cached_report


def server_command(*arguments: str) -> list[str]:
    return [sys.executable, "-S", "-P", "-c", SERVER_ENTRY, *arguments]


def server_environment() -> dict[str, str]:
    """The whole environment of a fork server (and so of every test child): nothing of the grader's leaks in.

    ``PYTHONPATH``: this package's checkout (hidden again from the programs) and the grader's site-packages,
    since the server starts without ``site`` (``.pth`` files are not processed).
    """
    site_dirs = [*site.getsitepackages(), site.getusersitepackages()] if hasattr(site, "getsitepackages") else []
    python_path = [package_root(), *(path for path in site_dirs if os.path.isdir(path))]
    environment = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONPATH": os.pathsep.join(python_path),
    }
    if CGROUP_ENV in os.environ:
        environment[CGROUP_ENV] = os.environ[CGROUP_ENV]
    if DISABLE_ENV in os.environ:
        disabled_mechanisms(os.environ)  # a misspelt name fails here, in the grader, not silently in the server
        environment[DISABLE_ENV] = os.environ[DISABLE_ENV]
    return environment


def make_work_dir(prefix: str) -> str:
    """A worker's private directory: ``runs/`` (0711: the scratch directory of a worker without a mount namespace)
    and ``root/`` (mount point of the sandbox's minimal root). Modes are set explicitly: the grader's umask does
    not matter.

    Named ``<prefix><grader pid>-``: directories left by graders that died without closing their servers (killed,
    or ``os._exit`` in a Ray actor) are removed here by the next grader.
    """
    _remove_stale_work_dirs(prefix)
    work_dir = tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-")
    for name, mode in (("", 0o711), ("runs", 0o711), ("root", 0o755)):
        path = os.path.join(work_dir, name)
        if name:
            os.mkdir(path)
        os.chmod(path, mode)
    return work_dir


def _remove_stale_work_dirs(prefix: str) -> None:
    """Remove our uid's ``<prefix><pid>-*`` directories whose grader process no longer exists."""
    parent = tempfile.gettempdir()
    for name in stale_names(parent, prefix):
        path = os.path.join(parent, name)
        with contextlib.suppress(OSError):
            if os.lstat(path).st_uid == os.geteuid() and not os.path.islink(path):
                remove_tree(path)

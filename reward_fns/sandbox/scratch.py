"""Emptying a scratch directory, whatever a program left in it: used by the fork server between runs (when it has
no scratch tmpfs of its own to replace) and by the grader for the work directories of servers that are gone.

A program may leave a directory tree thousands of levels deep (paths far past PATH_MAX), directories it made
unreadable (chmod 000) and symbolic links to anything: removal is iterative (no recursion limit), one descriptor
at a time with names relative to it, and never follows a link. Nothing of the run may be alive meanwhile.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat

_OPEN_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FS_IOC_SETFLAGS = 0x40086602


def reset_directory(path: str, mode: int, owner: int | None) -> None:
    """Empty ``path`` and reset its own metadata (owner, mode, times, extended attributes and ACLs, inode flags
    such as ``chattr``'s NOATIME/NODUMP), so that nothing a run left -- not even in the directory's inode --
    reaches the next run. Whatever the run left at ``path`` itself (a symbolic link, a file: possible only without
    a mount namespace) is replaced by a directory; symbolic links are removed, never followed."""
    if not _is_real_directory(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.mkdir(path, mode)
    if owner is not None:
        os.chown(path, owner, owner)
    os.chmod(path, mode)
    directory = os.open(path, _OPEN_DIRECTORY)
    try:
        remove_contents(directory)
        with contextlib.suppress(OSError):  # a file system without inode flags
            fcntl.ioctl(directory, _FS_IOC_SETFLAGS, bytes(4))
    finally:
        os.close(directory)
    os.utime(path, ns=(0, 0))
    for attribute in os.listxattr(path):
        with contextlib.suppress(OSError):  # security.* labels are not ours to remove
            os.removexattr(path, attribute)


def _is_real_directory(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def remove_contents(directory: int) -> None:
    """Delete everything in the directory open at ``directory``, also what the program made unreadable (chmod 000
    directories), however deep: iteratively, one descriptor at a time and names relative to it (no recursion, no
    path length limit); symbolic links are removed, never followed. Nothing of the run is alive meanwhile, so
    ``..`` leads back up the way down."""
    current = os.dup(directory)
    pending = [_remove_files(current)]  # per level: the subdirectories still to empty there
    names: list[str] = []  # the path from ``directory`` down to ``current``
    try:
        while True:
            if pending[-1]:
                name = pending[-1].pop()
                os.chmod(name, 0o700, dir_fd=current)  # a directory (listed without following links)
                below = os.open(name, _OPEN_DIRECTORY, dir_fd=current)
                os.close(current)
                current = below
                names.append(name)
                pending.append(_remove_files(current))
            elif names:
                above = os.open("..", _OPEN_DIRECTORY, dir_fd=current)
                os.close(current)
                current = above
                os.rmdir(names.pop(), dir_fd=current)
                pending.pop()
            else:
                return
    finally:
        os.close(current)


def _remove_files(directory: int) -> list[str]:
    """Unlink every entry of ``directory`` but its subdirectories, whose names are returned."""
    with os.scandir(directory) as entries:
        listed = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    for name, is_directory in listed:
        if not is_directory:
            os.unlink(name, dir_fd=directory)
    return [name for name, is_directory in listed if is_directory]


def remove_tree(path: str) -> None:
    """Delete the directory ``path`` and everything in it (``remove_contents``); nothing when it does not exist. A
    link or file at ``path`` itself is unlinked."""
    try:
        directory = os.open(path, _OPEN_DIRECTORY)
    except FileNotFoundError:
        return
    except OSError:  # not a directory: a link or a file
        os.unlink(path)
        return
    try:
        remove_contents(directory)
    finally:
        os.close(directory)
    os.rmdir(path)

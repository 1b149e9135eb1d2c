"""Messages between the grader and a fork server: a ``marshal``-encoded value behind an 8-byte length, over a
Unix socket pair; a message may carry open file descriptors (``SCM_RIGHTS``: a test's input and output files).

``marshal`` rather than ``pickle``: both ends are trusted, it cannot run code, and it costs the lean fork server
no imports. Values are dicts of str/bytes/int/float/bool/None.
"""

from __future__ import annotations

import marshal
import select
import socket
import time
from typing import Any

_HEADER_BYTES = 8
_MAX_FDS = 8


def send(channel: socket.socket, message: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
    """Send ``message``; ``fds`` travel with its first bytes (the receiver gets its own copies)."""
    data = marshal.dumps(message)
    view = memoryview(len(data).to_bytes(_HEADER_BYTES, "little") + data)
    if fds:
        view = view[socket.send_fds(channel, [view], list(fds)) :]
    while view:
        view = view[channel.send(view) :]


def receive(channel: socket.socket, timeout_s: float | None = None) -> tuple[dict[str, Any], list[int]]:
    """The next message and the descriptors sent with it; ``EOFError`` when the other end closed the connection,
    ``TimeoutError`` when nothing complete arrived within ``timeout_s`` (None: wait forever)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    _wait_readable(channel, deadline)
    header, fds, _, _ = socket.recv_fds(channel, _HEADER_BYTES, _MAX_FDS)
    if not header:
        raise EOFError("the other end of the fork-server connection closed it")
    header += _read_exactly(channel, _HEADER_BYTES - len(header), deadline)
    size = int.from_bytes(header, "little")
    return marshal.loads(_read_exactly(channel, size, deadline)), fds


def _wait_readable(channel: socket.socket, deadline: float | None) -> None:
    if deadline is not None and not select.select([channel], [], [], max(0.0, deadline - time.monotonic()))[0]:
        raise TimeoutError("no answer from the fork server in time")


def _read_exactly(channel: socket.socket, size: int, deadline: float | None) -> bytes:
    chunks, remaining = [], size
    while remaining:
        _wait_readable(channel, deadline)
        chunk = channel.recv(min(remaining, 1 << 20))
        if not chunk:
            raise EOFError("the other end of the fork-server connection closed it")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)

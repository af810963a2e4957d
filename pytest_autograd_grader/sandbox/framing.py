"""Length-prefixed frames on a stream socket, used on both sides of the
sandbox. Nothing here is ever unpickled: frames hold JSON or ``records``
bytes."""

from __future__ import annotations

import os
import signal
import socket
import struct

HEADER = struct.Struct("!I")


def frame(data: bytes) -> bytes:
    return HEADER.pack(len(data)) + data


def recv_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket, limit: int | None = None) -> bytes | None:
    head = recv_exact(sock, HEADER.size)
    if head is None:
        return None
    size = HEADER.unpack(head)[0]
    if limit is not None and size > limit:
        return None
    return recv_exact(sock, size)


def describe_status(status: int | None) -> str:
    """How a worker ended, in words for the feedback."""
    if status is None:
        return "the process running it ended unexpectedly"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        names: dict[int, str] = {
            signal.SIGSEGV: "segmentation fault",
            signal.SIGBUS: "bus error",
            signal.SIGABRT: "aborted",
            signal.SIGFPE: "floating point exception",
            signal.SIGILL: "illegal instruction",
            signal.SIGXFSZ: "file size limit exceeded",
            signal.SIGXCPU: "CPU time limit exceeded",
            signal.SIGKILL: "killed",
        }
        words = names.get(number)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"{words}, {name}" if words else f"killed by {name}"
    if os.WIFEXITED(status):
        return f"the process exited with code {os.WEXITSTATUS(status)}, e.g. os._exit() or a fatal error"
    return f"wait status {status}"

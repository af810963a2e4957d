"""The grader's handle on one worker: its socket, its output pipe and pidfds
of its keeper and of the worker, from which the grader reads what the
worker left behind and kills it whole.
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import shutil
import signal
import socket
import time
from pathlib import Path
from typing import Literal

from ..boundary.shortening import ELLIPSIS, cut_point
from ..protocol import CallHeader, CallReply
from . import isolation as iso
from .framing import HEADER, frame
from .keeper import STATUS, children_of
from .zygote import wait_gone

OUTPUT_LIMIT = 4000  # characters of a call's output kept for feedback
KILL_TIMEOUT_S = 5.0


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def _host_pid(pidfd: int) -> int | None:
    try:
        for line in _read(f"/proc/self/fdinfo/{pidfd}").splitlines():
            if line.startswith("Pid:"):
                pid = int(line.split()[1])
                return pid if pid > 0 else None
    except (OSError, ValueError, IndexError):
        pass
    return None


def send_kill(pidfd: int | None) -> None:
    if pidfd is None:
        return
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass


def close_fd(fd: int | None) -> None:
    if fd is not None and fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass


def sweep_uid(uid: int, seconds: float = KILL_TIMEOUT_S) -> bool:
    """Kill every process of ``uid`` until none is left; True when none is.
    Each is pinned with a pidfd and checked again before the signal, so a
    recycled pid is never hit."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pids = iso.pids_of_uid(uid)
        if not pids:
            return True
        for pid in pids:
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                if uid in iso.uids_of(pid):  # still the same process, pinned by the pidfd
                    send_kill(pidfd)
            finally:
                os.close(pidfd)
        time.sleep(0.002)
    return not iso.pids_of_uid(uid)


class Output:
    """Reads a worker's stdout/stderr pipe, keeping only the first part."""

    def __init__(self, fd: int, limit: int = OUTPUT_LIMIT):
        self.fd = fd
        self.kept = bytearray()
        self.limit = limit * 4  # bytes; cut to characters in text()
        self.dropped = 0

    def drain(self) -> bool:
        """Read what is there now; False at end of file."""
        if self.fd < 0:
            return False
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            room = self.limit - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]
            self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        more = self.dropped + max(0, len(text) - OUTPUT_LIMIT)
        if more or self.dropped:
            # cut between words (the bytes kept may have ended inside one), an open quote closed
            text = text[:OUTPUT_LIMIT]
            kept, closers = cut_point(text, len(text))
            text = text[:kept] + ELLIPSIS + closers
            text += f"\n... (output cut: only the first {OUTPUT_LIMIT} characters are shown)"
        return text


class WorkerHandle:
    """The grader's handle on one worker: its socket and output pipe, and
    pidfds of its keeper and of the worker itself."""

    def __init__(
        self,
        sock: socket.socket,
        output_fd: int,
        status_fd: int,
        keeper_fd: int,
        pidns: bool,
        uid: int | None,
        dirs: list[Path],
    ):
        self.sock = sock
        self.output_fd = output_fd
        self.status_fd = status_fd
        self.keeper_fd = keeper_fd
        self.keeper_pid = _host_pid(keeper_fd)
        self.pidns = pidns
        self.uid = uid
        self.dirs = dirs
        self.worker_fd: int | None = None
        self.worker_pid: int | None = None
        self.seq = 0
        self.loaded: set[str] = set()  # modules this worker has imported
        # the threads torch and CUDA started before the worker said it was
        # ready (worker.start_library_threads), when no student code had run:
        # any other thread left after an answer is the student's, whatever it
        # calls itself, and the worker is replaced before the next check
        self.library_threads: set[str] = set()

    def find_worker(self) -> None:
        """The worker is the keeper's only child; pin it with a pidfd."""
        if self.keeper_pid is None:
            return
        children = children_of(self.keeper_pid)
        if len(children) == 1:
            try:
                self.worker_fd = os.pidfd_open(children[0])
                self.worker_pid = children[0]
                self.library_threads = set(os.listdir(f"/proc/{children[0]}/task")) - {str(children[0])}
            except OSError:
                pass

    def left_behind(self) -> bool:
        """Whether the worker holds a thread (beyond the libraries' it had
        when ready) or a process beyond itself: read from /proc by the
        grader, never taken from the worker's word, nor from a thread's name.
        Orphans end up as the keeper's children (it is pid 1 of the
        worker's namespace, or its subreaper)."""
        worker, keeper = self.worker_pid, self.keeper_pid
        if worker is None or keeper is None:
            return True
        try:
            tasks = os.listdir(f"/proc/{worker}/task")
        except OSError:
            return True
        if set(tasks) - {str(worker)} - self.library_threads:
            return True
        if children_of(worker, tasks):
            return True
        return any(pid != worker for pid in children_of(keeper))

    def status(self) -> int | None:
        """The worker's wait status, as its keeper wrote it (None if not)."""
        try:
            data = os.read(self.status_fd, STATUS.size)
        except OSError:
            return None
        return STATUS.unpack(data)[0] if len(data) == STATUS.size else None

    def retire(self, died: bool = False) -> tuple[int | None, bool]:
        """Kill the worker and everything it started; answer its wait status
        (when known) and whether every one of its processes is verifiably
        gone."""
        if died:
            wait_gone(self.keeper_fd, 2.0)  # the keeper writes the status, then ends by itself
        cleaned = False
        if not self.pidns and self.worker_fd is not None:
            # No namespace to collapse: killing the worker makes the keeper
            # kill the orphans it adopted, then end.
            send_kill(self.worker_fd)
            cleaned = wait_gone(self.keeper_fd, 4.0)
        send_kill(self.keeper_fd)
        gone = wait_gone(self.keeper_fd, KILL_TIMEOUT_S)
        if self.uid is not None:
            cleaned = sweep_uid(self.uid)
            if cleaned:
                # the uid is this worker's alone: what it owns in /tmp is the
                # student's, and would outlive the run
                iso.remove_files_of(self.uid)
        verified = gone and (self.pidns or cleaned)
        os.set_blocking(self.status_fd, False)
        status = self.status()
        for fd in (self.status_fd, self.output_fd, self.keeper_fd, self.worker_fd):
            close_fd(fd)
        self.output_fd = -1
        try:
            self.sock.close()
        except OSError:
            pass
        for directory in self.dirs:
            shutil.rmtree(directory, ignore_errors=True)
        return status, verified

    def exchange(self, header: CallHeader, payload: bytes, deadline: float, limit: int) -> Exchanged:
        """Send one request and read its answer, or see the worker end, by
        ``deadline``; a frame over ``limit`` bytes is refused."""
        self.seq += 1
        header = dataclasses.replace(header, seq=self.seq)
        data = frame(json.dumps(header.to_wire()).encode()) + frame(payload)
        self.sock.setblocking(False)
        try:
            return _Round(self.sock, self.output_fd, data, limit, self.seq).until(deadline)
        finally:
            try:
                self.sock.setblocking(True)
            except OSError:
                pass


@dataclasses.dataclass(frozen=True)
class Exchanged:
    """How one request to a worker ended."""

    kind: Literal["ok", "timeout", "eof", "too_large"]  # eof: the worker ended, or broke the protocol
    output: str  # what it printed meanwhile (the first part)
    answer: bytes | None = None  # "ok": the worker's answer bytes
    size: int | None = None  # "too_large": the size of the frame refused


class _Round:
    """One request and its answer on a worker's socket (non-blocking),
    with the worker's output read meanwhile, so that neither pipe fills."""

    def __init__(self, sock: socket.socket, output_fd: int, data: bytes, limit: int, seq: int):
        self.sock, self.output_fd, self.limit, self.seq = sock, output_fd, limit, seq
        self.output = Output(output_fd)
        self.data = memoryview(data)  # what is left to send
        self.buffer = bytearray()  # received, not yet a whole frame
        self.frames: list[bytes] = []
        self.poller = select.poll()
        self.poller.register(sock.fileno(), select.POLLIN | select.POLLOUT)
        self.poller.register(output_fd, select.POLLIN)

    def until(self, deadline: float) -> Exchanged:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return self._end("timeout")
            for fd, events in self.poller.poll(left * 1000):
                ended = self._on(fd, events)
                if ended is not None:
                    return ended

    def _on(self, fd: int, events: int) -> Exchanged | None:
        if fd == self.output_fd:
            if not self.output.drain():
                self.poller.unregister(self.output_fd)
            return None
        if events & select.POLLOUT and self.data and not self._send():
            return Exchanged("eof", self.output.text())
        if events & (select.POLLIN | select.POLLHUP | select.POLLERR):
            return self._receive()
        return None

    def _end(
        self, kind: Literal["ok", "timeout", "eof", "too_large"], answer: bytes | None = None, size: int | None = None
    ) -> Exchanged:
        """The exchange ends: what the worker printed so far comes with it."""
        self.output.drain()
        return Exchanged(kind, self.output.text(), answer, size)

    def _send(self) -> bool:
        """Send what the socket takes now; False when the worker is gone."""
        try:
            sent = self.sock.send(self.data)
        except BlockingIOError:
            sent = 0
        except OSError:
            return False
        self.data = self.data[sent:]
        if not self.data:
            self.poller.modify(self.sock.fileno(), select.POLLIN)
        return True

    def _receive(self) -> Exchanged | None:
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            return None
        except OSError:
            chunk = b""
        if not chunk:
            return self._end("eof")
        self.buffer += chunk
        size = self._take_frames()
        if size is not None:
            return self._end("too_large", size=size)
        return self._answer() if len(self.frames) >= 2 else None

    def _take_frames(self) -> int | None:
        """Move each whole frame from the buffer to ``frames``; the size of
        one over the limit, if one is."""
        while len(self.buffer) >= HEADER.size:
            size: int = HEADER.unpack_from(self.buffer)[0]
            if size > self.limit:
                return size
            if len(self.buffer) < HEADER.size + size:
                break
            self.frames.append(bytes(self.buffer[HEADER.size : HEADER.size + size]))
            del self.buffer[: HEADER.size + size]
        return None

    def _answer(self) -> Exchanged:
        """The answer: a reply header for this request, then the answer
        bytes, and nothing more (the answer was sent after the output was
        flushed, so the pipe already holds all of this call's output)."""
        self.output.drain()
        try:
            reply: CallReply | None = CallReply.from_wire(json.loads(self.frames[0]))
        except (ValueError, RecursionError):  # ProtocolError is a ValueError
            reply = None
        if reply is None or reply.seq != self.seq or self.frames[2:] or self.buffer:
            return Exchanged("eof", self.output.text())
        return Exchanged("ok", self.output.text(), answer=self.frames[1])

"""The keeper: one per worker, forked by the zygote, running no student code.

It puts itself at the top of a PID namespace of its own, with its own
/proc, where the kernel allows it (namespaces.py), fences the worker in
where it can (a /tmp and /dev/shm of its own, only its own staged
submission in sight), reports to the zygote, forks the worker, and when
the worker ends, writes its wait status to the grader and exits, which
takes every process the worker started with it.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import struct
import time
from typing import NoReturn

from ..protocol import SpawnRequest
from .namespaces import libc, mount_own_proc, outermost, unshare_pid_namespace

PR_SET_CHILD_SUBREAPER = 36
STATUS = struct.Struct("!i")  # a worker's wait status, as its keeper writes it to the grader
_KEEPER_PIDNS = False  # set by configure()
_IN_BWRAP = False  # set by configure()


def configure(pidns: bool, in_bwrap: bool) -> None:
    """What the zygote found out once: whether each keeper's PID namespace
    can have its own /proc (where not, keepers make none), and whether it
    runs in bubblewrap (each keeper's namespace then gets a /tmp of its own)."""
    global _KEEPER_PIDNS, _IN_BWRAP
    _KEEPER_PIDNS, _IN_BWRAP = pidns, in_bwrap


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid``, and ``pid`` itself."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _tmp_mb(request: SpawnRequest) -> int:
    """The size of a worker's own /tmp and /dev/shm (the spawn request's
    ``tmp_mb``: bubblewrap's tmpfs size)."""
    size = request.tmp_mb
    return size if type(size) is int and size > 0 else 1024


@functools.cache
def python_dirs() -> tuple[str, ...]:
    """Where this Python imports from (the outermost folders): what a worker
    must still see of a folder that is covered for it (a venv made in
    /tmp). Read once, by the zygote, before any keeper covers anything."""
    import sys

    found = {sys.prefix, sys.exec_prefix, sys.base_prefix, *sys.path}
    return tuple(
        outermost(
            path
            for path in found | {os.path.realpath(p) for p in found if p}
            if path and os.path.isabs(path) and os.path.isdir(path)
        )
    )


def _tmp_devices() -> set[int]:
    """The filesystems of /tmp and /dev/shm: a worker's own are new ones."""
    return {os.stat(path).st_dev for path in ("/tmp", "/dev/shm") if os.path.isdir(path)}


def run_keeper(report_fd: int, sock_fd: int, output_fd: int, status_fd: int, request: SpawnRequest) -> NoReturn:
    """Runs in a fork of the zygote; never returns."""
    in_namespace, fenced = _own_namespace(report_fd, request)
    # what the zygote tells the grader: whether this worker sees only its own
    # files (a sandbox that grades two students at once needs it)
    os.write(report_fd, json.dumps({"fenced": fenced}).encode() + b"\n")
    os.close(report_fd)
    worker = _fork_worker(sock_fd, output_fd, status_fd, request)
    os.close(sock_fd)
    os.close(output_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    if not in_namespace:
        # Orphans of the worker come to us rather than to the zygote.
        try:
            libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    status = _reap_until(worker)
    if status is not None:
        try:
            os.write(status_fd, STATUS.pack(status))
        except OSError:
            pass
    if not in_namespace:
        _kill_children(os.getpid())
    os._exit(0)


def _own_namespace(report_fd: int, request: SpawnRequest) -> tuple[bool, bool]:
    """Become pid 1 of a PID namespace of our own where the kernel lets us,
    and report our pid (the one the zygote sees); answers whether we did,
    and whether the worker is fenced in."""
    # A worker that drops to a uid of its own must stay in our user namespace.
    if not (_KEEPER_PIDNS and unshare_pid_namespace(allow_user_namespace=request.uid is None)):
        os.write(report_fd, json.dumps({"pid": os.getpid(), "pidns": False}).encode() + b"\n")
        return False, False
    child = os.fork()
    if child:
        # We stay outside the new namespace: hand the keeper (its pid 1)
        # over to the zygote, which adopts it as subreaper.
        os.write(report_fd, json.dumps({"pid": child, "pidns": True}).encode() + b"\n")
        os._exit(0)
    # a /tmp of its own, and only its own staged submission, where the
    # worker has a fence to keep it in (bubblewrap, or a uid of its
    # own): not with processes only
    if _IN_BWRAP or request.uid is not None:
        return True, _fence(request)
    mount_own_proc()
    return True, False


def _fence(request: SpawnRequest) -> bool:
    """Give the worker a /tmp and /dev/shm of its own and only its own staged
    submission in sight; whether the latter worked. Ends the keeper where
    the former did not."""
    shared = _tmp_devices()
    fenced = mount_own_proc(
        own_tmp_mb=_tmp_mb(request),
        keep=tuple(str(p) for p in (request.directory, request.private) if p),
        cover=tuple(str(p) for p in request.cover),
        read_only=python_dirs(),
    )
    if _tmp_devices() & shared:
        # the next student on this sandbox would read what this one leaves
        os.write(
            2,
            b"the sandbox could not give a worker a /tmp and /dev/shm of its own: no student code "
            b"runs where another student's could read what it leaves\n",
        )
        os._exit(72)
    return fenced


def _fork_worker(sock_fd: int, output_fd: int, status_fd: int, request: SpawnRequest) -> int:
    worker = os.fork()
    if worker == 0:
        os.close(status_fd)
        try:
            from .worker import worker_main

            worker_main(sock_fd, output_fd, request)
        finally:
            os._exit(70)
    return worker


def _reap_until(worker: int) -> int | None:
    """Reap children (as pid 1 or subreaper, the worker's orphans too) until
    the worker ends; its wait status (None: it was not our child)."""
    while True:
        try:
            pid, code = os.wait()
        except ChildProcessError:
            return None
        except InterruptedError:
            continue
        if pid == worker:
            return code


def children_of(pid: int, tasks: list[str] | None = None) -> list[int]:
    """Direct children of ``pid`` (every thread's: ``tasks`` when the caller
    listed them already), from /proc."""
    found: list[int] = []
    if tasks is None:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return found
    for tid in tasks:
        try:  # os.open: read once per call into student code, where a file object costs more than the read
            fd = os.open(f"/proc/{pid}/task/{tid}/children", os.O_RDONLY)
        except OSError:
            continue
        try:
            data = b""
            while chunk := os.read(fd, 1 << 16):
                data += chunk
            found += [int(p) for p in data.split()]
        except (OSError, ValueError):
            pass
        finally:
            os.close(fd)
    return found


def _kill_children(pid: int, seconds: float = 3.0) -> None:
    """Kill and reap every child of ours until none is left (a child forked
    between two passes is caught by the next)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        children = children_of(pid)
        for child in children:
            kill_group(child)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        if not children:
            time.sleep(0.005)

"""The zygote and the keepers: the sandbox's side that runs no student code.

The zygote imports torch once and forks a keeper per worker on the grader's
request. A keeper puts itself at the top of a PID namespace of its own,
with its own /proc, where the kernel allows it (namespaces.py), forks the
worker, and when the worker ends, writes its wait status to the grader and
exits, which takes every process the worker started with it (however it
detached itself). The grader holds a pidfd of each keeper: killing a worker
and knowing it is gone never depends on anything inside the sandbox
answering. Where the worker is fenced in (bubblewrap, a uid of its own),
the keeper also gives it a /tmp and /dev/shm, IPC and network of its own,
leaves only its own staged submission in sight (namespaces.fence_worker),
and says so: then one zygote may serve several grading processes at once
(a class run's workers, kits.py), each on a control socket of its own; it
ends when the last of them closes its socket. What it imports first:
warm_up.py.
"""

from __future__ import annotations

import functools
import json
import os
import select
import signal
import socket
import struct
import time

from ..protocol import ProtocolError, SpawnReply, SpawnRequest
from .namespaces import PR_SET_DUMPABLE, libc, mount_own_proc, outermost, own_proc_levels, unshare_pid_namespace

PR_SET_CHILD_SUBREAPER = 36
STATUS = struct.Struct("!i")
# set by main(): whether each keeper's PID namespace can have its own /proc
# (namespaces.py); where not, keepers make none
_KEEPER_PIDNS = False
_IN_BWRAP = False  # set by main(): each keeper's namespace then gets a /tmp of its own


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
def _python_dirs() -> tuple[str, ...]:
    """Where this Python imports from (the outermost folders): what a worker
    must still see of a folder that is covered for it (a venv made in
    /tmp). Read once, by the zygote, before any keeper covers anything."""
    import sys

    found = {sys.prefix, sys.exec_prefix, sys.base_prefix, *sys.path}
    return tuple(outermost(path for path in found | {os.path.realpath(p) for p in found if p}
                           if path and os.path.isabs(path) and os.path.isdir(path)))


def _tmp_devices() -> set[int]:
    """The filesystems of /tmp and /dev/shm: a worker's own are new ones."""
    return {os.stat(path).st_dev for path in ("/tmp", "/dev/shm") if os.path.isdir(path)}


def _keeper(report_fd: int, sock_fd: int, output_fd: int, status_fd: int, request: SpawnRequest) -> None:
    """Runs in a fork of the zygote; never returns."""
    # A worker that drops to a uid of its own must stay in our user namespace.
    in_namespace = _KEEPER_PIDNS and unshare_pid_namespace(allow_user_namespace=request.uid is None)
    fenced = False
    if in_namespace:
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
            shared = _tmp_devices()
            fenced = mount_own_proc(own_tmp_mb=_tmp_mb(request),
                                    keep=tuple(str(p) for p in (request.directory, request.private) if p),
                                    cover=tuple(str(p) for p in request.cover),
                                    read_only=_python_dirs())
            if _tmp_devices() & shared:
                # the next student on this sandbox would read what this one leaves
                os.write(2, b"the sandbox could not give a worker a /tmp and /dev/shm of its own: no student code "
                            b"runs where another student's could read what it leaves\n")
                os._exit(72)
        else:
            mount_own_proc()
    else:
        os.write(report_fd, json.dumps({"pid": os.getpid(), "pidns": False}).encode() + b"\n")
    # what the zygote tells the grader: whether this worker sees only its own
    # files (a sandbox that grades two students at once needs it)
    os.write(report_fd, json.dumps({"fenced": fenced}).encode() + b"\n")
    os.close(report_fd)
    worker = os.fork()
    if worker == 0:
        os.close(status_fd)
        try:
            from .worker import worker_main

            worker_main(sock_fd, output_fd, request)
        finally:
            os._exit(70)
    os.close(sock_fd)
    os.close(output_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    if not in_namespace:
        # Orphans of the worker come to us rather than to the zygote.
        try:
            libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    status = None
    while True:  # pid 1 (or subreaper): we also reap the worker's orphans
        try:
            pid, code = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == worker:
            status = code
            break
    if status is not None:
        try:
            os.write(status_fd, STATUS.pack(status))
        except OSError:
            pass
    if not in_namespace:
        _kill_children(os.getpid())
    os._exit(0)


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


class Zygote:
    """Serves spawn requests on each of its control sockets (one per
    grading process it works for); ends once all of them are closed, and
    the keepers asked for on a socket end when it closes."""

    def __init__(self, controls: list[socket.socket]):
        self.controls = list(controls)
        self.keepers: dict[int, socket.socket] = {}  # pid -> the control socket it was asked on

    def reap_all(self) -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.keepers.pop(pid, None)

    def sweep(self) -> None:
        """Kill orphans adopted from keepers that had no PID namespace of
        their own: any child of ours that is not a keeper."""
        me = os.getpid()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in self.keepers or int(entry) == me:
                continue
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == me:
                kill_group(int(entry))
        self.reap_all()

    def spawn(self, request: SpawnRequest, fds: list[int], control: socket.socket) -> tuple[dict, list[int]]:
        sock_fd, output_fd, status_fd = fds
        cpus = request.cpus
        if cpus and all(type(cpu) is int for cpu in cpus):
            # on the asking grading process's CPUs, which wait for this fork:
            # the keeper and its worker inherit them (a worker answers its
            # grading process, never both run at once)
            try:
                os.sched_setaffinity(0, cpus)
            except OSError:
                pass
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                for each in self.controls:
                    each.close()
                os.close(read_end)
                _keeper(write_end, sock_fd, output_fd, status_fd, request)
            finally:
                os._exit(70)
        for fd in (*fds, write_end):
            os.close(fd)
        self.keepers[pid] = control
        with os.fdopen(read_end, "rb") as handle:
            data = handle.read()
        report: dict = {}
        try:
            for line in data.splitlines():
                report.update(json.loads(line))
            keeper = int(report["pid"])
        except (ValueError, KeyError, TypeError, AttributeError):
            return {"error": "the keeper did not start"}, []
        self.keepers[keeper] = control
        try:
            pidfd = os.pidfd_open(keeper)
        except OSError as exc:
            return {"error": f"pidfd_open failed: {exc}"}, []
        reply = SpawnReply(pid=keeper, pidns=bool(report.get("pidns")), fenced=report.get("fenced") is True)
        return reply.to_wire(), [pidfd]

    def close(self, control: socket.socket) -> None:
        """A grading process is gone: its workers go too (one that spins in
        student code never reads that its socket closed)."""
        self.controls.remove(control)
        control.close()
        for pid, asked_on in list(self.keepers.items()):
            if asked_on is control:
                kill_group(pid)
        self.reap_all()

    def serve(self) -> None:
        idle = 0
        while self.controls:
            ready, _, _ = select.select(self.controls, [], [], 1.0)
            self.reap_all()
            if not ready:
                idle += 1
                if idle % 5 == 0:
                    self.sweep()
                continue
            for control in ready:
                self.answer(control)
        for pid in list(self.keepers):
            kill_group(pid)
        self.sweep()

    def answer(self, control: socket.socket) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(control, 1 << 16, 4)
        except OSError:
            data, fds = b"", []
        if not data:
            self.close(control)
            return
        try:
            message = json.loads(data)
        except ValueError:
            message = {}
        op = message.get("op") if type(message) is dict else None
        out_fds: list[int] = []
        if op == SpawnRequest.OP and len(fds) == 3:
            try:
                request = SpawnRequest.from_wire(message)
            except (ProtocolError, TypeError) as exc:
                for fd in fds:
                    os.close(fd)
                reply = {"error": f"bad request: {exc}"}
            else:
                reply, out_fds = self.spawn(request, fds, control)
        elif op == "sweep":
            self.sweep()
            reply = {"ok": True}
        elif op == "ping":  # answered once the imports are done: the zygote is warm
            reply = {"ok": True}
        else:
            for fd in fds:
                os.close(fd)
            reply = {"error": "bad request"}
        try:
            socket.send_fds(control, [json.dumps(reply).encode()], out_fds)
        except OSError:
            self.close(control)
        finally:
            for fd in out_fds:
                os.close(fd)


def main(argv: list[str]) -> None:
    control_fds = [int(fd) for fd in argv[0].split(",")]
    in_bwrap = "bwrap" in argv[1:]
    numpy_only = "numpy-only" in argv[1:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # read by glibc when we started (launch.py's HUGE_MALLOC); no worker needs to see it
    os.environ.pop("GLIBC_TUNABLES", None)
    # bubblewrap already gave us a PID namespace (and its /proc); elsewhere
    # make one, so the zygote's death takes every worker with it.
    global _KEEPER_PIDNS, _IN_BWRAP
    _IN_BWRAP = in_bwrap
    levels = own_proc_levels(1 if in_bwrap else 2)
    _KEEPER_PIDNS = levels == (1 if in_bwrap else 2)
    if not in_bwrap and levels and unshare_pid_namespace():
        pid = os.fork()
        if pid:
            for fd in control_fds:
                os.close(fd)
            os.waitpid(pid, 0)
            os._exit(0)
        mount_own_proc()
    try:
        lib = libc()
        lib.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # keepers whose parent exits come to us
        lib.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no worker may read or write our memory
    except (OSError, AttributeError):
        pass
    controls = [socket.socket(fileno=fd) for fd in control_fds]
    # the worker's own code, imported once here: imported in each worker
    # after its fork, it cost 4.7 ms of a 21.6 ms start (page faults on
    # everything the import machinery touches)
    import resource  # noqa: F401

    from . import worker  # noqa: F401
    from .warm_up import warm_up

    warm_up(numpy_only)
    _python_dirs()  # read here, once: every keeper's fork has it
    Zygote(controls).serve()
    os._exit(0)


def wait_gone(pidfd: int, seconds: float) -> bool:
    """True once the process behind ``pidfd`` has ended (grader side)."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    end = time.monotonic() + seconds
    while True:  # asked once at least: with 0 seconds, whether it has ended now
        left = max(0.0, end - time.monotonic())
        if poller.poll(left * 1000):
            return True
        if time.monotonic() >= end:
            return False

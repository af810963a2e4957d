"""The zygote: with the keepers (keeper.py), the sandbox's side that runs no
student code.

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

import json
import os
import select
import signal
import socket
import time
from typing import Any

from ..protocol import Acknowledged, ControlOp, ProtocolError, Refusal, SpawnReply, SpawnRequest
from . import keeper
from .namespaces import PR_SET_DUMPABLE, libc, mount_own_proc, own_proc_levels, unshare_pid_namespace


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
                keeper.kill_group(int(entry))
        self.reap_all()

    def spawn(
        self, request: SpawnRequest, fds: list[int], control: socket.socket
    ) -> tuple[SpawnReply | Refusal, list[int]]:
        sock_fd, output_fd, status_fd = fds
        _run_on(request.cpus)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                for each in self.controls:
                    each.close()
                os.close(read_end)
                keeper.run_keeper(write_end, sock_fd, output_fd, status_fd, request)
            finally:
                os._exit(70)
        for fd in (*fds, write_end):
            os.close(fd)
        self.keepers[pid] = control
        reply = _keeper_report(read_end)
        if reply is None:
            return Refusal("the keeper did not start"), []
        self.keepers[reply.pid] = control
        try:
            pidfd = os.pidfd_open(reply.pid)
        except OSError as exc:
            return Refusal(f"pidfd_open failed: {exc}"), []
        return reply, [pidfd]

    def close(self, control: socket.socket) -> None:
        """A grading process is gone: its workers go too (one that spins in
        student code never reads that its socket closed)."""
        self.controls.remove(control)
        control.close()
        for pid, asked_on in list(self.keepers.items()):
            if asked_on is control:
                keeper.kill_group(pid)
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
            keeper.kill_group(pid)
        self.sweep()

    def answer(self, control: socket.socket) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(control, 1 << 16, 4)
        except OSError:
            data, fds = b"", []
        if not data:
            self.close(control)
            return
        reply, out_fds = self._reply(data, fds, control)
        try:
            socket.send_fds(control, [json.dumps(reply.to_wire()).encode()], out_fds)
        except OSError:
            self.close(control)
        finally:
            for fd in out_fds:
                os.close(fd)

    def _reply(
        self, data: bytes, fds: list[int], control: socket.socket
    ) -> tuple[SpawnReply | Acknowledged | Refusal, list[int]]:
        """Do what the grader asked; the answer, and the file descriptors
        that go with it."""
        try:
            message = json.loads(data)
        except ValueError:
            message = {}
        op = message.get("op") if type(message) is dict else None
        if op == ControlOp.SPAWN and len(fds) == 3:
            try:
                request = SpawnRequest.from_wire(message)
            except (ProtocolError, TypeError) as exc:
                _close_all(fds)
                return Refusal(f"bad request: {exc}"), []
            return self.spawn(request, fds, control)
        if op == ControlOp.SWEEP:
            self.sweep()
            return Acknowledged(), []
        if op == ControlOp.PING:  # answered once the imports are done: the zygote is warm
            return Acknowledged(), []
        _close_all(fds)
        return Refusal("bad request"), []


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _run_on(cpus: tuple[int, ...]) -> None:
    """On the asking grading process's CPUs, which wait for this fork: the
    keeper and its worker inherit them (a worker answers its grading
    process, never both run at once)."""
    if cpus and all(type(cpu) is int for cpu in cpus):
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:
            pass


def _keeper_report(read_end: int) -> SpawnReply | None:
    """What a keeper reported (its lines, merged), read until it closed its
    end: None where it said no pid."""
    with os.fdopen(read_end, "rb") as handle:
        data = handle.read()
    report: dict[str, Any] = {}
    try:
        for line in data.splitlines():
            report.update(json.loads(line))
        pid = int(report["pid"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return SpawnReply(pid=pid, pidns=bool(report.get("pidns")), fenced=report.get("fenced") is True)


def main(argv: list[str]) -> None:
    control_fds = [int(fd) for fd in argv[0].split(",")]
    in_bwrap = "bwrap" in argv[1:]
    numpy_only = "numpy-only" in argv[1:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # read by glibc when we started (launch.py's HUGE_MALLOC); no worker needs to see it
    os.environ.pop("GLIBC_TUNABLES", None)
    # bubblewrap already gave us a PID namespace (and its /proc); elsewhere
    # make one, so the zygote's death takes every worker with it.
    levels = own_proc_levels(1 if in_bwrap else 2)
    keeper.configure(pidns=levels == (1 if in_bwrap else 2), in_bwrap=in_bwrap)
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
        lib.prctl(keeper.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # keepers whose parent exits come to us
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
    keeper.python_dirs()  # read here, once: every keeper's fork has it
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

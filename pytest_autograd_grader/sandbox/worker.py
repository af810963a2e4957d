"""The worker: the only process where student code runs.

Forked by a keeper, it drops what it may not keep (the grader's uid in
``user`` mode, the ability to gain privileges, resources beyond its
limits), then answers requests one at a time with ``student.call``.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import signal
import socket
import sys
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from ..protocol import CallHeader, CallReply, Ready, SpawnRequest, Stage
from .framing import frame, recv_frame
from .memory import limit_address_space, refuse_unbounded_memory
from .namespaces import libc

FILE_SIZE_LIMIT = 64 << 20  # bytes a worker may write to one file
EXTRA_TASKS = 256  # RLIMIT_NPROC head-room over what its uid already runs
PR_SET_NO_NEW_PRIVS = 38

if TYPE_CHECKING:
    from ..boundary.module_loader import Loader


def _limit(resource_module, name: str, value: int) -> None:
    kind = getattr(resource_module, name, None)
    if kind is None:
        return
    try:
        soft, hard = resource_module.getrlimit(kind)
        if hard != resource_module.RLIM_INFINITY:
            value = min(value, hard)
        resource_module.setrlimit(kind, (value, value))
    except (OSError, ValueError):
        pass


def _drop_privileges(uid: int | None) -> None:
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        if os.getuid() != uid or os.geteuid() != uid:
            os._exit(71)
    try:
        # setuid programs on the system (su, mount, ...) gain nothing for us
        libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    _drop_capabilities()


def _drop_capabilities() -> None:
    """No capability left, not even in the user namespace our keeper made
    for its PID namespace: what the keeper mounted for this worker alone (a
    /tmp of its own, its staged submission over an empty folder) cannot be
    unmounted to see what lies beneath. A namespace the student's code
    makes later holds those mounts locked."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    try:
        header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3
        libc().capset(ctypes.byref(header), data)
    except (OSError, AttributeError):
        pass


class _NoTorch:
    """An import hook of a numpy-only worker: torch cannot be imported, so
    the engine a student builds cannot hand its work to torch.autograd."""

    def __init__(self, message: str):
        self.message = message

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "functorch", "torchvision"):
            raise ImportError(self.message, name=name)
        return None


def start_library_threads(cuda: bool) -> None:
    """Start the threads torch and CUDA keep for the process's life before
    any student code runs: the grader takes the threads it finds once we
    are ready as theirs, and any later one as the student's. autograd starts
    one per device at its first backward, which on a GPU machine also
    starts CUDA's driver; a CUDA context (only where checks run on CUDA: it
    costs a few tenths of a second) adds the driver's own."""
    import torch

    x = torch.ones(1, requires_grad=True)
    (x * 2).sum().backward()
    if cuda and torch.cuda.is_available():
        x = torch.ones(1, device="cuda", requires_grad=True)
        (x * 2).sum().backward()
        torch.cuda.synchronize()


def worker_main(sock_fd: int, output_fd: int, request: SpawnRequest) -> None:
    import resource

    os.setsid()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _drop_privileges(request.uid)
    sock = socket.socket(fileno=sock_fd)
    _redirect_output(output_fd)
    _own_folder(request.private)
    memory_mb = int(request.memory_mb)
    _set_limits(resource, memory_mb, request.tasks)
    _prepare_libraries(resource, request, memory_mb)
    # imported before any student code runs, and held here
    from ..boundary.module_loader import Loader
    from ..boundary.student import call
    from ..boundary.wire import dumps

    fflush = _c_fflush()
    calls = _Calls(Loader(str(request.directory), unique_names=True), call, dumps, memory_mb)
    sock.sendall(frame(json.dumps(Ready().to_wire()).encode()))
    _serve(sock, calls, fflush)


def _redirect_output(output_fd: int) -> None:
    """stdin reads nothing; stdout and stderr go, unbuffered, to the
    grader's output pipe."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(devnull)
    os.close(output_fd)
    sys.stdin = open(0, closefd=False)
    sys.stdout = io.TextIOWrapper(open(1, "wb", buffering=0, closefd=False), errors="replace", write_through=True)
    sys.stderr = io.TextIOWrapper(open(2, "wb", buffering=0, closefd=False), errors="replace", write_through=True)


def _own_folder(private: str | None) -> None:
    """Work, and keep temporary files, in the worker's own folder (where
    none was made for it: a new one in bubblewrap's tmpfs)."""
    folder = private or tempfile.mkdtemp(prefix="worker-", dir="/tmp")
    os.chdir(folder)
    os.environ["TMPDIR"] = os.environ["HOME"] = folder
    tempfile.tempdir = folder


def _set_limits(resource_module: Any, memory_mb: int, tasks: int | None) -> None:
    _limit(resource_module, "RLIMIT_DATA", memory_mb << 20)
    _limit(resource_module, "RLIMIT_FSIZE", FILE_SIZE_LIMIT)
    _limit(resource_module, "RLIMIT_CORE", 0)
    # the grader counted what the uid already runs: our /proc shows only our
    # own PID namespace; the kernel does not enforce RLIMIT_NPROC for root
    if os.getuid() != 0 and type(tasks) is int:
        _limit(resource_module, "RLIMIT_NPROC", tasks + EXTRA_TASKS)


def _prepare_libraries(resource_module: Any, request: SpawnRequest, memory_mb: int) -> None:
    """torch refused (a numpy-only worker) or its threads started, then
    the address space limited."""
    if request.numpy_only:
        sys.meta_path.insert(0, _NoTorch(str(request.no_torch or "torch cannot be imported here")))
    if not request.numpy_only:
        try:
            start_library_threads(request.cuda is True)
        except Exception:
            pass  # CUDA that cannot start here: the checks that need it say so
    # shared mappings and memory files count too (memory.py): measured now,
    # with torch's own mappings made. Not where CUDA runs: how its driver
    # maps memory after its start was never measured under RLIMIT_AS
    if request.cuda is not True:
        limit_address_space(resource_module, memory_mb)
    refuse_unbounded_memory()


def _c_fflush() -> Callable[[None], object] | None:
    """C's fflush, for what student code printed through C's stdio."""
    try:
        import ctypes

        return ctypes.CDLL(None).fflush
    except (OSError, AttributeError):
        return None


@dataclasses.dataclass(frozen=True)
class _Calls:
    """What answers a call: the boundary's ``student.call`` on the loader."""

    loader: Loader
    call: Callable[..., bytes]
    dumps: Callable[[Any], bytes]
    memory_mb: int

    def answer(self, header: CallHeader, payload: bytes) -> bytes:
        seconds = header.seconds
        self.loader.import_seconds = float(seconds) if seconds is not None and type(seconds) in (int, float) else 0.0
        try:
            return self.call(
                self.loader,
                str(header.module),
                str(header.function),
                payload,
                header.op,
                capture=False,
                memory_limit=self.memory_mb,
            )
        except BaseException as exc:  # student code broke the worker's own machinery
            return self.dumps({"stage": Stage.CRASHED, "how": f"the worker broke: {type(exc).__name__}"})


def _serve(sock: socket.socket, calls: _Calls, fflush: Callable[[None], object] | None) -> NoReturn:
    """Answer the grader's calls one at a time, until it closes the socket."""
    me = os.getpid()
    while True:
        data = recv_frame(sock)
        payload = recv_frame(sock) if data is not None else None
        if data is None or payload is None:
            os._exit(0)
        header = CallHeader.from_wire(json.loads(data))
        answer = calls.answer(header, payload)
        if os.getpid() != me:
            os._exit(0)  # a fork made by student code came back here: it never answers
        _flush(fflush)
        sock.sendall(frame(json.dumps(CallReply(seq=header.seq).to_wire()).encode()) + frame(answer))


def _flush(fflush: Callable[[None], object] | None) -> None:
    """All of the call's output into the pipe before its answer is sent."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    if fflush is not None:
        fflush(None)

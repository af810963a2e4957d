"""The worker: the only process where student code runs.

Forked by a keeper, it drops what it may not keep (the grader's uid in
``user`` mode, the ability to gain privileges, resources beyond its
limits), then answers requests one at a time with ``student.call``.
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import sys
import tempfile

from ..protocol import CallHeader, SpawnRequest, Stage
from .framing import frame, recv_frame
from .memory import limit_address_space, refuse_unbounded_memory
from .namespaces import libc

FILE_SIZE_LIMIT = 64 << 20      # bytes a worker may write to one file
EXTRA_TASKS = 256               # RLIMIT_NPROC head-room over what its uid already runs
PR_SET_NO_NEW_PRIVS = 38


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
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

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
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(devnull)
    os.close(output_fd)
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = io.TextIOWrapper(open(1, "wb", buffering=0, closefd=False), errors="replace", write_through=True)
    sys.stderr = io.TextIOWrapper(open(2, "wb", buffering=0, closefd=False), errors="replace", write_through=True)

    private = request.private or tempfile.mkdtemp(prefix="worker-", dir="/tmp")
    os.chdir(private)
    os.environ["TMPDIR"] = os.environ["HOME"] = private
    tempfile.tempdir = private

    memory_mb = int(request.memory_mb)
    _limit(resource, "RLIMIT_DATA", memory_mb << 20)
    _limit(resource, "RLIMIT_FSIZE", FILE_SIZE_LIMIT)
    _limit(resource, "RLIMIT_CORE", 0)
    # the grader counted what the uid already runs: our /proc shows only our
    # own PID namespace; the kernel does not enforce RLIMIT_NPROC for root
    tasks = request.tasks
    if os.getuid() != 0 and type(tasks) is int:
        _limit(resource, "RLIMIT_NPROC", tasks + EXTRA_TASKS)

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
        limit_address_space(resource, memory_mb)
    refuse_unbounded_memory()
    from ..boundary.student import Loader, call
    from ..boundary.wire import dumps

    try:
        import ctypes

        fflush = ctypes.CDLL(None).fflush
    except (OSError, AttributeError):
        fflush = None
    loader = Loader(str(request.directory), unique_names=True)
    me = os.getpid()
    sock.sendall(frame(json.dumps({"ready": True}).encode()))
    while True:
        data = recv_frame(sock)
        payload = recv_frame(sock) if data is not None else None
        if payload is None:
            os._exit(0)
        header = CallHeader.from_wire(json.loads(data))
        seconds = header.seconds
        loader.import_seconds = float(seconds) if type(seconds) in (int, float) else 0.0
        try:
            answer = call(loader, str(header.module), str(header.function), payload, header.op,
                          capture=False, memory_limit=memory_mb)
        except BaseException as exc:  # student code broke the worker's own machinery
            answer = dumps({"stage": Stage.CRASHED, "how": f"the worker broke: {type(exc).__name__}"})
        if os.getpid() != me:
            os._exit(0)  # a fork made by student code came back here: it never answers
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        if fflush is not None:
            fflush(None)
        sock.sendall(frame(json.dumps({"seq": header.seq}).encode()) + frame(answer))

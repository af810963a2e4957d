"""What a zygote imports and exercises once, before it forks its first
keeper: every worker then starts with it in memory (shared with the zygote
until written), instead of importing it after its fork.
"""

from __future__ import annotations

from .namespaces import libc


def warm_up(numpy_only: bool) -> None:
    """The imports of a numpy-only worker (the engine track's) or of a torch
    worker, then ``_freeze``."""
    _warm_up_numpy() if numpy_only else _warm_up()


def _warm_up_numpy() -> None:
    """What a numpy-only worker needs (the engine track): never torch, so
    that student code cannot reach torch.autograd, and start-up is quick."""
    import numpy  # noqa: F401

    from ..boundary import student  # noqa: F401
    from ..boundary.encode import encode
    from ..boundary.wire import dumps, loads

    dumps(encode([numpy.ones(2), 1.5, "s", None]))
    loads(dumps({"args": [1.5, "s", None]}))  # requests hold plain data: no tensor to read
    # what the engine track's calls import, and telling an error imports:
    # here once, not after the fork in every worker
    import traceback  # noqa: F401

    from ..engine_fuzz import interpret, staged  # noqa: F401

    _freeze()


def _warm_up() -> None:
    """Import and exercise what every worker needs, without touching CUDA."""
    import torch

    from ..boundary import student, tracing
    from ..boundary.decode import decode
    from ..boundary.encode import encode
    from ..boundary.wire import dumps, loads
    from ..checking import devices

    torch.set_num_threads(1)  # no pool threads, so any thread a worker has is the student's
    devices.prepare("cuda")  # flags only: TF32 off, no CUDA context is created
    loads(dumps({"x": torch.ones(2, requires_grad=True) * 2, "n": [1, 2.0, "s", None]}))
    decode(encode(torch.ones(2)))
    # The first backward imports torch.fx's symbolic shapes (0.3 s to 1 s):
    # imported here once, not in every worker. No backward runs here: the
    # first one starts a thread per device, which on a GPU machine starts
    # CUDA's driver, and a worker forked after that can use neither CUDA
    # ("initialization error") nor autograd ("fork-based multiprocessing").
    import torch.fx.experimental.symbolic_shapes  # noqa: F401

    x = torch.ones(2, requires_grad=True)
    with student._traced(tracing.recorder()):
        (x * 2).sum()
    try:
        import numpy  # noqa: F401
    except ImportError:
        pass
    _freeze()


def _freeze() -> None:
    """Keep what was imported out of every later garbage collection: the
    workers forked from here collect only what student code makes, and
    their pages of torch's objects stay shared with the zygote."""
    import gc

    gc.freeze()
    _huge_pages()


MADV_COLLAPSE = 25  # Linux 6.1
HUGE = 1 << 21


def _huge_pages() -> int:
    """Back the zygote's anonymous memory (torch's heap after import,
    about 150 MB) with 2 MB pages where the kernel can: a fork then copies,
    and an exit frees, one entry per 2 MB instead of 512, which more than
    halves the kernel's part of each keeper and worker. Answers the MB
    collapsed; older kernels refuse and nothing changes.

    Only where malloc already put most of it on 2 MB pages (launch.py's
    HUGE_MALLOC; glibc 2.35+): collapsing what is left then takes about
    20 ms, where collapsing all of it would take a third of a second, paid
    by every run before its first check."""
    import ctypes

    try:
        with open("/proc/self/smaps_rollup") as handle:
            huge = next((line for line in handle if line.startswith("AnonHugePages:")), "")
        if int(huge.split()[1] if huge else 0) == 0:
            return 0
        madvise = libc().madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps") as handle:
            lines = handle.read().splitlines()
    except (OSError, AttributeError, ValueError, IndexError):
        return 0
    done = 0
    for line in lines:
        fields = line.split()
        if len(fields) < 5 or fields[1] != "rw-p" or (len(fields) > 5 and fields[5] != "[heap]"):
            continue
        low, high = (int(x, 16) for x in fields[0].split("-"))
        start, end = (low + HUGE - 1) & ~(HUGE - 1), high & ~(HUGE - 1)
        if end > start and madvise(start, end - start, MADV_COLLAPSE) == 0:
            done += end - start
    return done >> 20

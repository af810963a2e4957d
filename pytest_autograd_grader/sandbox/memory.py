"""A worker's memory limit (``--grade-memory``) over every kind of memory
it can hold, not only its heap.

RLIMIT_DATA counts private writable mappings only: a worker could hold many
times its limit in shared ones (``mmap(MAP_SHARED|MAP_ANONYMOUS)``, a
mapped ``/dev/shm`` file, SysV shared memory) or in memory files it never
maps (``memfd_create``). Without a memory cgroup per worker, the limit is
made of what every worker can have on any kernel:

* RLIMIT_AS, the address space, which counts every mapping, shared or not:
  the worker's own (torch's) measured once it is ready, plus
  ``--grade-memory`` (not in a worker that started CUDA, whose driver's
  later mappings under RLIMIT_AS were never measured: RLIMIT_DATA there);
* its /tmp and /dev/shm, tmpfs of ``tmp_mb`` (files written there without
  being mapped): a share of the same limit;
* no memory files and no SysV shared memory at all (a seccomp filter answers
  ``ENOMEM``): what they hold is counted by no limit of a process, and
  graded code has no use for them.
"""

from __future__ import annotations

import ctypes
import errno
import platform

from .namespaces import libc

TMP_SHARE = 8  # each of a worker's /tmp and /dev/shm holds 1/TMP_SHARE of its memory limit
TMP_MB = (16, 1024)  # ... within these bounds
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
X32_BIT = 0x40000000
# architecture (AUDIT_ARCH_*) -> the syscalls refused: memfd_create,
# memfd_secret, shmget
REFUSED = {"x86_64": (0xC000003E, (319, 447, 29)), "aarch64": (0xC00000B7, (279, 447, 194))}


def tmp_mb(memory_mb: int) -> int:
    """The size of each of a worker's own /tmp and /dev/shm."""
    return max(TMP_MB[0], min(TMP_MB[1], int(memory_mb) // TMP_SHARE))


def address_space() -> int:
    """Bytes of address space this process maps now (VmSize)."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) << 10
    return 0


def limit_address_space(resource_module, memory_mb: int) -> bool:
    """RLIMIT_AS at what the worker maps now plus ``memory_mb``; False
    where it could not be set."""
    try:
        value = address_space() + (int(memory_mb) << 20)
        soft, hard = resource_module.getrlimit(resource_module.RLIMIT_AS)
        if hard != resource_module.RLIM_INFINITY:
            value = min(value, hard)
        resource_module.setrlimit(resource_module.RLIMIT_AS, (value, value))
    except (OSError, ValueError, AttributeError):
        return False
    return True


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def _program(arch: int, refused: tuple[int, ...], x32: bool) -> list[tuple[int, int, int, int]]:
    """The BPF program: another architecture's syscalls (i386's on x86_64),
    x32's and ``refused`` answer ENOMEM; everything else is allowed."""
    ld_abs, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    deny = (ret, 0, 0, RET_ERRNO | errno.ENOMEM)
    checks = [(jeq, len(refused) - i, 0, nr) for i, nr in enumerate(refused)]
    lead = [(ld_abs, 0, 0, 0)] + ([(jset, len(checks) + 1, 0, X32_BIT)] if x32 else [])
    body = lead + checks + [(ret, 0, 0, RET_ALLOW), deny]
    return [(ld_abs, 0, 0, 4), (jeq, 1, 0, arch), deny] + body


def refuse_unbounded_memory() -> bool:
    """Install the seccomp filter (after PR_SET_NO_NEW_PRIVS); False where
    this machine's architecture is not known here or the kernel refused."""
    known = REFUSED.get(platform.machine())
    if known is None:
        return False
    arch, refused = known
    code = _program(arch, refused, x32=platform.machine() == "x86_64")
    filters = (_Filter * len(code))(*[_Filter(*op) for op in code])
    program = _Program(len(code), filters)
    try:
        return libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) == 0
    except (OSError, AttributeError):
        return False

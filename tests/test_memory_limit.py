"""--grade-memory counts every kind of memory a worker can hold, not only
its heap: shared anonymous mappings, memory files, a file in /dev/shm and
SysV shared memory each end at the limit with a message that says so, and
the grader goes on (sandbox/memory.py)."""

from __future__ import annotations

import sys

import pytest
from test_isolation import require_isolation

from pytest_autograd_grader.boundary.submission import Budget, Submission
from pytest_autograd_grader.outcomes import StudentFailure
from pytest_autograd_grader.sandbox import SandboxExecutor, isolation_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox needs Linux")

LIMIT_MB = 300

HOARD = """
import ctypes
import mmap
import os

CHUNK = b"x" * (1 << 20)


def shared_mapping(mb):
    held = mmap.mmap(-1, mb << 20, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
    for offset in range(0, mb << 20, 4096):
        held[offset] = 1
    return "held"


def memory_file(mb):
    fd = os.memfd_create("hoard")
    for _ in range(mb):
        os.write(fd, CHUNK)
    return "held"


def memory_files(mb):
    fds = [os.memfd_create("hoard") for _ in range(mb // 32)]  # under the file size limit each
    for fd in fds:
        for _ in range(32):
            os.write(fd, CHUNK)
    return "held"


def dev_shm_file(mb):
    with open("/dev/shm/hoard", "wb") as handle:
        for _ in range(mb):
            handle.write(CHUNK)
    return "held"


def sysv_segment(mb):
    lib = ctypes.CDLL(None, use_errno=True)
    lib.shmget.restype = ctypes.c_int
    segment = lib.shmget(0, ctypes.c_size_t(mb << 20), 0o1600)
    if segment < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    lib.shmat.restype = ctypes.c_void_p
    address = lib.shmat(segment, None, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    ctypes.memset(address, 1, mb << 20)
    return "held"


def modest():
    return len(bytearray(50 << 20))
"""


@pytest.mark.parametrize("mode", ["bwrap", "user"])
def test_memory_the_limit_did_not_count_ends_at_the_limit(tmp_path, mode: str):
    require_isolation(mode)
    (tmp_path / "student.py").write_text(HOARD)
    executor = SandboxExecutor(isolation_for(mode), memory_mb=LIMIT_MB)
    try:
        student = Submission(executor, tmp_path, "student", Budget(120.0))
        for kind in ("shared_mapping", "memory_file", "memory_files", "dev_shm_file", "sysv_segment"):
            with pytest.raises(StudentFailure) as failed:
                getattr(student, kind)(3 * LIMIT_MB)
            assert f"ran out of memory (limit {LIMIT_MB} MB)" in str(failed.value), (kind, str(failed.value))
        assert student.modest() == 50 << 20  # within the limit, code runs as before
    finally:
        executor.close()

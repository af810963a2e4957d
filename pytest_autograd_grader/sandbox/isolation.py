"""Which operating-system boundary fences student code off, and how the
sandbox is launched behind it (``--grade-isolation``).

* ``bwrap``: bubblewrap. The zygote and every worker see a read-only view
  made of the system's libraries, the Python installation and the grader's
  package only (the checks, the reports, the grader's tmp directories and
  everything else on disk are simply not there), a private tmpfs, their own
  PID namespace and ``/proc``, no network and no terminal. A grader running
  as root starts bubblewrap as a fresh unprivileged uid, so even the files
  that are visible are seen as by a stranger.
* ``user``: for a grader running as root where bubblewrap cannot run (often
  inside Docker). Each worker drops to a uid of its own, so it cannot write
  root's files, open root's ``/proc/*/mem`` or signal root's processes, and
  every process of that uid is killed when the worker is recycled.
* ``process``: processes only; student code runs as the grader's own user.
  The header and the reports say which protections are then missing.
"""

from __future__ import annotations

import os
import random
import shutil
import site
import stat
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from ..messages import msg

MODES = ("auto", "bwrap", "user", "process")
PACKAGE_DIR = Path(__file__).resolve().parent.parent
# Inside a bubblewrap sandbox: where the grader's package and the staged
# copies of submissions appear.
SANDBOX_LIB = "/run/grader/lib"
SANDBOX_STAGE = "/run/grader/stage"
# uids handed to student code: far above any a distribution assigns, so no
# file on disk belongs to them.
UID_RANGE = (1_500_000_000, 2_000_000_000)
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "passwd", "group",
             "hosts", "alternatives", "os-release")
# Environment variables a worker may inherit: anything else (tokens of a CI
# runner, say) would be readable by student code and could end up in its
# printed output, which visible feedback shows.
PASS_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
            "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "PYTORCH_CUDA_ALLOC_CONF", "TZ")
TMPFS_BYTES = 1 << 30  # a worker's writable space lives in memory: cap it
SINGLE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


class Unavailable(Exception):
    """The isolation mode asked for cannot work here; the message says why
    and what to do."""


@dataclass(frozen=True)
class Isolation:
    mode: str                  # bwrap, user or process
    uid: int | None = None     # bwrap: the uid bubblewrap runs as (None: the grader's own)
    missing: tuple[str, ...] = field(default=())  # protections this mode lacks, in words
    fix: str = ""              # how to get them
    reason: str = ""           # why auto did not pick a stronger mode


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def allocate_uid() -> int:
    """A uid no process uses and no account names."""
    taken = set()
    try:
        with open("/etc/passwd") as handle:
            taken = {int(line.split(":")[2]) for line in handle if line.count(":") >= 3 and line.split(":")[2].isdigit()}
    except OSError:
        pass
    rng = random.SystemRandom()
    while True:
        uid = rng.randrange(*UID_RANGE)
        if uid not in taken and not pids_of_uid(uid):
            return uid


def uids_of(pid: int) -> set[int]:
    """The real, effective, saved and filesystem uids of a live process
    (empty when it is gone or a zombie). Read from /proc/PID/status: a
    non-dumpable process's /proc entry is owned by root, so stat() would lie."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            text = handle.read()
    except OSError:
        return set()
    uids: set[int] = set()
    for line in text.splitlines():
        if line.startswith("State:") and line.split()[1:2] in (["Z"], ["X"]):
            return set()
        if line.startswith("Uid:"):
            uids = {int(u) for u in line.split()[1:]}
    return uids


def pids_of_uid(uid: int) -> list[int]:
    """Every live process that has ``uid`` among its uids."""
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and uid in uids_of(int(e))]


def python_paths() -> list[str]:
    """The directories the sandboxed interpreter needs: its prefixes,
    standard library, site-packages, and the binary's folder both as named
    (the sandbox runs sys.executable by that name, which may be a link from a
    folder no prefix covers) and where the binary really is."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable)), os.path.dirname(os.path.abspath(sys.executable))}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            paths.add(path)
    for path in site.getsitepackages() + [site.getusersitepackages()]:
        paths.add(path)
    for path in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if path:
            paths.add(path)
    existing = sorted(os.path.realpath(p) for p in paths if p and os.path.isdir(p))
    # keep only the outermost of nested directories
    kept: list[str] = []
    for path in existing:
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


def unreadable_by_others(paths: list[str]) -> str | None:
    """The first directory on the way to ``paths`` that a user with no
    groups of its own cannot enter, or None when all can be read."""
    for path in paths:
        current = Path(path)
        for directory in [*reversed(current.parents), current]:
            try:
                mode = os.stat(directory).st_mode
            except OSError:
                return str(directory)
            if not mode & stat.S_IXOTH or (directory == current and not mode & stat.S_IROTH):
                return str(directory)
    return None


def _needed_paths() -> list[str]:
    return [p for p in python_paths() if not p.startswith("/usr/")] + [str(PACKAGE_DIR)]


def worker_env(python_path: str, home: str) -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
           "PYTHONPATH": python_path, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1", **SINGLE_THREAD}
    for name in PASS_ENV:
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def bwrap_command(stage_dir: str) -> list[str]:
    """bubblewrap's arguments for the sandbox, up to the ``--``."""
    args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--proc", "/proc", "--dev", "/dev", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp",
            "--size", str(TMPFS_BYTES), "--tmpfs", "/dev/shm",
            "--tmpfs", "/run", "--chdir", "/tmp"]
    for top in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{top}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in ETC_FILES:
        if os.path.exists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    if os.path.isdir("/sys"):
        args += ["--ro-bind", "/sys", "/sys"]
    for path in python_paths():
        if not path.startswith("/usr/"):
            args += ["--ro-bind", path, path]
    for device in sorted(Path("/dev").glob("nvidia*")):
        args += ["--dev-bind", str(device), str(device)]
    args += ["--ro-bind", str(PACKAGE_DIR), f"{SANDBOX_LIB}/{PACKAGE_DIR.name}",
             "--ro-bind", stage_dir, SANDBOX_STAGE,
             "--remount-ro", "/"]  # the root bubblewrap built; /tmp and /dev/shm stay writable
    return args


def _probe_bwrap(uid: int | None) -> str | None:
    """None when bubblewrap starts a sandbox here, else why not."""
    import tempfile

    kwargs = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
    with tempfile.TemporaryDirectory(prefix="grade-probe-") as empty:
        os.chmod(empty, 0o711)
        # the interpreter the zygote will be, not a shell: a Python that the
        # sandbox cannot run is found here, where auto can still fall back
        command = bwrap_command(empty) + ["--", sys.executable, "-I", "-S", "-c", ""]
        try:
            done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, timeout=20, **kwargs)
        except (OSError, subprocess.SubprocessError) as exc:
            return msg("isolation.bwrap_failed", detail=str(exc))
    if done.returncode != 0:
        text = done.stderr.decode(errors="replace").strip().splitlines()
        return msg("isolation.bwrap_failed", detail=text[-1] if text else f"exit status {done.returncode}")
    return None


def choose(setting: str) -> Isolation:
    """The isolation for ``--grade-isolation setting``; ``auto`` picks the
    strongest that works. An explicit mode that cannot work raises
    ``Unavailable``."""
    setting = (setting or "auto").lower()
    reasons: list[str] = []
    root = _is_root()
    if setting in ("auto", "bwrap"):
        problem = None
        uid = None
        if not sys.platform.startswith("linux"):
            problem = msg("isolation.needs_linux", what="bubblewrap")
        elif shutil.which("bwrap") is None:
            problem = msg("isolation.no_bwrap")
        elif root:
            blocked = unreadable_by_others(_needed_paths())
            if blocked:
                problem = msg("isolation.unreadable", path=blocked)
            else:
                uid = allocate_uid()
        if problem is None:
            problem = _probe_bwrap(uid)
        if problem is None:
            return Isolation("bwrap", uid=uid)
        if setting == "bwrap":
            raise Unavailable(msg("usage.isolation_unavailable", mode="bwrap", problem=problem))
        reasons.append(problem)
    if setting in ("auto", "user"):
        problem = None
        if not sys.platform.startswith("linux"):
            problem = msg("isolation.needs_linux", what="a uid per worker")
        elif not root:
            problem = msg("isolation.user_needs_root")
        else:
            blocked = unreadable_by_others(_needed_paths())
            if blocked:
                problem = msg("isolation.unreadable", path=blocked)
        if problem is None:
            missing = (msg("isolation.missing.read"), msg("isolation.missing.network"))
            return Isolation("user", missing=missing, fix=msg("isolation.fix.bwrap"), reason="; ".join(reasons))
        if setting == "user":
            raise Unavailable(msg("usage.isolation_unavailable", mode="user", problem=problem))
        reasons.append(problem)
    if setting not in MODES:
        raise Unavailable(msg("usage.isolation", value=setting))
    return Isolation("process", missing=(msg("isolation.missing.own_user"),), fix=msg("isolation.fix.process"),
                     reason="; ".join(reasons))

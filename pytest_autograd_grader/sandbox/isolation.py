"""Which operating-system boundary fences student code off, and how the
sandbox is launched behind it (``--grade-isolation``).

* ``bwrap``: bubblewrap. The zygote and every worker see a read-only view
  made of the system's libraries, the Python installation and the grader's
  package only (the checks, the reports, the grader's tmp directories and
  everything else on disk are simply not there), a private tmpfs, their own
  PID namespace and ``/proc``, no network and no terminal. A grader running
  as root starts bubblewrap as a fresh unprivileged uid, so even the files
  that are visible are seen as by a stranger; what that uid cannot reach
  (Python under a 0700 home) root hands over first (``handoff.py``).
* ``user``: for a grader running as root where bubblewrap cannot run (often
  inside Docker). Each worker drops to a uid of its own, so it cannot write
  root's files, open root's ``/proc/*/mem`` or signal root's processes, and
  every process of that uid is killed when the worker is recycled; where
  the kernel allows, it has no network either (namespaces.fence_worker).
* ``process``: processes only; student code runs as the grader's own user.
  The header and the reports say which protections are then missing.
"""

from __future__ import annotations

import os
import random
import shlex
import shutil
import site
import stat
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..i18n import msg
from .namespaces import NO_PIDNS_ENV, outermost, within

MODES = ("auto", "bwrap", "user", "process")
PACKAGE_DIR = Path(__file__).resolve().parent.parent
# Inside a bubblewrap sandbox: where the grader's package and the staged
# copies of submissions appear.
SANDBOX_LIB = "/run/grader/lib"
SANDBOX_STAGE = "/run/grader/stage"
# uids handed to student code: far above any a distribution assigns, so no
# file on disk belongs to them.
UID_RANGE = (1_500_000_000, 2_000_000_000)
ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "nsswitch.conf",
    "passwd",
    "group",
    "hosts",
    "alternatives",
    "os-release",
)
# Environment variables a worker may inherit: anything else (tokens of a CI
# runner, say) would be readable by student code and could end up in its
# printed output, which visible feedback shows.
PASS_ENV = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "PYTORCH_CUDA_ALLOC_CONF",
    "TZ",
)
TMPFS_BYTES = 1 << 30  # a worker's writable space lives in memory: cap it
# what a numpy-only sandbox (the engine track) does not contain
TORCH_PACKAGES = ("torch", "functorch", "torchgen")
# where any user may write (the FHS's): what a worker's uid leaves there is
# removed after it (user mode)
SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
SINGLE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


class Unavailable(Exception):
    """The isolation mode asked for cannot work here; the message says why
    and what to do."""


@dataclass(frozen=True)
class Fallback:
    """A stronger mode ``auto`` did not pick: why not, and the one thing
    that would make it work here."""

    mode: str
    problem: str
    fix: str = ""


@dataclass(frozen=True)
class Isolation:
    mode: str  # bwrap, user or process
    uid: int | None = None  # bwrap: the uid bubblewrap runs as (None: the grader's own)
    missing: tuple[str, ...] = field(default=())  # protections this mode lacks, in words
    fallbacks: tuple[Fallback, ...] = field(default=())  # stronger modes auto passed over


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def allocate_uid() -> int:
    """A uid no process uses and no account names."""
    taken = set()
    try:
        with open("/etc/passwd") as handle:
            taken = {
                int(line.split(":")[2]) for line in handle if line.count(":") >= 3 and line.split(":")[2].isdigit()
            }
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


def tasks_of_user(uid: int) -> int:
    """Processes and threads that ``uid`` runs, which RLIMIT_NPROC counts."""
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as handle:
                    fields = dict(line.split(":", 1) for line in handle if ":" in line)
                if str(uid) == fields.get("Uid", "").split()[0]:
                    count += int(fields.get("Threads", "1"))
            except (OSError, ValueError, IndexError):
                pass
    return count


def remove_files_of(uid: int, folders=SHARED_TMP, depth: int = 4) -> None:
    """Remove what ``uid`` (a worker's own, no longer running anything)
    left in the machine's shared temporary folders: every entry it owns,
    with what is inside, also within folders of others that anyone may
    write into, ``depth`` levels down. Links are removed, never followed."""
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_uid == uid:
                if stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    try:
                        os.unlink(entry.path)
                    except OSError:
                        pass
            elif depth > 1 and stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_IWOTH:
                remove_files_of(uid, (entry.path,), depth - 1)


def _link_hops(executable: str) -> list[str]:
    """The folder of ``executable`` and of every link on the way to the
    real binary (/opt/app/bin/python -> a venv's python -> /usr/bin/python3.11):
    the sandbox must resolve each hop."""
    folders = []
    path = os.path.abspath(executable)
    for _ in range(40):  # the kernel's own limit on links followed
        folders.append(os.path.dirname(path))
        if not os.path.islink(path):
            break
        path = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path)))
    folders.append(os.path.dirname(os.path.realpath(executable)))
    return folders


def python_binds() -> list[tuple[str, str]]:
    """(directory on the host, where the sandbox sees it) for everything the
    sandboxed interpreter needs: its prefixes, standard library,
    site-packages and the folders of the binary and of each link to it, each
    where it really is and, when reached through a linked folder (a venv
    behind one), also at the name the interpreter is started by and finds
    its prefix from."""
    named = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *_link_hops(sys.executable)}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            named.add(path)
    named.update(site.getsitepackages() + [site.getusersitepackages()])
    named.update(p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p)
    named = {os.path.abspath(p) for p in named if p and os.path.isdir(p)}
    binds = [(path, path) for path in outermost(os.path.realpath(p) for p in named)]
    covered = [dest for _, dest in binds]
    for path in outermost(p for p in named if p != os.path.realpath(p)):
        if not within(path, covered):
            binds.append((os.path.realpath(path), path))
    return [(source, dest) for source, dest in binds if dest != "/usr" and not dest.startswith("/usr/")]


def python_paths() -> list[str]:
    """The host directories of ``python_binds``."""
    return sorted({source for source, _ in python_binds()})


def blocked_dirs(paths: list[str]) -> dict[str, str]:
    """The directories on the way to ``paths`` that a user with no groups of
    its own cannot pass (``"x"`` missing), or, for ``paths`` themselves,
    cannot list (``"rx"``), outermost first; empty when all can be reached."""
    blocked: dict[str, str] = {}
    for path in paths:
        current = Path(path)
        for directory in [*reversed(current.parents), current]:
            try:
                mode = os.stat(directory).st_mode
            except OSError:
                blocked.setdefault(str(directory), "rx")
                break
            leaf = directory == current
            need = stat.S_IXOTH | (stat.S_IROTH if leaf else 0)
            if mode & need != need:
                bits = "rx" if leaf and not mode & stat.S_IROTH else "x"
                if blocked.get(str(directory)) != "rx":
                    blocked[str(directory)] = bits
    return blocked


def chmod_fix(blocked: dict[str, str]) -> str:
    """The one command that opens ``blocked`` to other users, no wider than
    needed: passing through (o+x), and listing (o+rx) where the sandbox
    reads the folder itself."""
    parts = []
    for bits in ("x", "rx"):
        names = [shlex.quote(d) for d, need in blocked.items() if need == bits]
        if names:
            parts.append(f"chmod o+{bits} " + " ".join(names))
    return " && ".join(parts)


def _curriculum_link() -> tuple[str, str] | None:
    """(the folder, the link's target as written) where the package's
    curriculum/ is a symbolic link (a source checkout: it links to
    exercises/, whose given modules a worker loads, see boundary/given.py);
    None where it is a folder (an installed wheel)."""
    link = PACKAGE_DIR / "curriculum"
    if not link.is_symlink():
        return None
    return os.path.realpath(link), os.readlink(link)


def needed_paths() -> list[str]:
    """What a worker of another uid reads: the interpreter's files and the
    grader's package (its curriculum too, where that is a link)."""
    curriculum = _curriculum_link()
    return python_paths() + [str(PACKAGE_DIR)] + ([curriculum[0]] if curriculum else [])


def sandbox_parent(for_other_uids: bool) -> Path:
    """Where the sandbox's own directory (staged submissions, workers'
    directories, the zygote's log) is made. For a sandbox whose processes run
    as other uids, the first temporary directory they can reach, whatever
    TMPDIR says: a 0700 folder from ``mktemp -d`` (or pytest's own) would
    lock every worker out."""
    default = Path(tempfile.gettempdir())
    if not for_other_uids:
        return default
    for candidate in (default, Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")):
        if candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK) and not blocked_dirs([str(candidate)]):
            return candidate
    raise Unavailable(msg("isolation.no_shared_tmp", tmp=str(default)))


def worker_env(python_path: str, home: str) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "PYTHONPATH": python_path,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        **SINGLE_THREAD,
    }
    for name in PASS_ENV:
        if name in os.environ:
            env[name] = os.environ[name]
    if os.environ.get(NO_PIDNS_ENV):  # the keepers' fallback, forced (the tests use it)
        env[NO_PIDNS_ENV] = "1"
    return env


def sandbox_binds(stage_dir: str) -> list[tuple[str, str]]:
    """(host directory, where the sandbox sees it) for what bubblewrap binds
    read-only besides the system: the interpreter, the grader's package and
    the staged submissions."""
    package = f"{SANDBOX_LIB}/{PACKAGE_DIR.name}"
    binds = [*python_binds(), (str(PACKAGE_DIR), package), (stage_dir, SANDBOX_STAGE)]
    curriculum = _curriculum_link()
    if curriculum:  # where the link points from the package's place in the sandbox
        binds.append((curriculum[0], os.path.normpath(os.path.join(package, curriculum[1]))))
    return binds


def torch_dirs(binds: list[tuple[str, str]]) -> list[str]:
    """Where a sandbox with ``binds`` would see torch's packages (torch,
    functorch, torchgen), found without importing them; a numpy-only
    sandbox mounts an empty, read-only folder over each."""
    import importlib.util

    found = []
    for name in TORCH_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            real = os.path.realpath(location)
            for source, dest in binds + [("/usr", "/usr")]:
                if within(real, [source]):
                    found.append(dest + real[len(source.rstrip("/")) :])
    return sorted(set(found))


def bwrap_command(binds: list[tuple[str, str]], hidden: Sequence[str] = ()) -> list[str]:
    """bubblewrap's arguments for the sandbox, up to the ``--``; ``binds``
    as ``sandbox_binds`` gives them (their sources possibly handed over,
    see handoff.py); ``hidden``: folders under them the sandbox sees empty."""
    args = [
        shutil.which("bwrap") or "bwrap",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(TMPFS_BYTES),
        "--tmpfs",
        "/tmp",
        "--size",
        str(TMPFS_BYTES),
        "--tmpfs",
        "/dev/shm",
        "--tmpfs",
        "/run",
        "--chdir",
        "/tmp",
    ]
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
    for device in sorted(Path("/dev").glob("nvidia*")):
        args += ["--dev-bind", str(device), str(device)]
    for source, dest in binds:
        args += ["--ro-bind", source, dest]
    for path in hidden:
        args += ["--perms", "0555", "--size", "4096", "--tmpfs", path, "--remount-ro", path]
    # read-only, as the root bubblewrap built: the sandbox lives for a whole
    # class, so a file a student's code left in /run or /dev would be read by
    # the students after it; /tmp and /dev/shm (mounts of their own) stay
    # writable, and each keeper gives its worker empty ones (namespaces.py)
    return args + ["--remount-ro", "/run", "--remount-ro", "/dev", "--remount-ro", "/"]

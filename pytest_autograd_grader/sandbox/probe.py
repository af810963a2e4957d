"""Which isolation a run gets (``--grade-isolation``), found by trying.

A mode is chosen only once a real worker, started the way grading starts
one (the mode's launcher, a zygote, a keeper, the worker's own uid and
directories, a staged module imported and called), has answered; a check
of paths or versions alone would let ``auto`` pick a mode that then cannot
start a single worker. The probe uses the numpy-only zygote, which starts
in a fraction of torch's import and is the one the engine track needs
anyway: it is kept warm when the probe succeeds. What the torch zygote
needs beyond it (torch's files, readable by the worker's uid) the probe
checks by reading them.

``auto`` tries bubblewrap, then a uid per worker (as root), then
processes only; each stronger mode it passes over is kept with the reason
and the one step that would make it work here, for the header and the
reports.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from ..i18n import msg
from ..outcomes import GraderError
from ..protocol import Op, Stage
from . import isolation as iso
from .isolation import Fallback, Isolation, Unavailable
from .launch import SPAWN_TIMEOUT_S, sandbox_of

PROBE_TIMEOUT_S = 60.0
PROBE_MODULE = '''
import socket


def ready(paths):
    """What every worker does: import this staged module, write in its own
    directory, and read torch's files (the torch zygote imports them).
    Says too whether it reaches a network."""
    with open("probe.txt", "w") as handle:
        handle.write("ok")
    for path in paths:
        with open(path, "rb") as handle:
            handle.read(1)
    return "ok, networked" if _networked() else "ok"


def _networked():
    """A network namespace of the worker's own has a loopback only, down."""
    if any(name != "lo" for _, name in socket.if_nameindex()):
        return True
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("127.0.0.1", 9))  # sends nothing: only routes
        return True
    except OSError:
        return False
    finally:
        probe.close()
'''
NETWORKED = "ok, networked"


def _missing(mode: str, networked: bool) -> tuple[str, ...]:
    # only bubblewrap's sandbox can leave torch out of the engine track's
    # workers; a uid's keeper gives its worker no network where the kernel
    # lets it make a network namespace (not in Docker's default profile)
    if mode == "user":
        network = (msg("isolation.missing.network"),) if networked else ()
        return (msg("isolation.missing.read"), *network, msg("isolation.missing.numpy_only"))
    if mode == "process":
        return (msg("isolation.missing.own_user"), msg("isolation.missing.numpy_only"))
    return ()


def _static(mode: str) -> Fallback | None:
    """Why ``mode`` cannot work here, when that is known without trying."""
    if not sys.platform.startswith("linux"):
        what = "bubblewrap" if mode == "bwrap" else "a uid per worker"
        return Fallback(mode, msg("isolation.needs_linux", what=what)) if mode != "process" else None
    if mode == "bwrap" and shutil.which("bwrap") is None:
        return Fallback(mode, msg("isolation.no_bwrap"), msg("isolation.fix.install_bwrap"))
    if mode == "user":
        if not iso.is_root():
            return Fallback(mode, msg("isolation.user_needs_root"))
        blocked = iso.blocked_dirs(iso.needed_paths())
        if blocked:
            return Fallback(mode, msg("isolation.unreachable", paths=", ".join(blocked)), iso.chmod_fix(blocked))
    return None


def _fix(mode: str, problem: str) -> str:
    """The step that makes ``mode`` work, from what its probe said."""
    if mode == "bwrap" and "handoff:" in problem:
        # root could not hand the sandbox what its uid cannot reach (no
        # mount rights, in a container): opening the path is the way
        return iso.chmod_fix(iso.blocked_dirs(iso.needed_paths()))
    if mode == "bwrap" and "Permission denied" in problem:
        # handed over or not, a folder closed in itself stays closed to the uid
        closed = {d: bits for d, bits in iso.blocked_dirs(iso.needed_paths()).items() if bits == "rx"}
        if closed:
            return iso.chmod_fix(closed)
    if mode == "bwrap" and any(word in problem.lower() for word in ("namespace", "uid map")):
        return msg("isolation.fix.userns")
    if mode == "user" and "PermissionError" in problem:
        return iso.chmod_fix(iso.blocked_dirs(iso.needed_paths())) or msg("isolation.fix.readable", prefix=sys.prefix)
    return ""


def _torch_files() -> list[str]:
    """torch's ``__init__.py`` and its shared libraries, found without
    importing torch (the worker sees them at the same paths in every mode):
    what the torch zygote loads first."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return []
    lib = Path(spec.origin).parent / "lib"
    libraries = sorted(str(p) for p in lib.glob("*.so*")) if lib.is_dir() else []
    return [spec.origin, *libraries]


def _payload(dumps, mode: str) -> bytes:
    # the tagged tree encode.encode_argument makes, built by hand: that one imports torch.
    # bubblewrap's numpy-only sandbox holds no torch (launch.py); torch's
    # files lie in the same binds as numpy's, which its zygote has read
    paths = {"$": "list", "items": [] if mode == "bwrap" else _torch_files()}
    return dumps({"args": {"$": "tuple", "items": [paths]}, "kwargs": {"$": "dict", "keys": [], "values": []}})


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def try_mode(isolation: Isolation) -> str | None:
    """None when a worker of ``isolation`` starts and answers here, else
    what went wrong, in words."""
    return _probe(isolation)[0]


def _probe(isolation: Isolation) -> tuple[str | None, bool]:
    """``try_mode``'s answer, and whether the worker reached a network."""
    from ..boundary.decode import decode
    from ..boundary.records import Limits
    from ..boundary.wire import dumps, loads
    from .executor import SandboxExecutor
    from .launch import sandbox_of

    executor = SandboxExecutor(memory_mb=1024, isolation=isolation)
    problem = None
    with tempfile.TemporaryDirectory(prefix="grade-probe-") as folder:
        Path(folder, "grade_probe.py").write_text(PROBE_MODULE)
        try:
            answer = executor.run(
                folder,
                "grade_probe",
                "ready",
                _payload(dumps, isolation.mode),
                Op.CALL,
                PROBE_TIMEOUT_S,
                numpy_only=True,
            )
            outcome = loads(answer, Limits())
        except GraderError:
            outcome = None
            problem = _last_line(sandbox_of(isolation, numpy_only=True).log_tail()) or msg("isolation.no_answer")
        finally:
            executor.close()
    if problem is None:
        stage = outcome.get("stage") if type(outcome) is dict else None
        if stage == Stage.OK and outcome.get("value") in ("ok", NETWORKED):
            return None, outcome.get("value") == NETWORKED
        if stage == Stage.RAISED:
            error = decode(outcome.get("error"))
            problem = f"{getattr(error, 'type', '?')}: {getattr(error, 'message', '')}"
        else:
            problem = _last_line(str(outcome.get("output") or "")) if type(outcome) is dict else ""
            problem = f"{stage}: {problem}" if problem else str(stage)
    sandbox_of(isolation, numpy_only=True).stop()  # a mode that failed leaves nothing running
    return problem, True


def choose(setting: str) -> Isolation:
    """The isolation for ``--grade-isolation setting``; ``auto`` picks the
    strongest that grades here. An explicit mode that cannot work raises
    ``Unavailable`` saying why and what to do."""
    setting = (setting or "auto").lower()
    if setting not in iso.MODES:
        raise Unavailable(msg("usage.isolation", value=setting))
    require_linux()
    if setting != "auto":
        modes: tuple[str, ...] = (setting,)
    elif iso.is_root():
        modes = ("bwrap", "user", "process")
    else:
        modes = ("bwrap", "process")  # a uid per worker needs root: no use telling a student so
    fallbacks: list[Fallback] = []
    for mode in modes:
        fallback = _static(mode)
        if fallback is None:
            uid = iso.allocate_uid() if mode == "bwrap" and iso.is_root() else None
            isolation = Isolation(mode, uid=uid)
            try:
                problem, networked = _probe(isolation)
            except Unavailable as exc:
                problem, networked = str(exc), True
            if problem is None:
                return replace(isolation, missing=_missing(mode, networked), fallbacks=tuple(fallbacks))
            fallback = Fallback(mode, problem, _fix(mode, problem))
        if setting != "auto":
            raise Unavailable(msg("usage.isolation_unavailable", mode=mode, problem=describe(fallback)))
        fallbacks.append(fallback)
    raise Unavailable(msg("isolation.none_works", reasons="; ".join(f"{f.mode}: {describe(f)}" for f in fallbacks)))


def require_linux() -> None:
    """Every mode, processes only included, is built on Linux's pidfd_open
    and Unix seqpacket sockets: elsewhere ``Unavailable`` says so before
    anything starts, instead of an AttributeError from deep in a launch."""
    if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
        raise Unavailable(msg("isolation.sandbox_needs_linux", platform=sys.platform))


def describe(fallback: Fallback) -> str:
    """ "why; to use it: fix" in one line."""
    return msg("isolation.fallback", problem=fallback.problem, fix=fallback.fix) if fallback.fix else fallback.problem


def prestart(setting: str, timeout: float = SPAWN_TIMEOUT_S) -> None:
    """Start the zygote a session with ``--grade-isolation setting`` will use
    and wait (at most ``timeout``) until it has imported torch. For a
    process that grades many sessions (the class runner's workers), so that
    no session's clock counts the zygote's cold start."""
    sandbox = sandbox_of(isolation_for(setting))
    sandbox.start()
    sandbox.ask({"op": "ping"}, timeout=timeout)  # no answer: the session's first call reports why


def isolation_for(setting: str) -> iso.Isolation:
    """``probe.choose``, once per setting and pytest process (probing
    starts a worker, and a new uid would mean a new zygote)."""
    from ..process_state import PROCESS

    require_linux()  # before the cache too: a choice made earlier never hides it
    chosen = PROCESS.isolations
    if setting not in chosen:
        chosen[setting] = choose(setting)
    return chosen[setting]

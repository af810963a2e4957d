"""Grade a class on warm workers.

The parent imports pytest, torch and the plugin once, then forks ``jobs``
workers. A worker grades one student at a time with an ordinary, complete
``pytest --grade`` session run in-process (``pytest.main``), exactly the
session a lone ``pytest --grade`` would run with the same checks and seed:
the student's code runs in the sandbox's workers as always, forked from
the worker's own zygote, which stays warm from one student to the next.
A worker that dies costs only the student it was grading; a worker whose
memory passes ``recycle_mb`` is replaced, so memory cannot creep up with
the class size. Every finished student's report is written atomically at
once, so a run that is killed loses nothing finished.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import multiprocessing
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Callable

from ..i18n import msg
from ..in_process import run_session, warm_sandbox
from ..reporters.files import write_json_atomic
from ..sandbox.isolation import Unavailable, sandbox_parent
from .students import Student

# A worker is replaced once its memory passes RECYCLE_MB (so the run's memory
# cannot creep up with the class size), or after RECYCLE students at most; a
# fresh worker starts a fresh sandbox zygote, about 5 s of torch import.
RECYCLE_MB = 2048
RECYCLE = 500


@dataclass
class ClassSettings:
    checks: Path
    out: Path
    checks_sha256: str
    timeout: float | None = None
    isolation: str | None = None
    lang: str | None = None
    extra_args: tuple[str, ...] = ()
    # wall-clock seconds one student's whole session may take: student code is
    # bounded by the sandbox, this bounds the grader's own (a check that hangs)
    student_timeout: float = 1200.0


@dataclass
class Outcome:
    """What the parent keeps of one student: enough for the summary line."""

    student: str
    status: str
    percent: float
    seconds: float
    error: str = ""
    rss_mb: float = 0.0  # the worker's resident memory after grading this student


@dataclass
class _Slot:
    process: multiprocessing.Process
    tasks: Connection
    results: Connection
    student: Student | None = None
    seed: int = 0
    started: float = 0.0  # when the worker began this student (until then, when it was sent)
    began: bool = False
    outcome: Outcome | None = None
    done: int = 0
    overdue: bool = False  # killed for taking longer than student_timeout
    scratch: Path | None = None  # the worker's temporary folder (its sandboxes'), removed when it ends


# A worker says it began a student (it is past its own warm-up) with this
# message before the student's Outcome; the student's clock starts then.
BEGAN = "began"
# How long a fresh worker may take to warm its sandbox before its first
# student's clock starts: bounded too, in case the warm-up itself hangs.
WARM_UP_S = 300.0


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def pytest_args(settings: ClassSettings, modules: Path, seed: int, private_json: Path) -> list[str]:
    """The command line of one student's session: the instructor's safe
    invocation (the checks' own ini file and rootdir, the submission named
    with '=' so pytest never reads configuration from it)."""
    checks = settings.checks
    ini = checks / "pytest.ini"
    args = [str(checks), "-c", str(ini) if ini.is_file() else os.devnull, "--rootdir", str(checks),
            "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:xdist",
            "-p", "no:unraisableexception",
            "--grade", f"--grade-submission={modules}", f"--grade-seed={seed}",
            f"--grade-json-private={private_json}"]
    if settings.timeout is not None:
        args.append(f"--grade-timeout={settings.timeout:g}")
    if settings.isolation:
        args.append(f"--grade-isolation={settings.isolation}")
    if settings.lang:
        args.append(f"--grade-lang={settings.lang}")
    return args + list(settings.extra_args)


def _not_attempted(report: dict) -> bool:
    """No point earned and every check failed the way an untouched or
    missing module fails."""
    from ..i18n.en import EN
    from ..i18n.zh import ZH

    checks = report.get("checks") or []
    if not checks or report.get("score"):
        return False
    leads = [catalogue[key].split("{")[0] for catalogue in (EN, ZH)
             for key in ("student.not_implemented", "student.module_missing", "student.empty")]
    feedback = [str(c.get("private_feedback") or c.get("feedback") or "") for c in checks]
    return all(any(lead in text for lead in leads) for text in feedback)


def grade_student(settings: ClassSettings, student: Student, seed: int) -> dict:
    """One student's report: a full graded pytest session in this process,
    its output thrown away; the report gets the class run's fields."""
    started = now_iso()
    clock = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="class-grade-") as tmp:
        private = Path(tmp) / "report.json"
        said = io.StringIO()
        # what pytest says is kept only to explain a session that broke
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            code = run_session(pytest_args(settings, student.modules, seed, private), settings.checks,
                               keep_checks=True)
        return student_report(settings, student, seed, private, code, said.getvalue(), started, clock)


def student_report(settings: ClassSettings, student: Student, seed: int, private: Path, code: int, said: str,
                   started: str, clock: float) -> dict:
    """The report a student's session wrote to ``private``, with the class
    run's fields; ``said`` (what pytest printed) explains a session that
    wrote none."""
    try:
        report = json.loads(private.read_text())
    except (OSError, ValueError):
        tail = "\n".join(said.strip().splitlines()[-10:])
        report = {"complete": False, "score": 0.0, "max_score": 0.0, "percent": 0.0, "concepts": [], "checks": [],
                  "error": f"grading stopped before writing a report (pytest exit code {int(code)}): {tail}"}
    if report.get("error") or not report.get("complete"):
        status = "error"
        report.setdefault("error", f"grading did not finish (pytest exit code {int(code)})")
    elif not student.has_modules:
        status = "missing"
    elif _not_attempted(report):
        status = "not attempted"
    else:
        status = "graded"
    report.update({"student": student.id, "folder": student.folder, "status": status, "seed": seed,
                   "checks_sha256": settings.checks_sha256, "started": started, "finished": now_iso(),
                   "grading_s": round(time.monotonic() - clock, 3), **student.handed})
    return report


def write_report(out: Path, report: dict) -> None:
    write_json_atomic(out / f"{report['student']}.json", report)


def error_report(settings: ClassSettings, student: Student, seed: int, error: str) -> dict:
    return {"schema": "pytest-autograd-grader/1", "complete": False, "score": 0.0, "max_score": 0.0,
            "percent": 0.0, "concepts": [], "checks": [], "student": student.id, "folder": student.folder,
            "status": "error", "error": error, "seed": seed, "checks_sha256": settings.checks_sha256,
            "started": now_iso(), "finished": now_iso(), **student.handed}


def _worker(settings: ClassSettings, tasks: Connection, results: Connection, scratch: Path) -> None:
    """A forked worker: grade the students it is sent until told to stop,
    in one session that collected the checks once (session_loop.py), else
    in a session each."""
    import signal

    from ..sandbox import stop_all

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    tempfile.tempdir = str(scratch)
    _warm_sandbox(settings)
    stopped = False
    waiting: list[tuple[Student, int]] = []  # a task looked at and put back

    def receive() -> tuple[Student, int] | None:
        nonlocal stopped
        if waiting:
            return waiting.pop()
        try:
            task = None if stopped else tasks.recv()
        except EOFError:
            task = None
        stopped = task is None
        return task

    def sent(report: dict) -> None:
        write_report(settings.out, report)
        results.send(Outcome(report["student"], report["status"], float(report.get("percent") or 0.0),
                             float(report.get("grading_s") or 0.0), str(report.get("error") or ""), _rss_mb()))

    def began() -> None:
        results.send(BEGAN)

    first = receive()
    if first is not None:
        waiting.append(first)  # its seed is the session's; it is graded there, or below if not
        left = _grade_in_one_session(settings, first[1], receive, began, sent)
        if left is not None:
            waiting.append(left)
    # what that session could not grade (it broke, or never collected the checks): a session each
    while (task := receive()) is not None:
        student, seed = task
        began()
        try:
            report = grade_student(settings, student, seed)
        except BaseException as exc:  # the grader's own failure: this student only
            report = _grader_failed(settings, student, seed, exc)
        sent(report)
    stop_all()  # our zygotes, their folders with them
    os._exit(0)  # no atexit handlers of the parent's copy of the process


def _grader_failed(settings: ClassSettings, student: Student, seed: int, exc: BaseException) -> dict:
    return error_report(settings, student, seed, f"the grader failed: {type(exc).__name__}: {exc}")


def _grade_in_one_session(settings: ClassSettings, seed: int, receive: Callable[[], tuple | None],
                          began: Callable[[], None], sent: Callable[[dict], None]) -> tuple | None:
    """Grade the students ``receive`` gives in one session that collected
    the checks once (session_loop.py), configured with ``seed``; the task
    it took but could not grade when that session broke."""
    from .session_loop import StudentLoop

    clock = [now_iso(), time.monotonic()]

    def start() -> None:
        began()
        clock[:] = [now_iso(), time.monotonic()]

    def finish(student: Student, seed: int, private: Path, code: int, said: str) -> None:
        try:
            report = student_report(settings, student, seed, private, code, said, *clock)
        except Exception as exc:  # the grader's own failure: this student only
            report = _grader_failed(settings, student, seed, exc)
        sent(report)

    loop = StudentLoop(receive, start, finish)
    with tempfile.TemporaryDirectory(prefix="class-session-") as tmp:
        placeholder = Path(tmp) / "submission"  # no student's: each is given their own in turn
        placeholder.mkdir()
        # the first student's seed: under the class's one seed, what reads it while configuring reads the right one
        args = pytest_args(settings, placeholder, seed, Path(tmp) / "session.json")
        # what pytest prints is thrown away: a student's failure reaches their report
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            try:
                run_session(args, settings.checks, keep_checks=True, plugins=[loop])
            except Exception:
                pass  # the students left get a session each
    return loop.left


def _warm_sandbox(settings: ClassSettings) -> None:
    """Start this worker's sandbox zygote before the first student:
    --student-timeout then measures grading, not a cold start that only the
    first student of each worker would pay."""
    warm_sandbox(settings.isolation, timeout=WARM_UP_S)


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)
    except (OSError, ValueError, IndexError):
        return 0.0


def _start(context, settings: ClassSettings) -> _Slot:
    task_r, task_w = context.Pipe(duplex=False)
    result_r, result_w = context.Pipe(duplex=False)
    # A worker killed for --student-timeout cannot stop its own sandboxes:
    # what they leave on disk lies in a folder the parent removes.
    try:
        parent = sandbox_parent(for_other_uids=True)
    except Unavailable:
        parent = None  # no folder other uids reach: only a sandbox of our own uid can run
    scratch = Path(tempfile.mkdtemp(prefix="grade-class-worker-", dir=parent))
    os.chmod(scratch, 0o755)  # where the sandbox's own uid makes its folders (sandbox_parent)
    process = context.Process(target=_worker, args=(settings, task_r, result_w, scratch), daemon=True)
    process.start()
    task_r.close()
    result_w.close()
    return _Slot(process, task_w, result_r, scratch=scratch)


def _stop(slot: _Slot, kill: bool = False) -> None:
    with contextlib.suppress(OSError, BrokenPipeError):
        if not kill:
            slot.tasks.send(None)
    if kill:
        slot.process.kill()
    slot.process.join(timeout=30)
    if slot.process.is_alive():
        slot.process.kill()
        slot.process.join()
    slot.tasks.close()
    slot.results.close()
    if slot.scratch is not None:
        shutil.rmtree(slot.scratch, ignore_errors=True)


# Imported once in the parent, so no student's session imports them again.
# torch imports the last two lazily, at the first backward (symbolic_shapes,
# with sympy: about a second) and the first torch.testing.assert_close
# (distributed.tensor); the parent must not run a backward: autograd's
# threads do not survive a fork.
WARM = ("pytest", "torch", "numpy", "numpy.random", "pytest_autograd_grader.plugin",
        "pytest_autograd_grader.checking.autograd", "pytest_autograd_grader.checking.seeding",
        "pytest_autograd_grader.boundary.submission", "pytest_autograd_grader.boundary.blame",
        "pytest_autograd_grader.sandbox", "torch.fx.experimental.symbolic_shapes", "torch.distributed.tensor")


def warm_up() -> None:
    """Import what every student's session needs, once, before forking."""
    import importlib

    for name in WARM:
        importlib.import_module(name)
    from ..sessions import freeze_imports

    freeze_imports()  # before the fork: the workers share these pages and never scan them


def grade_all(settings: ClassSettings, work: list[tuple[Student, int]], jobs: int,
              on_done: Callable[[Outcome], None], recycle: int = RECYCLE, recycle_mb: float = RECYCLE_MB,
              meanwhile: Callable[[], None] | None = None) -> None:
    """Grade ``work`` ((student, seed) pairs) on ``jobs`` warm workers,
    calling ``on_done`` as each student finishes (in the parent), and
    ``meanwhile`` once they are started (the parent has time while they
    warm up)."""
    warm_up()
    context = multiprocessing.get_context("fork")
    pending = list(reversed(work))
    slots: list[_Slot] = []
    try:
        for _ in range(min(jobs, len(work))):
            slots.append(_start(context, settings))
        for slot in slots:
            _give(slot, pending)
        if meanwhile is not None:
            meanwhile()
        while any(slot.student is not None for slot in slots):
            busy = [slot for slot in slots if slot.student is not None]
            first_deadline = min(_deadline(settings, slot) for slot in busy)
            ready = wait([slot.results for slot in busy] + [slot.process.sentinel for slot in busy],
                         timeout=max(0.0, first_deadline - time.monotonic()))
            for slot in busy:
                _read(slot)
                overdue = slot.outcome is None and time.monotonic() > _deadline(settings, slot)
                if overdue:
                    slot.process.kill()
                    slot.process.join()
                    slot.overdue = True
                if overdue or slot.outcome is not None or slot.process.sentinel in ready:
                    outcome = _collect(settings, slot)
                    on_done(outcome)
                    if not slot.process.is_alive() or slot.done >= recycle or outcome.rss_mb > recycle_mb:
                        _stop(slot, kill=not slot.process.is_alive())
                        slots[slots.index(slot)] = slot = _start(context, settings) if pending else slot
                    _give(slot, pending)
    finally:
        for slot in slots:
            if slot.process.is_alive() or slot.process.exitcode is None:
                _stop(slot, kill=slot.student is not None)


def _deadline(settings: ClassSettings, slot: _Slot) -> float:
    return slot.started + settings.student_timeout + (0.0 if slot.began else WARM_UP_S)


def _read(slot: _Slot) -> None:
    """Take what the worker has sent: the start of its student, its outcome."""
    with contextlib.suppress(EOFError, OSError):
        while slot.outcome is None and slot.results.poll():
            message = slot.results.recv()
            if isinstance(message, Outcome):
                slot.outcome = message
            elif message == BEGAN and not slot.began:
                slot.began, slot.started = True, time.monotonic()


def _give(slot: _Slot, pending: list[tuple[Student, int]]) -> None:
    slot.student, slot.outcome, slot.began = None, None, False
    if pending and slot.process.is_alive():
        slot.student, slot.seed = pending.pop()
        slot.started = time.monotonic()
        slot.tasks.send((slot.student, slot.seed))


def _collect(settings: ClassSettings, slot: _Slot) -> Outcome:
    student = slot.student
    assert student is not None
    slot.done += 1
    _read(slot)
    if slot.outcome is not None:
        return slot.outcome
    # the worker died while grading this student: the grader's failure,
    # which costs this student's report only
    code = slot.process.exitcode
    if slot.overdue:
        error = msg("class.student_overdue", seconds=settings.student_timeout)
    else:
        error = msg("class.worker_died", code=code)
    write_report(settings.out, error_report(settings, student, slot.seed, error))
    return Outcome(student.id, "error", 0.0, time.monotonic() - slot.started, error)

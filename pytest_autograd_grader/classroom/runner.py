"""Grade one student of a class: in a worker forked by pool.py, with an
ordinary, complete ``pytest --grade`` session run in-process, exactly the
session a lone ``pytest --grade`` would run with the same checks and seed.
A worker collects the checks once and grades each student it is sent in
that session (session_loop.py); where that breaks, in a session each. The
student's code runs in the sandbox's workers as always, forked from the
worker's own zygote, which stays warm from one student to the next. Every
finished student's report is written atomically at once, so a run that is
killed loses nothing finished.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from ..i18n import msg
from ..in_process import run_session, warm_sandbox
from ..protocol import StudentStatus
from ..reporters.files import write_json_atomic
from ..sandbox.kits import Kit, adopt, release
from .students import Student


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
    # the class's submissions as given (a zip or a folder): under user
    # isolation no worker's uid may be able to read them
    submissions: Path | None = None


@dataclass
class Outcome:
    """What the parent keeps of one student: enough for the summary line."""

    student: str
    status: str
    percent: float
    seconds: float
    error: str = ""
    rss_mb: float = 0.0  # the worker's resident memory after grading this student


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
    args = [
        str(checks),
        "-c",
        str(ini) if ini.is_file() else os.devnull,
        "--rootdir",
        str(checks),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:terminal",
        "-p",
        "no:xdist",
        "-p",
        "no:unraisableexception",
        "--grade",
        f"--grade-submission={modules}",
        f"--grade-seed={seed}",
        f"--grade-json-private={private_json}",
    ]
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
    leads = [
        catalogue[key].split("{")[0]
        for catalogue in (EN, ZH)
        for key in ("student.not_implemented", "student.module_missing", "student.empty")
    ]
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
            args = pytest_args(settings, student.modules, seed, private) + (["-x"] if student.stop_first else [])
            code = run_session(args, settings.checks, keep_checks=True)
        return student_report(settings, student, seed, private, code, said.getvalue(), started, clock)


def student_report(
    settings: ClassSettings,
    student: Student,
    seed: int,
    private: Path,
    code: int,
    said: str,
    started: str,
    clock: float,
) -> dict:
    """The report a student's session wrote to ``private``, with the class
    run's fields; ``said`` (what pytest printed) explains a session that
    wrote none."""
    try:
        report = json.loads(private.read_text())
    except (OSError, ValueError):
        tail = "\n".join(said.strip().splitlines()[-10:])
        report = {
            "complete": False,
            "score": 0.0,
            "max_score": 0.0,
            "percent": 0.0,
            "concepts": [],
            "checks": [],
            "error": f"grading stopped before writing a report (pytest exit code {int(code)}): {tail}",
        }
    if report.get("error") or not report.get("complete"):
        status = StudentStatus.ERROR
        report.setdefault("error", f"grading did not finish (pytest exit code {int(code)})")
    elif not student.has_modules:
        status = StudentStatus.MISSING
    elif _not_attempted(report):
        status = StudentStatus.NOT_ATTEMPTED
    else:
        status = StudentStatus.GRADED
    report.update(
        {
            "student": student.id,
            "folder": student.folder,
            "status": status,
            "seed": seed,
            "checks_sha256": settings.checks_sha256,
            "started": started,
            "finished": now_iso(),
            "grading_s": round(time.monotonic() - clock, 3),
            **student.handed,
        }
    )
    return report


def write_report(out: Path, report: dict) -> None:
    write_json_atomic(out / f"{report['student']}.json", report)


def error_report(settings: ClassSettings, student: Student, seed: int, error: str) -> dict:
    return {
        "schema": "pytest-autograd-grader/1",
        "complete": False,
        "score": 0.0,
        "max_score": 0.0,
        "percent": 0.0,
        "concepts": [],
        "checks": [],
        "student": student.id,
        "folder": student.folder,
        "status": "error",
        "error": error,
        "seed": seed,
        "checks_sha256": settings.checks_sha256,
        "started": now_iso(),
        "finished": now_iso(),
        **student.handed,
    }


Task = tuple[Student, int]


def _worker(
    settings: ClassSettings,
    tasks: Connection,
    results: Connection,
    scratch: Path,
    kit: Kit | None,
    others: Sequence[Kit | None],
    cpus: set[int] | None = None,
) -> None:
    """A forked worker: grade the students it is sent until told to stop,
    in one session that collected the checks once (session_loop.py), else
    in a session each."""
    from ..sandbox import stop_all

    _settle_worker(settings, scratch, kit, others, cpus)
    inbox = _Inbox(tasks)

    def sent(report: dict) -> None:
        _send_outcome(settings, results, report)

    def began() -> None:
        results.send(BEGAN)

    first = inbox.receive()
    if first is not None:
        inbox.put_back(first)  # its seed is the session's; it is graded there, or below if not
        left = _grade_in_one_session(settings, first[1], inbox.receive, began, sent)
        if left is not None:
            inbox.put_back(left)
    # what that session could not grade (it broke, or never collected the checks): a session each
    while (task := inbox.receive()) is not None:
        student, seed = task
        began()
        try:
            report = grade_student(settings, student, seed)
        except BaseException as exc:  # the grader's own failure: this student only
            report = _grader_failed(settings, student, seed, exc)
        sent(report)
    stop_all()  # our zygotes, their folders with them
    os._exit(0)  # no atexit handlers of the parent's copy of the process


def _settle_worker(
    settings: ClassSettings, scratch: Path, kit: Kit | None, others: Sequence[Kit | None], cpus: set[int] | None
) -> None:
    """The forked worker made its own: deaf to Ctrl-C, dying with its
    parent, on its CPUs, its temporary files in its scratch folder, its
    own kit only, its sandbox warm."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    _die_with_parent()
    if cpus:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, cpus)  # the sandboxes we start ourselves run there too
    tempfile.tempdir = str(scratch)
    for other in others:
        if other is not None:
            release(other)
    if kit is not None:
        adopt(kit)
    _warm_sandbox(settings)


class _Inbox:
    """The students the parent sends, a task looked at and put back first;
    None once the parent said stop (or is gone), and ever after."""

    def __init__(self, tasks: Connection) -> None:
        self.tasks = tasks
        self.stopped = False
        self.waiting: list[Task] = []

    def receive(self) -> Task | None:
        if self.waiting:
            return self.waiting.pop()
        try:
            task = None if self.stopped else self.tasks.recv()
        except EOFError:
            task = None
        self.stopped = task is None
        return task

    def put_back(self, task: Task) -> None:
        self.waiting.append(task)


def _send_outcome(settings: ClassSettings, results: Connection, report: dict) -> None:
    """The student's report written, and the parent told how it went."""
    try:
        write_report(settings.out, report)
    except OSError as exc:  # OUT gone or full: the parent still hears of this student, or waits for ever
        report = {
            **report,
            "status": "error",
            "error": msg("class.report_unwritten", out=str(settings.out), error=f"{type(exc).__name__}: {exc}"),
        }
    results.send(
        Outcome(
            report["student"],
            report["status"],
            float(report.get("percent") or 0.0),
            float(report.get("grading_s") or 0.0),
            str(report.get("error") or ""),
            _rss_mb(),
        )
    )


PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """A worker whose parent is killed (SIGKILL, the OOM killer) ends too,
    rather than wait for students that never come, holding its sandboxes."""
    import multiprocessing
    import signal

    from ..sandbox.namespaces import libc

    parent = multiprocessing.parent_process()
    try:
        libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent.pid:  # it died before we asked
        os._exit(1)


def _grader_failed(settings: ClassSettings, student: Student, seed: int, exc: BaseException) -> dict:
    return error_report(settings, student, seed, f"the grader failed: {type(exc).__name__}: {exc}")


def _grade_in_one_session(
    settings: ClassSettings,
    seed: int,
    receive: Callable[[], Task | None],
    began: Callable[[], None],
    sent: Callable[[dict], None],
) -> Task | None:
    """Grade the students ``receive`` gives in one session that collected
    the checks once (session_loop.py), configured with ``seed``; the task
    it took but could not grade when that session broke."""
    from .session_loop import StudentLoop

    started, clock = now_iso(), time.monotonic()

    def start() -> None:
        nonlocal started, clock
        began()
        started, clock = now_iso(), time.monotonic()

    def finish(student: Student, seed: int, private: Path, code: int, said: str) -> None:
        try:
            report = student_report(settings, student, seed, private, code, said, started, clock)
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

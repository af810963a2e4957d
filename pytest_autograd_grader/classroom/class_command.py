"""``autograd-grader class``: grade a class, or a shard of it (``merge.py``
joins the shards)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import statistics
import sys
import time
import zipfile
from pathlib import Path

from .. import __version__
from ..boundary.layout import has_checks
from ..boundary.untrusted import quoted, shown
from ..i18n import LANGUAGES, msg
from ..options import ISOLATIONS
from ..reporters.files import write_json_atomic
from .class_data import counted, students_text
from .plots import preload as preload_plots
from .pool import grade_all, make_private, usable_cpus
from .runner import ClassSettings, Outcome, now_iso
from .shards import ShardError, part_folder
from .shards import from_environment as shard_from_environment
from .shards import parse as parse_shard
from .students import Student, checks_sha256, class_sha256, find_students, shard, student_seed

RUN_FILE = "class-run.json"
RUN_SCHEMA = "pytest-autograd-grader-class/1"


def add_arguments(parser) -> None:
    parser.add_argument("--checks", required=True, metavar="CHECKS", help="the folder of the course's checks")
    parser.add_argument("--submissions", required=True, metavar="DIR|ZIP",
                        help="the class's submissions as your LMS's bulk download gives them, a folder or a zip "
                             "(Canvas, Moodle, Gradescope, GitHub Classroom), or one folder or zip per student "
                             "(modules in it or in its exercises/)")
    parser.add_argument("--out", required=True, metavar="OUT", help="where reports, gradebook and class report go")
    parser.add_argument("-j", "--jobs", type=int, default=None,
                        help="students graded at once (default: the CPUs this run may use: its share of the "
                             "machine's cores, as taskset, Slurm or a container's CPU limit set it)")
    parser.add_argument("--seed", type=int, default=None,
                        help="the seed of every student (default: one drawn from --salt for the whole class)")
    parser.add_argument("--seed-per-student", action="store_true",
                        help="a seed of its own for each student, from --salt and the student's id (slower: the "
                             "engine track's programs and torch's results for them are then drawn per student)")
    parser.add_argument("--salt", default=None,
                        help="salt the seeds are drawn from (default: the one OUT recorded, else a new random one)")
    parser.add_argument("--only", nargs="+", metavar="STUDENT", default=None, help="grade these students only")
    parser.add_argument("--resume", action="store_true",
                        help="keep students OUT already holds a complete report of (same checks and seed)")
    parser.add_argument("--shard", metavar="K/N", default=None,
                        help="grade the K-th of N parts of the class (merge the parts with 'autograd-grader merge')")
    parser.add_argument("--timeout", type=float, default=None, help="--grade-timeout for every check")
    parser.add_argument("--student-timeout", type=float, default=1200.0,
                        help="seconds one student's whole grading may take before it is stopped, counted once the "
                             "worker's sandbox is warm (default 1200)")
    # checked here, once: a bad value would otherwise fail every student's session alike
    parser.add_argument("--isolation", default=None, type=str.lower, choices=ISOLATIONS,
                        help="--grade-isolation (default auto)")
    parser.add_argument("--lang", default=None, type=str.lower, choices=LANGUAGES, help="--grade-lang of the feedback")
    parser.add_argument("--assignment", default=None, help="the assignment's name in the LMS file (default Autograd)")
    parser.add_argument("--roster", default=None, metavar="CSV",
                        help="the class's list: identity columns id (the LMS's user id), sis_user_id, "
                             "sis_login_id, email, then student (id in OUT or folder), name, section; matched "
                             "by id before name, for the LMS file's ids and the names every output shows. "
                             "Canvas's gradebook export (Grades > Export) serves as it is. canvas.csv needs it "
                             "unless --submissions is Canvas's Download Submissions zip, whose file names "
                             "carry each student's Canvas id")


def fail(text: str) -> int:
    print(text, file=sys.stderr)
    return 2


def read_run(out: Path) -> dict:
    try:
        data = json.loads((out / RUN_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("schema") == RUN_SCHEMA else {}


def _done_before(out: Path, student: Student, sha: str, seed: int) -> bool:
    try:
        report = json.loads((out / f"{student.id}.json").read_text())
    except (OSError, ValueError):
        return False
    return (isinstance(report, dict) and report.get("complete") is True and report.get("checks_sha256") == sha
            and report.get("seed") == seed and report.get("status") != "error")


class Progress:
    """A progress bar on a terminal (tqdm), plain lines every few seconds
    elsewhere (CI logs), and the summary line at the end."""

    def __init__(self, total: int, stream=None):
        self.total = total
        self.stream = stream or sys.stderr
        self.done = 0
        self.started = time.monotonic()
        self.last_line = self.started
        self.bar = None
        if total and self.stream.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, unit="student", file=self.stream, dynamic_ncols=True)

    def update(self, outcome: Outcome) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix_str(f"{outcome.student}: {outcome.status}", refresh=False)
            self.bar.update(1)
            return
        now = time.monotonic()
        if now - self.last_line >= 10 or self.done == self.total:
            self.last_line = now
            elapsed = now - self.started
            rate = self.done / elapsed if elapsed > 0 else 0.0
            left = (self.total - self.done) / rate if rate else 0.0
            print(counted("class.progress", self.total, done=self.done, total=self.total, rate=rate, left=left),
                  file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run(args) -> int:
    """Grade the class. Everything the run writes is the grader's alone
    (``make_private``); the caller's umask is back when it returns (the run
    may be called in-process, by a test or an instructor's script, whose
    later files must not turn private)."""
    umask = os.umask(0o077)
    os.umask(umask)  # only read here: make_private sets the run's own
    try:
        return _run(args)
    finally:
        os.umask(umask)


def _run(args) -> int:
    checks, submissions, out = Path(args.checks).resolve(), Path(args.submissions).resolve(), Path(args.out).resolve()
    if not checks.is_dir():
        return fail(msg("class.no_checks", path=args.checks))
    if not has_checks(checks):  # else every student would be "graded" 0 of 0
        return fail(msg("class.checks_empty", path=args.checks))
    if not submissions.is_dir() and not (submissions.is_file() and zipfile.is_zipfile(submissions)):
        return fail(msg("class.no_submissions", path=args.submissions))
    if checks == submissions or checks in submissions.parents or submissions in checks.parents:
        return fail(msg("class.overlap", checks=args.checks, submissions=args.submissions))
    if out in checks.parents or out == checks or checks in out.parents or submissions in out.parents or out == submissions:
        return fail(msg("class.out_inside", out=args.out))
    if args.jobs is None:
        args.jobs = usable_cpus()
    if args.jobs < 1:
        return fail(msg("class.bad_jobs", jobs=args.jobs))
    if args.seed is not None and args.seed_per_student:
        return fail(msg("class.seed_conflict", seed=args.seed))
    if not args.student_timeout > 0:
        return fail(msg("class.bad_student_timeout", seconds=args.student_timeout))
    if args.timeout is not None and not args.timeout > 0:
        return fail(msg("class.bad_timeout", seconds=args.timeout))
    from ..pytest_internals import UnsupportedPytest, check_supported
    from ..sandbox import Unavailable, choose, require_linux, stop_all

    try:
        check_supported()  # the one session per worker needs pytest's private API: refused, not graded slower
    except UnsupportedPytest as exc:
        return fail(str(exc))

    try:
        require_linux()  # off Linux no worker can start: say so before grading anyone
    except Unavailable as exc:
        return fail(str(exc))
    if args.isolation:
        try:
            choose(args.isolation)  # bwrap asked for where it cannot run: say so before grading anyone
        except Unavailable as exc:
            return fail(str(exc))
        finally:
            stop_all()  # the probe's zygote: each forked worker starts its own
    if args.shard is not None:
        try:
            parse_shard(args.shard)
        except ValueError:
            return fail(msg("class.bad_shard", shard=args.shard))
    else:
        try:
            found = shard_from_environment(os.environ)
        except ShardError as exc:
            return fail(str(exc))
        if found:  # every task of the job may share one OUT: each writes its own part of it
            args.shard, source = found
            out = out / part_folder(args.shard)
            print(msg("class.shard_from", shard=args.shard, source=source, out=str(out)), file=sys.stderr)
    if args.roster:
        from .class_data import OutputsError
        from .outputs import read_roster

        try:
            read_roster(Path(args.roster))  # a bad roster is told before grading, not after
        except OutputsError as exc:
            return fail(str(exc))
    out.mkdir(parents=True, exist_ok=True)
    make_private(out)  # a student's code must not read a classmate's files or report

    found = _intake(checks, submissions, out)
    if isinstance(found, int):
        return found
    students, intake_info = found
    everyone = students
    students = shard(students, args.shard)  # over the whole class: --only picks within the shard
    if args.only:
        wanted = set(args.only)
        unknown = wanted - {s.id for s in everyone} - {s.folder for s in everyone}
        if unknown:
            return fail(msg("class.unknown_students", names=", ".join(sorted(unknown))))
        elsewhere = sorted(s.folder for s in everyone if (s.id in wanted or s.folder in wanted) and s not in students)
        if elsewhere:
            return fail(msg("class.only_other_shard", names=", ".join(shown(n) for n in elsewhere), shard=args.shard))
        students = [s for s in students if s.id in wanted or s.folder in wanted]
    previous = read_run(out)
    salt = args.salt or previous.get("salt") or secrets.token_hex(8)
    sha = intake_info.pop("checks_sha256")
    # One seed for the class unless asked otherwise: every grading process then
    # draws the engine track's programs and torch's results once (bench_class.py)
    seeding = "per-student" if args.seed_per_student else "class"
    seeds = {s.id: args.seed if args.seed is not None else
             student_seed(salt, s.id if seeding == "per-student" else "") for s in students}
    work = [(s, seeds[s.id]) for s in students if not (args.resume and _done_before(out, s, sha, seeds[s.id]))]
    kept = len(students) - len(work)

    run_info = {"schema": RUN_SCHEMA, "checks": str(checks), "checks_sha256": sha, "submissions": str(submissions),
                "salt": salt, "seed": args.seed, "seeding": seeding, "shard": args.shard, "grader": __version__,
                # the whole class before sharding: merge tells parts of other submissions apart
                "class_sha256": class_sha256(everyone), "class_size": len(everyone),
                "assignment": args.assignment or previous.get("assignment") or "Autograd",
                "students": sorted(set(previous.get("students") or []) | {s.id for s in students}),
                "intake": intake_info, "started": now_iso(), "finished": None}
    write_json_atomic(out / RUN_FILE, run_info)
    print(msg("class.start", students=students_text(len(work)), kept=kept,
              workers=counted("class.n_workers", args.jobs), out=str(out), salt=salt), file=sys.stderr)

    settings = ClassSettings(checks=checks, out=out, checks_sha256=sha, timeout=args.timeout,
                             isolation=args.isolation, lang=args.lang, student_timeout=args.student_timeout,
                             submissions=submissions)
    outcomes: list[Outcome] = []
    progress = Progress(len(work))
    started = time.monotonic()
    interrupted = False

    def done(outcome: Outcome) -> None:
        outcomes.append(outcome)
        progress.update(outcome)

    # SIGTERM (kill, a scheduler cancelling the job) stops the run as Ctrl-C
    # does: workers stopped, their folders removed, what is finished kept
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        grade_all(settings, work, args.jobs, done, meanwhile=preload_plots)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, previous)
        progress.close()
    elapsed = time.monotonic() - started
    run_info["finished"] = None if interrupted else now_iso()
    write_json_atomic(out / RUN_FILE, run_info)
    names: dict[str, str] = {}
    warnings = build(out, run_info, args.roster, names)
    counts = {status: sum(o.status == status for o in outcomes) for status in ("graded", "not attempted", "missing", "error")}
    median = statistics.median([o.seconds for o in outcomes]) if outcomes else 0.0
    print(msg("class.summary", students=students_text(len(outcomes)), seconds=elapsed, median=median,
              graded=counts["graded"], not_attempted=counts["not attempted"], missing=counts["missing"],
              errors=counted("class.n_errors", counts["error"]), out=str(out)), file=sys.stderr)
    for outcome in outcomes:
        if outcome.status == "error":
            print(msg("class.student_error", student=_named(outcome.student, names),
                      error=quoted(shown(outcome.error))), file=sys.stderr)
    for warning in warnings:
        print(warning, file=sys.stderr)
    if interrupted:
        print(msg("class.interrupted"), file=sys.stderr)
        return 130
    return 0


def _intake(checks: Path, submissions: Path, out: Path) -> tuple[list[Student], dict] | int:
    """The class laid out and found, what the intake could not take (told
    now and kept in class-run.json), and the checks' hash; or the exit
    code of a refusal. The checks must be what they were before: no upload
    may ever reach them (belt and braces: the intake writes under OUT only)."""
    from .intake import IntakeError, gather

    before = checks_sha256(checks)
    try:
        intake = gather(submissions, out)
    except IntakeError as exc:
        return fail(str(exc))
    if intake.handed:
        late = sum(h.late for h in intake.handed.values())
        print(counted("class.intake", len(intake.handed), export=intake.export, late=late,
                  folder=str(intake.graded)), file=sys.stderr)
    skipped: list[tuple[str, str]] = list(intake.skipped)
    students = find_students(intake.graded, skipped, intake.handed)
    after = checks_sha256(checks)
    if after != before:
        return fail(msg("class.checks_changed", path=str(checks)))
    problems = {s.id: s.handed["intake_problems"] for s in students if s.handed.get("intake_problems")}
    for student in students:
        for problem in student.handed.get("intake_problems", []):
            # names in them are the student's (or their LMS display name's) text
            name = shown(student.handed.get("name", student.folder))
            print(msg("class.intake_problem", name=name, problem=quoted(shown(problem))), file=sys.stderr)
    for name, why in skipped:
        print(msg(f"class.skipped_{why}", name=shown(name), export=intake.export), file=sys.stderr)
    info = {"export": intake.export, "problems": problems, "skipped": [[name, why] for name, why in skipped]}
    return students, {**info, "checks_sha256": after}


def _named(student: str, names: dict[str, str]) -> str:
    """The student as the outputs name them (the roster's name), their id
    in OUT beside it for --only."""
    name = names.get(student) or student
    return student if name == student else msg("class.student_named", name=shown(name), student=student)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def build(out: Path, run_info: dict, roster: str | None, names: dict[str, str] | None = None) -> list[str]:
    """The gradebook, LMS file and report; a problem with them is a line
    of text (every student's report is already on disk). ``names`` gets
    each student's shown name (``build_outputs``)."""
    from .class_data import OutputsError
    from .outputs import build_outputs

    try:
        return build_outputs(out, assignment=run_info.get("assignment"), roster=Path(roster) if roster else None,
                             names=names)
    except OutputsError as exc:
        return [str(exc)]

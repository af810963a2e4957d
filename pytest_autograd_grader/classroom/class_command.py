"""``autograd-grader class``: grade a class, or a shard of it (``merge.py``
joins the shards)."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..boundary.untrusted import quoted, shown
from ..i18n import LANGUAGES, msg
from ..options import ISOLATIONS
from ..protocol import StudentStatus
from ..reporters.files import write_json_atomic
from .class_data import counted, students_text
from .class_validate import Paths, Refused, validate
from .plots import preload as preload_plots
from .pool import grade_all
from .progress import Progress
from .runner import ClassSettings, Outcome, now_iso
from .students import Student, checks_sha256, class_sha256, find_students, shard, student_seed

RUN_FILE = "class-run.json"
RUN_SCHEMA = "pytest-autograd-grader-class/1"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checks", required=True, metavar="CHECKS", help="the folder of the course's checks")
    parser.add_argument(
        "--submissions",
        required=True,
        metavar="DIR|ZIP",
        help="the class's submissions as your LMS's bulk download gives them, a folder or a zip "
        "(Canvas, Moodle, Gradescope, GitHub Classroom), or one folder or zip per student "
        "(modules in it or in its exercises/)",
    )
    parser.add_argument("--out", required=True, metavar="OUT", help="where reports, gradebook and class report go")
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        help="students graded at once (default: the CPUs this run may use: its share of the "
        "machine's cores, as taskset, Slurm or a container's CPU limit set it)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="the seed of every student (default: one drawn from --salt for the whole class)",
    )
    parser.add_argument(
        "--seed-per-student",
        action="store_true",
        help="a seed of its own for each student, from --salt and the student's id (slower: the "
        "engine track's programs and torch's results for them are then drawn per student)",
    )
    parser.add_argument(
        "--salt",
        default=None,
        help="salt the seeds are drawn from (default: the one OUT recorded, else a new random one)",
    )
    parser.add_argument("--only", nargs="+", metavar="STUDENT", default=None, help="grade these students only")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep students OUT already holds a complete report of (same checks and seed)",
    )
    parser.add_argument(
        "--shard",
        metavar="K/N",
        default=None,
        help="grade the K-th of N parts of the class (merge the parts with 'autograd-grader merge')",
    )
    parser.add_argument("--timeout", type=float, default=None, help="--grade-timeout for every check")
    parser.add_argument(
        "--student-timeout",
        type=float,
        default=1200.0,
        help="seconds one student's whole grading may take before it is stopped, counted once the "
        "worker's sandbox is warm (default 1200)",
    )
    # checked here, once: a bad value would otherwise fail every student's session alike
    parser.add_argument(
        "--isolation", default=None, type=str.lower, choices=ISOLATIONS, help="--grade-isolation (default auto)"
    )
    parser.add_argument("--lang", default=None, type=str.lower, choices=LANGUAGES, help="--grade-lang of the feedback")
    parser.add_argument("--assignment", default=None, help="the assignment's name in the LMS file (default Autograd)")
    parser.add_argument(
        "--roster",
        default=None,
        metavar="CSV",
        help="the class's list: identity columns id (the LMS's user id), sis_user_id, "
        "sis_login_id, email, then student (id in OUT or folder), name, section; matched "
        "by id before name, for the LMS file's ids and the names every output shows. "
        "Canvas's gradebook export (Grades > Export) serves as it is. canvas.csv needs it "
        "unless --submissions is Canvas's Download Submissions zip, whose file names "
        "carry each student's Canvas id",
    )


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
    return (
        isinstance(report, dict)
        and report.get("complete") is True
        and report.get("checks_sha256") == sha
        and report.get("seed") == seed
        and report.get("status") != "error"
    )


def run(args: argparse.Namespace) -> int:
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


@dataclass
class Intake:
    """The class as the intake found it: every student, what the intake
    could not take (kept in class-run.json), the checks' hash."""

    everyone: list[Student]
    info: dict
    checks_sha256: str


@dataclass
class Plan:
    """Who is graded with which seed, and the run's record."""

    work: list[tuple[Student, int]]
    kept: int
    run_info: dict


@dataclass
class Graded:
    outcomes: list[Outcome]
    seconds: float
    interrupted: bool


def _run(args: argparse.Namespace) -> int:
    """The class command's steps: validate -> intake -> plan -> grade -> outputs."""
    try:
        paths = validate(args)
        intake = _intake(paths)
        plan = _plan(args, paths, intake)
    except Refused as exc:
        return fail(str(exc))
    graded = _grade(args, paths, plan)
    return _outputs(args, paths.out, plan.run_info, graded)


def _plan(args: argparse.Namespace, paths: Paths, intake: Intake) -> Plan:
    """This run's students (the shard's, --only's), their seeds, those
    --resume keeps; recorded in class-run.json before grading starts."""
    students = _chosen(args, intake.everyone)
    previous = read_run(paths.out)
    salt = args.salt or previous.get("salt") or secrets.token_hex(8)
    sha = intake.checks_sha256
    # One seed for the class unless asked otherwise: every grading process then
    # draws the engine track's programs and torch's results once (bench_class.py)
    seeding = "per-student" if args.seed_per_student else "class"
    seeds = {
        s.id: args.seed if args.seed is not None else student_seed(salt, s.id if seeding == "per-student" else "")
        for s in students
    }
    work = [(s, seeds[s.id]) for s in students if not (args.resume and _done_before(paths.out, s, sha, seeds[s.id]))]
    run_info = {
        "schema": RUN_SCHEMA,
        "checks": str(paths.checks),
        "checks_sha256": sha,
        "submissions": str(paths.submissions),
        "salt": salt,
        "seed": args.seed,
        "seeding": seeding,
        "shard": args.shard,
        "grader": __version__,
        # the whole class before sharding: merge tells parts of other submissions apart
        "class_sha256": class_sha256(intake.everyone),
        "class_size": len(intake.everyone),
        "assignment": args.assignment or previous.get("assignment") or "Autograd",
        "students": sorted(set(previous.get("students") or []) | {s.id for s in students}),
        "intake": intake.info,
        "started": now_iso(),
        "finished": None,
    }
    write_json_atomic(paths.out / RUN_FILE, run_info)
    return Plan(work=work, kept=len(students) - len(work), run_info=run_info)


def _chosen(args: argparse.Namespace, everyone: list[Student]) -> list[Student]:
    """The shard's students, of them those --only names."""
    students = shard(everyone, args.shard)  # over the whole class: --only picks within the shard
    if not args.only:
        return students
    wanted = set(args.only)
    unknown = wanted - {s.id for s in everyone} - {s.folder for s in everyone}
    if unknown:
        raise Refused(msg("class.unknown_students", names=", ".join(sorted(unknown))))
    elsewhere = sorted(s.folder for s in everyone if (s.id in wanted or s.folder in wanted) and s not in students)
    if elsewhere:
        raise Refused(msg("class.only_other_shard", names=", ".join(shown(n) for n in elsewhere), shard=args.shard))
    return [s for s in students if s.id in wanted or s.folder in wanted]


def _grade(args: argparse.Namespace, paths: Paths, plan: Plan) -> Graded:
    """Every student of the plan graded, a progress line as each is done;
    Ctrl-C or SIGTERM keeps what is finished. class-run.json then says
    whether the run finished."""
    run_info = plan.run_info
    print(
        msg(
            "class.start",
            students=students_text(len(plan.work)),
            kept=plan.kept,
            workers=counted("class.n_workers", args.jobs),
            out=str(paths.out),
            salt=run_info["salt"],
        ),
        file=sys.stderr,
    )
    settings = ClassSettings(
        checks=paths.checks,
        out=paths.out,
        checks_sha256=run_info["checks_sha256"],
        timeout=args.timeout,
        isolation=args.isolation,
        lang=args.lang,
        student_timeout=args.student_timeout,
        submissions=paths.submissions,
    )
    outcomes: list[Outcome] = []
    progress = Progress(len(plan.work))
    started = time.monotonic()
    interrupted = False

    def done(outcome: Outcome) -> None:
        outcomes.append(outcome)
        progress.update(outcome)

    # SIGTERM (kill, a scheduler cancelling the job) stops the run as Ctrl-C
    # does: workers stopped, their folders removed, what is finished kept
    handler = signal.signal(signal.SIGTERM, _interrupt)
    try:
        grade_all(settings, plan.work, args.jobs, done, meanwhile=preload_plots)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, handler)
        progress.close()
    seconds = time.monotonic() - started
    run_info["finished"] = None if interrupted else now_iso()
    write_json_atomic(paths.out / RUN_FILE, run_info)
    return Graded(outcomes=outcomes, seconds=seconds, interrupted=interrupted)


def _outputs(args: argparse.Namespace, out: Path, run_info: dict, graded: Graded) -> int:
    """Gradebook, LMS file and class report written; the summary, each
    student's error and each output's problem told; the exit code."""
    names: dict[str, str] = {}
    warnings = build(out, run_info, args.roster, names)
    _summarize(graded, out, names)
    for warning in warnings:
        print(warning, file=sys.stderr)
    if graded.interrupted:
        print(msg("class.interrupted"), file=sys.stderr)
        return 130
    return 0


def _summarize(graded: Graded, out: Path, names: dict[str, str]) -> None:
    outcomes = graded.outcomes
    counts = {status: sum(o.status == status for o in outcomes) for status in StudentStatus}
    median = statistics.median([o.seconds for o in outcomes]) if outcomes else 0.0
    print(
        msg(
            "class.summary",
            students=students_text(len(outcomes)),
            seconds=graded.seconds,
            median=median,
            graded=counts[StudentStatus.GRADED],
            not_attempted=counts[StudentStatus.NOT_ATTEMPTED],
            missing=counts[StudentStatus.MISSING],
            errors=counted("class.n_errors", counts[StudentStatus.ERROR]),
            out=str(out),
        ),
        file=sys.stderr,
    )
    for outcome in outcomes:
        if outcome.status == "error":
            print(
                msg("class.student_error", student=_named(outcome.student, names), error=quoted(shown(outcome.error))),
                file=sys.stderr,
            )


def _intake(paths: Paths) -> Intake:
    """The class laid out and found, what the intake could not take (told
    now and kept in class-run.json), and the checks' hash. The checks must
    be what they were before: no upload may ever reach them (belt and
    braces: the intake writes under OUT only)."""
    from .intake import IntakeError, gather

    before = checks_sha256(paths.checks)
    try:
        intake = gather(paths.submissions, paths.out)
    except IntakeError as exc:
        raise Refused(str(exc)) from None
    if intake.handed:
        late = sum(h.late for h in intake.handed.values())
        print(
            counted("class.intake", len(intake.handed), export=intake.export, late=late, folder=str(intake.graded)),
            file=sys.stderr,
        )
    skipped: list[tuple[str, str]] = list(intake.skipped)
    students = find_students(intake.graded, skipped, intake.handed)
    after = checks_sha256(paths.checks)
    if after != before:
        raise Refused(msg("class.checks_changed", path=str(paths.checks)))
    _tell_intake(students, skipped, intake.export)
    problems = {s.id: s.handed["intake_problems"] for s in students if s.handed.get("intake_problems")}
    info = {"export": intake.export, "problems": problems, "skipped": [[name, why] for name, why in skipped]}
    return Intake(everyone=students, info=info, checks_sha256=after)


def _tell_intake(students: list[Student], skipped: list[tuple[str, str]], export: str) -> None:
    """What the intake could not take, student by student."""
    for student in students:
        for problem in student.handed.get("intake_problems", []):
            # names in them are the student's (or their LMS display name's) text
            name = shown(student.handed.get("name", student.folder))
            print(msg("class.intake_problem", name=name, problem=quoted(shown(problem))), file=sys.stderr)
    for name, why in skipped:
        print(msg(f"class.skipped_{why}", name=shown(name), export=export), file=sys.stderr)


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
        return build_outputs(
            out, assignment=run_info.get("assignment"), roster=Path(roster) if roster else None, names=names
        )
    except OutputsError as exc:
        return [str(exc)]

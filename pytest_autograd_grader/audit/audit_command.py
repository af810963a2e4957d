"""``autograd-grader audit CHECKS --solutions DIR``: the solutions score
100 % and the stubs 0, every planted mistake is caught and named on every
seed, and each generated mutant is killed, survives or is accepted.
Exit 0 all good, 1 the audit failed (GUIDE), 2 usage."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..i18n import LANGUAGES, msg, use_language
from .planted import AuditUsageError, find_planted
from .text_report import print_report


def add_arguments(parser) -> None:
    parser.add_argument("checks", metavar="CHECKS", help="the folder of the course's checks (and stubs)")
    parser.add_argument("--solutions", required=True, metavar="DIR", help="the folder of the reference solutions")
    parser.add_argument(
        "--mistakes",
        default=None,
        metavar="DIR",
        help="the planted mistakes, MISTAKES/<topic>/<name>.py (default: CHECKS/../mistakes)",
    )
    parser.add_argument("--seeds", type=int, default=10, metavar="N", help="grade on seeds 1..N (default 10)")
    parser.add_argument("--json", default=None, metavar="FILE", help="write the audit as JSON")
    parser.add_argument("--html", default=None, metavar="FILE", help="write the audit as an HTML page")
    parser.add_argument(
        "--fail-under",
        type=float,
        default=None,
        metavar="PCT",
        help="fail when the mutation score is under PCT percent",
    )
    parser.add_argument(
        "--accepted",
        default=None,
        metavar="FILE",
        help="the accepted survivors, with reasons (default: MISTAKES/accepted.toml)",
    )
    parser.add_argument("--no-mutants", action="store_true", help="skip the generated mutants")
    parser.add_argument("--topic", nargs="+", default=None, metavar="NAME", help="audit these topics only")
    parser.add_argument(
        "-j", "--jobs", type=int, default=None, help="variants graded at once (default: the CPUs this run may use)"
    )
    parser.add_argument("--timeout", type=float, default=None, help="--grade-timeout for every check (default 10)")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="also list the accepted survivors with their reasons"
    )
    parser.add_argument("--lang", default=None, type=str.lower, choices=LANGUAGES, help="language of the output")


def fail(text: str) -> int:
    print(text, file=sys.stderr)
    return 2


def run(args) -> int:
    if args.lang:
        use_language(args.lang)
    try:
        setup = prepare(args)
    except AuditUsageError as exc:
        return fail(str(exc))
    from ..pytest_internals import UnsupportedPytest, check_supported

    try:
        check_supported()  # graded on the class runner's workers: refused, not graded slower
    except UnsupportedPytest as exc:
        return fail(str(exc))
    from .grading import run_audit

    document = run_audit(setup, progress=sys.stderr)
    print_report(document, sys.stdout, verbose=args.verbose)
    for warning in document.get("warnings", []):  # apart from the report, which the text_report module prints
        print(warning, file=sys.stderr)
    return write_outputs(document, args)


def prepare(args):
    """Everything the run needs, checked before anything is graded; bad
    input raises AuditUsageError saying what to do."""
    from .grading import Setup
    from .variants import check_files_of, solution_modules

    checks, solutions = Path(args.checks).resolve(), Path(args.solutions).resolve()
    if not checks.is_dir():
        raise AuditUsageError(msg("audit.no_checks", path=args.checks))
    if not solutions.is_dir():
        raise AuditUsageError(msg("audit.no_solutions_dir", path=args.solutions))
    if args.seeds < 1 or (args.jobs is not None and args.jobs < 1):
        raise AuditUsageError(msg("audit.bad_number", seeds=args.seeds, jobs=args.jobs))
    modules = solution_modules(solutions)
    checked = {topic: check_files_of(checks, topic) for topic in modules}
    topics = [t for t in modules if checked[t]]
    if not topics:
        raise AuditUsageError(msg("audit.no_checked_topic", checks=str(checks), modules=", ".join(modules)))
    if args.topic:
        unknown = [t for t in args.topic if t not in topics]
        if unknown:
            raise AuditUsageError(msg("audit.unknown_topic", topics=", ".join(unknown), known=", ".join(topics)))
        topics = [t for t in topics if t in args.topic]
    mistakes_dir = _mistakes_dir(args, checks)
    planted = [p for p in find_planted(mistakes_dir, list(modules)) if p.topic in topics] if mistakes_dir else []
    accepted_file = _accepted_file(args, mistakes_dir)
    from .accepted import read_accepted

    accepted = read_accepted(accepted_file)
    mutants = {} if args.no_mutants else _mutants(solutions, modules, topics)
    return Setup(
        checks,
        solutions,
        mistakes_dir,
        topics,
        {t: checked[t] for t in topics},
        modules,
        planted,
        mutants,
        accepted,
        list(range(1, args.seeds + 1)),
        args.jobs,
        args.timeout,
        args.lang,
        args.fail_under,
    )


def _accepted_file(args: argparse.Namespace, mistakes_dir: Path | None) -> Path | None:
    """The accepted mutants' file: --accepted's, which must exist, else the
    mistakes folder's accepted.toml (read only if there)."""
    if args.accepted:
        given = Path(args.accepted)
        if not given.is_file():
            raise AuditUsageError(msg("audit.no_accepted", path=args.accepted))
        return given
    return mistakes_dir / "accepted.toml" if mistakes_dir else None


def _mistakes_dir(args, checks: Path) -> Path | None:
    if args.mistakes:
        folder = Path(args.mistakes).resolve()
        if not folder.is_dir():
            raise AuditUsageError(msg("audit.no_mistakes", path=args.mistakes))
        return folder
    default = checks.parent / "mistakes"
    return default if default.is_dir() else None


def _mutants(solutions: Path, modules: dict[str, str], topics: list[str]) -> dict:
    try:
        from .mutants import MutantsError, mutants_of
    except ImportError as exc:
        if "libcst" not in str(exc):
            raise
        raise AuditUsageError(msg("audit.install_extra", missing="libcst")) from None
    found = {}
    for topic in topics:
        try:
            found[topic] = mutants_of(modules[topic], topic, f"{solutions.name}/{topic}.py")
        except MutantsError as exc:
            raise AuditUsageError(str(exc)) from None
    return found


def write_outputs(document: dict, args) -> int:
    """The --json and --html files; the exit code."""
    from ..reporters.files import ReportWriteError, write_json_atomic

    try:
        if args.json:
            write_json_atomic(Path(args.json), document)
        if args.html:
            _write_html(document, Path(args.html))
    except (ReportWriteError, OSError) as exc:
        return fail(msg("audit.unwritten", error=str(exc)))
    return 0 if document["passed"] else 1


def _write_html(document: dict, path: Path) -> None:
    from .html_report import write_html

    write_html(document, path)

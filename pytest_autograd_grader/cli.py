"""``autograd-grader`` (also ``python -m pytest_autograd_grader``): the
commands around grading that are not a pytest run.

Each subcommand lives in the module of its responsibility, which provides
``add_arguments(parser)`` and ``run(args) -> int``; this module only
dispatches, so ``--help`` lists them all without importing torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable

# name -> (module, one-line help)
COMMANDS = {
    "manifest": (
        "pytest_autograd_grader.platforms.manifest",
        "write the hashes of a course's check files, for --grade-manifest",
    ),
    "gradescope-bundle": (
        "pytest_autograd_grader.platforms.gradescope_bundle",
        "write a Gradescope autograder.zip (setup.sh, run_autograder, the checks, the grader's wheel)",
    ),
    "github-classroom": (
        "pytest_autograd_grader.platforms.github_classroom",
        "write a GitHub Classroom course: the private checks repository (the grader's wheel "
        "inside) and the student template repository with its workflow",
    ),
    "class": (
        "pytest_autograd_grader.classroom.class_command",
        "grade a whole class: per-student reports, a gradebook, an LMS file and a class report",
    ),
    "merge": (
        "pytest_autograd_grader.classroom.merge",
        "merge the OUT folders of 'class --shard' runs into one gradebook and report",
    ),
    "audit": (
        "pytest_autograd_grader.audit.audit_command",
        "audit a course's checks: solutions and stubs, planted mistakes, generated mutants",
    ),
    "notebooks": (
        "pytest_autograd_grader.handout_notebooks",
        "write one notebook per topic from the exercise stubs, ending with a cell that grades it",
    ),
    "watch": (
        "pytest_autograd_grader.watch",
        "grade your exercises now and again on every save, keeping torch and the sandbox warm",
    ),
    "new-topic": (
        "pytest_autograd_grader.authoring.new_topic",
        "start a topic of a course: stub, solution, a checks file with one worked check, a planted "
        "mistake and the concept's registration, graded and audited as written",
    ),
}


def _functions(spec: str) -> tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]:
    """``module`` gives add_arguments/run; ``module:name`` gives
    add_name_arguments/run_name (two commands in one module)."""
    module, _, name = spec.partition(":")
    loaded = importlib.import_module(module)
    if name:
        return getattr(loaded, f"add_{name}_arguments"), getattr(loaded, f"run_{name}")
    return loaded.add_arguments, loaded.run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autograd-grader",
        description="Tools around pytest-autograd-grader. Grading itself is 'pytest --grade CHECKS'.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(module=module)
        _functions(module)[0](sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(_functions(args.module)[1](args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130

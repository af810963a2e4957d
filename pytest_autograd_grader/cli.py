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

# name -> (module, one-line help)
COMMANDS = {
    "manifest": ("pytest_autograd_grader.manifest",
                 "write the hashes of a course's check files, for --grade-manifest"),
    "gradescope-bundle": ("pytest_autograd_grader.gradescope_bundle",
                          "write a Gradescope autograder.zip (setup.sh, run_autograder, the checks)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autograd-grader",
        description="Tools around pytest-autograd-grader. Grading itself is 'pytest --grade CHECKS'.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(module=module)
        importlib.import_module(module).add_arguments(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(importlib.import_module(args.module).run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130

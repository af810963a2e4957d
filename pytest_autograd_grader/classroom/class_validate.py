"""The class command's first step: every refusal a bad option or machine
earns, told before anything is written or anyone graded (``Refused``, exit
2), and the paths the run then reads and writes."""

from __future__ import annotations

import argparse
import os
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..boundary.layout import has_checks
from ..i18n import msg
from .pool import make_private, usable_cpus
from .shards import ShardError, part_folder
from .shards import from_environment as shard_from_environment
from .shards import parse as parse_shard


class Refused(Exception):
    """A step refuses the run: its text tells the user what to do (exit 2)."""


@dataclass
class Paths:
    """Where the run reads and writes, resolved (``out`` with the shard's
    part folder where the environment named the shard)."""

    checks: Path
    submissions: Path
    out: Path


def validate(args: argparse.Namespace) -> Paths:
    """Every refusal a bad option or machine earns, before anything is
    written or anyone graded; then OUT made, private. Fills in --jobs and
    --shard where their defaults come from the machine or the environment."""
    paths = Paths(Path(args.checks).resolve(), Path(args.submissions).resolve(), Path(args.out).resolve())
    _check_paths(args, paths)
    if args.jobs is None:
        args.jobs = usable_cpus()
    _check_numbers(args)
    _check_machine(args.isolation)
    paths.out = _settle_shard(args, paths.out)
    if args.roster:
        _check_roster(Path(args.roster))
    paths.out.mkdir(parents=True, exist_ok=True)
    make_private(paths.out)  # a student's code must not read a classmate's files or report
    return paths


def _check_paths(args: argparse.Namespace, paths: Paths) -> None:
    checks, submissions, out = paths.checks, paths.submissions, paths.out
    if not checks.is_dir():
        raise Refused(msg("class.no_checks", path=args.checks))
    if not has_checks(checks):  # else every student would be "graded" 0 of 0
        raise Refused(msg("class.checks_empty", path=args.checks))
    if not submissions.is_dir() and not (submissions.is_file() and zipfile.is_zipfile(submissions)):
        raise Refused(msg("class.no_submissions", path=args.submissions))
    if checks == submissions or checks in submissions.parents or submissions in checks.parents:
        raise Refused(msg("class.overlap", checks=args.checks, submissions=args.submissions))
    if (
        out in checks.parents
        or out == checks
        or checks in out.parents
        or submissions in out.parents
        or out == submissions
    ):
        raise Refused(msg("class.out_inside", out=args.out))


def _check_numbers(args: argparse.Namespace) -> None:
    if args.jobs < 1:
        raise Refused(msg("class.bad_jobs", jobs=args.jobs))
    if args.seed is not None and args.seed_per_student:
        raise Refused(msg("class.seed_conflict", seed=args.seed))
    if not args.student_timeout > 0:
        raise Refused(msg("class.bad_student_timeout", seconds=args.student_timeout))
    if args.timeout is not None and not args.timeout > 0:
        raise Refused(msg("class.bad_timeout", seconds=args.timeout))


def _check_machine(isolation: str | None) -> None:
    """This pytest, this OS and the isolation asked for can grade at all."""
    from ..pytest_internals import UnsupportedPytest, check_supported
    from ..sandbox import Unavailable, choose, require_linux, stop_all

    try:
        check_supported()  # the one session per worker needs pytest's private API: refused, not graded slower
        require_linux()  # off Linux no worker can start: say so before grading anyone
    except (UnsupportedPytest, Unavailable) as exc:
        raise Refused(str(exc)) from None
    if isolation:
        try:
            choose(isolation)  # bwrap asked for where it cannot run: say so before grading anyone
        except Unavailable as exc:
            raise Refused(str(exc)) from None
        finally:
            stop_all()  # the probe's zygote: each forked worker starts its own


def _settle_shard(args: argparse.Namespace, out: Path) -> Path:
    """OUT for this run: --shard checked, else the shard a job array's
    environment names, whose part gets a folder of its own in OUT."""
    if args.shard is not None:
        try:
            parse_shard(args.shard)
        except ValueError:
            raise Refused(msg("class.bad_shard", shard=args.shard)) from None
        return out
    try:
        found = shard_from_environment(os.environ)
    except ShardError as exc:
        raise Refused(str(exc)) from None
    if not found:
        return out
    # every task of the job may share one OUT: each writes its own part of it
    args.shard, source = found
    out = out / part_folder(args.shard)
    print(msg("class.shard_from", shard=args.shard, source=source, out=str(out)), file=sys.stderr)
    return out


def _check_roster(roster: Path) -> None:
    from .class_data import OutputsError
    from .outputs import read_roster

    try:
        read_roster(roster)  # a bad roster is told before grading, not after
    except OutputsError as exc:
        raise Refused(str(exc)) from None

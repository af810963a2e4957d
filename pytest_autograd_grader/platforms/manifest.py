"""Manifests of a course's check files: the ``manifest`` command writes them.

``python -m pytest_autograd_grader manifest CHECKS_DIR`` lists every check
file of CHECKS_DIR (a file pytest collects checks from), with its sha256 and
the checks it holds (node id, concept, points, visibility), plus the files
that change grading without holding checks (``conftest.py``, ``pytest.ini``).
The student's modules (every other ``.py`` file) are not in it: they are what
the student edits.

Grading with one (``--grade-manifest``) is manifest_guard.py's.

Hashes read CRLF line endings as LF, so a checkout that converts line endings
(git's autocrlf on Windows) still matches.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import sys
from pathlib import Path, PurePosixPath

import pytest

from ..i18n import msg

SCHEMA = "pytest-autograd-grader-manifest/1"
DEFAULT_OUTPUT = "grade-manifest.json"
# files that change how the checks beside and below them are graded
SUPPORT_FILES = ("conftest.py", "pytest.ini")
REGENERATE = "python -m pytest_autograd_grader manifest CHECKS_DIR"


# -- the command ----------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checks", metavar="CHECKS_DIR", help="the folder of the course's check files")
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        default=DEFAULT_OUTPUT,
        help=f"where to write the manifest (default: {DEFAULT_OUTPUT})",
    )


def run(args: argparse.Namespace) -> int:
    checks_dir = Path(args.checks)
    if not checks_dir.is_dir():
        print(msg("manifest.not_dir", path=args.checks), file=sys.stderr)
        return 2
    try:
        manifest = build_manifest(checks_dir)
    except ManifestError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    from ..reporters import ReportWriteError, write_json_atomic

    output = Path(args.output)
    try:
        write_json_atomic(output, manifest)
    except ReportWriteError as exc:
        print(msg("manifest.write_failed", path=args.output, reason=str(exc)), file=sys.stderr)
        return 2
    checks = sum(len(entry["checks"]) for entry in manifest["files"].values())
    print(msg("manifest.written", path=output, files=len(manifest["files"]), checks=checks))
    return 0


class ManifestError(Exception):
    """The checks could not be listed; the message says why, in words."""


def file_hash(path: Path) -> str:
    # CRLF as LF: a Windows checkout of the same files must match
    return hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).hexdigest()


def build_manifest(checks_dir: Path) -> dict:
    """The manifest of ``checks_dir``: raises ManifestError when pytest
    cannot list every check (a manifest missing checks would let a student
    delete them unnoticed)."""
    checks_dir = Path(os.path.abspath(checks_dir))
    files: dict[str, dict] = {}
    for item in collect_checks(checks_dir):
        entry = files.setdefault(item["file"], {"sha256": file_hash(checks_dir / item["file"]), "checks": []})
        entry["checks"].append({k: v for k, v in item.items() if k != "file"})
    for path in support_files(checks_dir):
        files.setdefault(relative(path, checks_dir), {"sha256": file_hash(path), "checks": []})
    return {"schema": SCHEMA, "files": dict(sorted(files.items()))}


def relative(path: Path, base: Path) -> str:
    return PurePosixPath(*path.relative_to(base).parts).as_posix()


def support_files(directory: Path) -> list[Path]:
    """Every conftest.py and pytest.ini under ``directory``."""
    found = []
    for root, dirs, names in os.walk(directory):
        # pytest never collects these; the sort keeps the walk reproducible
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        found += [Path(root) / name for name in sorted(names) if name in SUPPORT_FILES]
    return found


class _Collector:
    """The pytest plugin that records what collection found."""

    def __init__(self, checks_dir: Path):
        self.checks_dir = checks_dir
        self.items: list[dict] = []
        self.errors: list[tuple[str, str]] = []  # (node id, the error's text)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.errors.append((report.nodeid or ".", str(report.longrepr)))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from ..declarations import spec_of, title_of

        for item in session.items:
            if not Path(item.path).is_relative_to(self.checks_dir):
                continue  # not a check of this directory (a plugin's item)
            spec = spec_of(item)
            self.items.append(
                {
                    "file": relative(Path(item.path), self.checks_dir),
                    "id": item.nodeid,
                    "concept": spec.concept,
                    "points": spec.points,
                    "hidden": spec.hidden,
                    "visibility": spec.visibility,
                    "title": title_of(item),
                }
            )


def collect_checks(checks_dir: Path) -> list[dict]:
    """The checks pytest collects in ``checks_dir`` (rootdir there, with its
    own pytest.ini or none), each as {file, id, concept, points, hidden,
    visibility, title}. Pytest's output is kept from the terminal and
    shown only when collection fails."""
    from ..declarations import collect_cause

    ini = checks_dir / "pytest.ini"
    collector = _Collector(checks_dir)
    # Nothing runs and nothing is shown, so the plugins that only report
    # are off: the terminal (other plugins' summaries import heavy modules,
    # hypothesis's ~3 s) and unraisableexception (its clean-up runs
    # gc.collect() five times, ~1 s over torch's heap).
    args = [
        "--collect-only",
        "-p",
        "no:terminal",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:unraisableexception",
        "--rootdir",
        str(checks_dir),
        "-c",
        str(ini) if ini.is_file() else os.devnull,
        str(checks_dir),
    ]
    output = io.StringIO()
    modules, path = dict(sys.modules), list(sys.path)
    addopts = os.environ.pop("PYTEST_ADDOPTS", None)  # e.g. a CI's --grade: listing is no grading run
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            code = pytest.main(args, plugins=[collector])
    finally:
        if addopts is not None:
            os.environ["PYTEST_ADDOPTS"] = addopts
        sys.path[:] = path
        # Forget the check modules just imported, so that a later collection
        # in this process (a test, an editor) reads the files again, and put
        # back a module of the caller's that one of them replaced under the
        # same name (the checks' conftest.py is imported as "conftest").
        for name in set(sys.modules) - set(modules):
            file = getattr(sys.modules[name], "__file__", None) or ""
            if os.path.abspath(file).startswith(str(checks_dir) + os.sep):
                del sys.modules[name]
        for name, module in modules.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module
    if collector.errors:
        raise ManifestError(
            "\n".join(
                msg("manifest.collect_error", file=nodeid, cause=collect_cause(text))
                for nodeid, text in collector.errors
            )
        )
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise ManifestError(
            msg("manifest.pytest_failed", path=checks_dir, code=int(code), output=output.getvalue().strip())
        )
    if not collector.items:
        raise ManifestError(msg("manifest.no_checks", path=checks_dir))
    return collector.items

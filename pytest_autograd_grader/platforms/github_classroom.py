"""``autograd-grader github-classroom CHECKS -o DIR``: an instructor's course
for GitHub Classroom, as two repositories to push.

``DIR/checks/``, the private checks repository: a copy of CHECKS (the same
rules as gradescope-bundle's: regular files only, no caches, VCS data or
symbolic links; a minimal ``pytest.ini`` when there is none), its
``grade-manifest.json`` (as ``autograd-grader manifest`` writes it), the
grader's wheel in ``wheels/`` and a README for the instructor.

``DIR/template/``, the student template repository: ``exercises/`` with
everything of CHECKS but the hidden check files (the stubs, helpers,
``conftest.py`` and the visible check files, so students can self-check),
``.github/workflows/classroom.yml`` (which
installs the grader from ``checks/wheels/`` of the checked-out checks
repository, never from the student's repository or by a package name),
``grader/`` with the same wheel for the student's self-check, and a README
for students.

A check file counts as hidden, and stays out of the template, when any
check pytest collects from it is hidden (its entry in the manifest), or
when its source passes ``hidden=`` anything but the constant ``False`` to a
``grade`` mark (so a hidden value pytest could not read, or one a conftest
hook would add, still keeps it out).
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath

from .. import __version__
from ..boundary.layout import is_check_file
from ..i18n import msg
from . import SetupError
from .course_files import FILE_MODE, listing, overlaps, read_checks, refuse_inside
from .wheel import grader_wheel

PREFIX = "github_classroom"  # its messages in the catalogue
WORKFLOW = ".github/workflows/classroom.yml"
MANIFEST = "grade-manifest.json"
# files the command writes into the checks repository itself: copies in
# CHECKS (an earlier course's checks repository) are not the instructor's
OWN_FILES = (MANIFEST, "README.md")
# what a student's clone makes that is no part of the work: a virtual
# environment (the README's `python -m venv .venv`), caches of Python,
# pytest and Jupyter, macOS's folder files
GITIGNORE = b".venv/\nvenv/\n__pycache__/\n*.pyc\n.pytest_cache/\n.ipynb_checkpoints/\n.DS_Store\n"


@dataclass
class Course:
    """The two repositories: name -> (bytes, mode) each."""

    checks: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    template: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    hidden: list[str] = field(default_factory=list)  # check files left out of the template
    warnings: list[str] = field(default_factory=list)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "checks",
        metavar="CHECKS",
        help="the directory of your checks: test_*.py (visible and hidden), conftest.py, "
        "pytest.ini, helpers, and the stub modules students complete",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        required=True,
        help="where to write the course: DIR/checks (the private checks repository) and "
        "DIR/template (the student template repository)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="write into DIR even when it is not empty: DIR/checks and DIR/template are replaced "
        "(their .git folders are kept, so a re-run updates repositories already pushed)",
    )


def run(args: argparse.Namespace) -> int:
    checks, output = Path(args.checks), Path(args.output)
    try:
        check_output(checks, output, args.force)
        course = build_course(checks)
        write_course(course, output)
    except SetupError as exc:
        print(exc, file=sys.stderr)
        return 2
    for warning in course.warnings:
        print(warning, file=sys.stderr)
    for name in course.hidden:
        print(msg("github_classroom.hidden", file=checks / name))
    print(msg("github_classroom.wrote_checks", path=output / "checks"))
    print("\n".join(listing(course.checks)))
    print(msg("github_classroom.wrote_template", path=output / "template"))
    print("\n".join(listing(course.template)))
    print(msg("github_classroom.next", checks=output / "checks", template=output / "template"))
    return 0


def check_output(checks: Path, output: Path, force: bool) -> None:
    """SetupError unless ``output`` may take the course: not inside CHECKS,
    its checks/ and template/ not holding CHECKS, empty unless ``force``."""
    if not checks.is_dir():
        raise SetupError(msg("github_classroom.not_dir", path=str(checks)))
    refuse_inside(output, checks, PREFIX)
    for part in ("checks", "template"):
        if overlaps(output / part, checks):
            raise SetupError(msg("github_classroom.output_holds_checks", output=str(output / part), path=str(checks)))
    if output.exists() and not output.is_dir():
        raise SetupError(msg("github_classroom.output_not_dir", output=str(output)))
    if output.is_dir() and any(output.iterdir()) and not force:
        raise SetupError(msg("github_classroom.output_not_empty", output=str(output)))


def build_course(checks: Path) -> Course:
    """Both repositories' files; raises SetupError on bad input."""
    copied = read_checks(checks, PREFIX)
    course = Course(warnings=copied.warnings)
    for name in sorted(copied.files):
        if name in OWN_FILES or (name.startswith("wheels/") and name.endswith(".whl")):
            # the workflow installs the one wheel in wheels/: an old one beside it would break it
            del copied.files[name]
            course.warnings.append(msg("github_classroom.own_file", file=checks / name))
    manifest = _manifest(copied.files)
    course.hidden = [
        name
        for name in sorted(copied.files)
        if is_check_file(PurePosixPath(name).name) and _is_hidden(name, copied.files[name], manifest)
    ]
    wheel = grader_wheel()
    course.checks = {name: (data, FILE_MODE) for name, data in copied.files.items()}
    course.checks[MANIFEST] = ((json.dumps(manifest, indent=2) + "\n").encode(), FILE_MODE)
    course.checks[f"wheels/{wheel.name}"] = (wheel.data, FILE_MODE)
    course.checks["README.md"] = (_resource("checks-README.md", wheel.name), FILE_MODE)
    exercises = {
        name: data for name, data in copied.files.items() if name not in course.hidden and name not in copied.added
    }
    if not any(
        name.endswith(".py") and name.rsplit("/", 1)[-1] != "conftest.py" and not is_check_file(name.rsplit("/", 1)[-1])
        for name in exercises
    ):
        course.warnings.append(msg("github_classroom.no_modules", path=checks))
    course.template = {f"exercises/{name}": (data, FILE_MODE) for name, data in exercises.items()}
    course.template[WORKFLOW] = (workflow(), FILE_MODE)
    course.template[f"grader/{wheel.name}"] = (wheel.data, FILE_MODE)
    course.template["README.md"] = (_resource("template-README.md", wheel.name), FILE_MODE)
    course.template[".gitignore"] = (GITIGNORE, FILE_MODE)
    return course


def write_course(course: Course, output: Path) -> None:
    """Write both repositories under ``output``, replacing what an earlier
    run wrote there but keeping each repository's ``.git``."""
    try:
        for part, files in (("checks", course.checks), ("template", course.template)):
            target = output / part
            _clear(target)
            for name, (data, mode) in sorted(files.items()):
                path = target / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
                path.chmod(mode)
    except OSError as exc:
        raise SetupError(msg("github_classroom.write_failed", output=str(output), reason=str(exc))) from None


def workflow() -> bytes:
    """The workflow students' repositories run: github_files/classroom.yml,
    its one source (templates/github-classroom/README.md points here)."""
    return resources.files(__package__).joinpath("github_files").joinpath("classroom.yml").read_bytes()


# -- the pieces --------------------------------------------------------------


def _manifest(files: dict[str, bytes]) -> dict:
    """The manifest of the checks as DIR/checks will hold them (pytest.ini
    included), listed from a copy so that a failure writes nothing."""
    from .course_files import manifest_of_files
    from .manifest import ManifestError

    try:
        return manifest_of_files(files, prefix="github-classroom-")
    except ManifestError as exc:
        raise SetupError(msg("github_classroom.manifest_failed", reason=str(exc))) from None


def _is_hidden(name: str, source: bytes, manifest: dict) -> bool:
    checks = manifest["files"].get(name, {}).get("checks", [])
    return any(check.get("hidden") for check in checks) or _marks_hidden(source)


def _marks_hidden(source: bytes) -> bool:
    """Whether a ``grade(...)`` call in ``source`` passes ``hidden=`` (or
    ``**kwargs``, which may hold it) anything but the constant False."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True  # cannot tell: keep it out of the students' hands
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
        if name != "grade":
            continue
        for keyword in node.keywords:
            if keyword.arg in ("hidden", None) and not (
                isinstance(keyword.value, ast.Constant) and keyword.value.value is False
            ):
                return True
    return False


def _resource(name: str, wheel: str) -> bytes:
    text = resources.files(__package__).joinpath("github_files").joinpath(name).read_text(encoding="utf-8")
    return text.replace("@WHEEL@", wheel).replace("@VERSION@", __version__).encode("utf-8")


def _clear(target: Path) -> None:
    """Empty ``target`` (a link there is removed, never followed), keeping
    its ``.git``."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    if not target.is_dir():
        return
    for entry in target.iterdir():
        if entry.name == ".git":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()

"""Submissions as the LMS hands them out, laid out for the class runner:
one folder per student.

``--submissions`` may be a folder or a zip, in any of the bulk exports in
``FORMATS`` (one module each, behind the ``Format`` protocol, as
pytest-xdist keeps one scheduler per file): Canvas's "Download
Submissions" zip, Moodle's "Download all submissions", Gradescope's export,
GitHub Classroom's clone of every repository, and plain folders or zips
per student. ``gather`` finds which one it is and lays the students out
under OUT (zips unpacked with the sandbox's limits, ``unpack.py``); a
folder of plain folders is graded where it is. What a format knows beyond
the files (the student's name as the LMS spells it, a late upload, the
LMS's id for the student) is kept in ``Handed`` and goes into each
student's report."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ...i18n import msg
from .unpack import UnpackError, unpack

INTAKE = ".intake"        # OUT/.intake: the unpacked class


@dataclass
class Handed:
    """One student's submission as an export hands it in."""

    name: str                   # as the LMS spells it
    folder: str = ""            # the student's folder in the class laid out for grading (default: name)
    late: bool = False
    lms: str = ""               # the export's format (FORMATS' names)
    lms_id: str = ""            # the LMS's id of the student (Canvas's user id, Moodle's participant id, ...)
    problems: list[str] = field(default_factory=list)  # what could not be unpacked, for the instructor


@dataclass
class Intake:
    """The class laid out for grading."""

    graded: Path                # one folder per student
    export: str                 # the format's name
    handed: dict[str, Handed]   # what the export knew of each student, by folder
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (name, why) of what is no student's: link, file


class Format(Protocol):
    name: str

    def detect(self, root: Path) -> bool:
        """Whether ``root`` (an unpacked export) is this format's."""

    def collect(self, root: Path, into: Path) -> tuple[Path, list[Handed]]:
        """(the folder of one folder per student, what the export knew of
        each): the students' files laid out in ``into`` (or left where they
        are in ``root`` where they already are one folder each)."""

    def skipped(self, root: Path) -> list[tuple[str, str]]:
        """(name, why) of the entries of ``root`` that are no student's."""


def _formats() -> list[Format]:
    from . import canvas, folders, github_classroom, gradescope, moodle

    # most telling first: a metadata file, then file names of a known pattern
    return [gradescope.FORMAT, moodle.FORMAT, canvas.FORMAT, github_classroom.FORMAT, folders.FORMAT]


class IntakeError(Exception):
    """The submissions cannot be read at all; the message says what to do."""


def gather(source: Path, out: Path) -> Intake:
    """The class in ``source`` (a folder or a zip) laid out one folder per
    student; zips are unpacked, and students' files laid out, in OUT/.intake."""
    staging = out / INTAKE
    if staging.exists():
        shutil.rmtree(staging)  # laid out anew from the export on every run: the export is the source
    students = staging / "students"
    if source.is_dir():
        root = source
    else:
        try:
            unpack(source, staging / "export", bulk=True)
        except UnpackError as exc:
            raise IntakeError(msg("intake.unreadable", path=str(source), reason=str(exc))) from None
        root = _single_folder(staging / "export")
    fmt = next(f for f in _formats() if f.detect(root))  # folders takes anything
    graded, handed = fmt.collect(root, students)
    for h in handed:
        h.folder, h.lms = h.folder or h.name, fmt.name
    # a class graded where it is: the class runner names what it skips there itself
    return Intake(graded, fmt.name, {h.folder: h for h in handed}, fmt.skipped(root) if graded != root else [])


def _single_folder(root: Path) -> Path:
    """The one folder an export's zip holds (assignment_123_export/), else the root."""
    entries = [p for p in root.iterdir() if not p.name.startswith((".", "__MACOSX"))]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else root


def place(files: list[tuple[Path, str]], folder: Path, handed: Handed) -> None:
    """Copy each (file, relative name) into the student's folder, unpacking
    a zip there (a student's zip is unpacked with the sandbox's limits), and
    strip the "-1" Canvas and browsers add to a file uploaded twice."""
    folder.mkdir(parents=True, exist_ok=True)
    for path, name in files:
        parts = [part for part in Path(name).parts if part not in ("", ".", "..", "/")]
        target = folder.joinpath(*parts) if parts else folder / "file"
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.suffix.lower() == ".zip":
            try:
                unpack(path, target.with_suffix(""))
            except UnpackError as exc:
                handed.problems.append(msg("intake.student_zip", name=target.name, reason=str(exc)))
            continue
        if not target.exists():
            shutil.copyfile(path, target)
    _undo_renames(folder)


def _undo_renames(folder: Path) -> None:
    """leaf-1.py -> leaf.py where no leaf.py came: the latest of several."""
    renamed: dict[Path, tuple[int, Path]] = {}
    for path in [*folder.rglob("*.py"), *folder.rglob("*.ipynb")]:
        found = re.fullmatch(r"(.+)-(\d+)", path.stem)
        if found:
            plain = path.parent / f"{found.group(1)}{path.suffix}"
            if not plain.exists() and int(found.group(2)) >= renamed.get(plain, (-1, path))[0]:
                renamed[plain] = (int(found.group(2)), path)
    for plain, (_, path) in renamed.items():
        path.rename(plain)

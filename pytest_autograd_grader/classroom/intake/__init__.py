"""Submissions as the LMS hands them out, laid out for the class runner:
one folder per student.

``--submissions`` may be a folder or a zip, in any of the bulk exports in
``FORMATS`` (one module each, behind the ``Format`` protocol, as
pytest-xdist keeps one scheduler per file): Canvas's "Download
Submissions" zip, Moodle's "Download all submissions", Gradescope's export,
GitHub Classroom's clone of every repository, and plain folders or zips
per student. An export is hostile input: its names are data, never paths
(``export.py`` reads it without writing anything by them), each student's
folder is a name the grader makes (``students.safe_folder``), and every
file is written by ``write.py`` under that folder in OUT/.intake, within
one budget per student. ``gather`` reads the export as the one format that
accounts for most of its entries (or refuses a mix) and names what does
not fit; a folder of plain folders is graded where it is. What a format
knows beyond the files (the LMS's spelling of the name, a late upload, the
LMS's ids) is kept in ``Handed`` and goes into each student's report."""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ...boundary.layout import TOOL_FOLDERS
from ...i18n import msg
from ..students import safe_folder
from .export import READ_ERRORS, Entry, Export, export_budget, read_zip
from .unpack import expand, free
from .write import Budget, OverBudget, UnpackError, clean_parts, folder_in, private_dir, reason, write_new

INTAKE = ".intake"  # OUT/.intake: the unpacked class, readable by the grader only


@dataclass
class Handed:
    """One student's submission as an export hands it in."""

    name: str  # as the LMS spells it: data, never a path
    folder: str = ""  # the student's folder in the class laid out for grading (made by the grader)
    late: bool = False
    lms: str = ""  # the export's format (FORMATS' names)
    lms_id: str = ""  # the LMS's id of the student (Canvas's user id, Moodle's participant id, ...)
    submission_id: str = ""  # the LMS's id of what was handed in (Gradescope's submission, Canvas's newest upload)
    problems: list[str] = field(default_factory=list)  # what could not be laid out, for the instructor


@dataclass
class Intake:
    """The class laid out for grading."""

    graded: Path  # one folder per student
    export: str  # the format's name
    handed: dict[str, Handed]  # what the export knew of each student, by folder
    # (name, why) of what is no student's: link, file, unmatched (not the format's), no_folder
    skipped: list[tuple[str, str]] = field(default_factory=list)


class Format(Protocol):
    name: str

    def claim(self, export: Export, name: str, kind: str) -> int | None:
        """Where the LMS's own part of the first-level entry ``name`` ends
        (the earlier, the surer the claim), or None: not this format's."""

    def collect(self, export: Export, names: dict[str, str], into: Path) -> tuple[Path, list[Handed]]:
        """(the folder of one folder per student, what the export knew of
        each) from the first-level entries ``names`` (name: kind) this format claims:
        laid out in ``into``, or graded where they are (``export.root``)."""


def _formats() -> list[Format]:
    from . import canvas, folders, github_classroom, gradescope, moodle

    # where two claim an entry equally surely, the first wins: a metadata file, then names of a known pattern
    return [gradescope.FORMAT, moodle.FORMAT, canvas.FORMAT, github_classroom.FORMAT, folders.FORMAT]


class IntakeError(Exception):
    """The submissions cannot be read at all; the message says what to do."""


def gather(source: Path, out: Path) -> Intake:
    """The class in ``source`` (a folder or a zip) laid out one folder per
    student in OUT/.intake; what the export holds that is no student's is
    named in ``skipped``, what a student's upload could not give in their
    ``problems``."""
    staging = _fresh(out / INTAKE)
    class_budget = export_budget()
    try:
        export = Export(root=source) if source.is_dir() else read_zip(source, class_budget)
    except UnpackError as exc:
        raise IntakeError(msg("intake.unreadable", path=str(source), reason=str(exc))) from None
    try:
        top = export.top()
        fmt = _choose(export, top, str(source))
        mine = {name: kind for name, kind in top.items() if fmt.claim(export, name, kind) is not None}
        export.budget = class_budget
        graded, handed = fmt.collect(export, mine, staging / "students")
    finally:
        export.close()
    if graded != export.root and not graded.is_dir():
        private_dir(graded)  # an export of no student: a class of none, not a missing folder
    for h in handed:
        h.lms = fmt.name
    if graded == export.root:  # graded where it is: the class runner names what it skips there itself
        return Intake(graded, fmt.name, {h.folder: h for h in handed}, [])
    skipped = [(name, _why(fmt, kind)) for name, kind in top.items() if name not in mine]
    return Intake(graded, fmt.name, {h.folder: h for h in handed}, skipped)


def _fresh(staging: Path) -> Path:
    """OUT/.intake, empty and private: laid out anew from the export on every run."""
    if staging.is_symlink() or staging.is_file():
        staging.unlink()
    elif staging.exists():
        shutil.rmtree(staging)
    staging.parent.mkdir(parents=True, exist_ok=True)
    staging.mkdir(mode=0o700)
    os.chmod(staging, 0o700)  # whatever the umask: classmates graded as other uids must not read in
    return staging


def _choose(export: Export, top: dict[str, str], source: str) -> Format:
    """The format that surely claims most entries: each entry goes to the
    format whose own part of its name ends first (a Moodle file named like
    a Canvas one is still Moodle's); a tie between two is refused."""
    formats = _formats()
    winners: Counter[int] = Counter()
    for name, kind in top.items():
        bids = [(anchor, i) for i, fmt in enumerate(formats) if (anchor := fmt.claim(export, name, kind)) is not None]
        if bids:
            winners[min(bids)[1]] += 1
    ranked = winners.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        first, second = sorted((ranked[0][0], ranked[1][0]))
        raise IntakeError(
            msg("intake.mixed", path=source, first=formats[first].name, second=formats[second].name, count=ranked[0][1])
        )
    return formats[ranked[0][0]] if ranked else formats[-1]


def _why(fmt: Format, kind: str) -> str:
    if kind == "link":
        return "link"
    return "file" if fmt.name == "folders" and kind == "file" else "unmatched"


def place(export: Export, uploads: list[tuple[Entry, str]], folder: Path, handed: Handed) -> None:
    """Lay each (entry, the name the student gave it) out in the student's
    new ``folder``: a zip unpacked (wrapping folders stripped), anything
    else copied; a name that cannot be written costs only itself, a spent
    budget only this student. Canvas's "-1" for a file uploaded twice is
    undone."""
    budget = Budget(parent=export.budget)  # one student's, charged to the export's too
    try:
        private_dir(folder.parent)
        private_dir(folder)
    except OSError as exc:
        handed.problems.append(msg("intake.unwritable", name=handed.folder, reason=reason(exc)))
        return
    for entry, name in uploads:
        try:
            _place_one(export, entry, name, folder, handed, budget)
        except OverBudget as exc:
            handed.problems.append(msg("intake.student_zip", name=name, reason=str(exc)))
    _undo_renames(folder)


def _place_one(export: Export, entry: Entry, name: str, folder: Path, handed: Handed, budget: Budget) -> None:
    parts = clean_parts(name)
    if entry.kind == "link":
        handed.problems.append(msg("intake.link", name=name))
    elif entry.kind not in ("file", "dir"):
        handed.problems.append(msg("intake.unwritable", name=name, reason="not a regular file"))
    elif parts is None:
        handed.problems.append(msg("intake.bad_name", name=name))
    else:
        try:
            if entry.kind == "dir":
                folder_in(folder, parts, budget)
            elif parts[-1].lower().endswith(".zip"):
                _place_zip(export, entry, name, folder, parts, handed, budget)
            else:
                with export.open(entry) as source:
                    write_new(folder, parts, source, budget)
        except FileExistsError:
            handed.problems.append(msg("intake.twice", name=name))
        except OSError as exc:
            handed.problems.append(msg("intake.unwritable", name=name, reason=reason(exc)))
        except OverBudget:
            raise
        except (UnpackError, *READ_ERRORS) as exc:  # a member the export cannot give
            handed.problems.append(msg("intake.unwritable", name=name, reason=str(exc) or type(exc).__name__))


def _place_zip(
    export: Export, entry: Entry, name: str, folder: Path, parts: tuple[str, ...], handed: Handed, budget: Budget
) -> None:
    """A zip the student uploaded: its contents become the folder named as the zip is."""
    with export.open(entry) as source:
        copy = write_new(folder, (free(folder, ".upload").name,), source, budget)
    try:
        parent = folder_in(folder, parts[:-1], budget)
        handed.problems.extend(expand(copy, free(parent, parts[-1][:-4] or "upload"), budget))
    except UnpackError as exc:
        handed.problems.append(msg("intake.student_zip", name=name, reason=str(exc)))
    finally:
        copy.unlink(missing_ok=True)


def _undo_renames(folder: Path) -> None:
    """leaf-1.py -> leaf.py where no leaf.py came: the latest of several."""
    renamed: dict[Path, tuple[int, Path]] = {}
    for path in [*folder.rglob("*.py"), *folder.rglob("*.ipynb")]:
        found = re.fullmatch(r"(.+)-(\d+)", path.stem)
        if found and not path.is_symlink():
            plain = path.parent / f"{found.group(1)}{path.suffix}"
            if not plain.exists() and int(found.group(2)) >= renamed.get(plain, (-1, path))[0]:
                renamed[plain] = (int(found.group(2)), path)
    for plain, (_, path) in renamed.items():
        try:
            os.rename(path, plain)
        except OSError:
            pass  # the upload is graded under the name it came with


def lay_out(export: Export, name: str, kind: str, student: Handed, into: Path, taken: set[str]) -> None:
    """A first-level folder (its files) or zip (its contents) of the export as one student's folder."""
    student.folder = safe_folder(student.folder or student.name, taken)
    if kind == "dir":
        # what tools keep beside the code (.git, venv, caches) is not staged for grading either
        files = [(e, "/".join(e.parts)) for e in export.under(name) if not TOOL_FOLDERS & set(e.parts)]
        place(export, files, into / student.folder, student)
    else:
        _place_whole_zip(export, name, into / student.folder, student)


def _place_whole_zip(export: Export, name: str, folder: Path, student: Handed) -> None:
    """``alice.zip``: its contents (wrapping folders stripped) are alice's folder."""
    budget = Budget(parent=export.budget)
    private_dir(folder.parent)
    scratch = free(folder.parent, ".upload")
    try:
        with export.open(export.entry(name)) as source:
            copy = write_new(folder.parent, (scratch.name,), source, budget)
        student.problems.extend(expand(copy, folder, budget))
    except OSError as exc:
        student.problems.append(msg("intake.student_zip", name=name, reason=reason(exc)))
    except (UnpackError, *READ_ERRORS) as exc:
        student.problems.append(msg("intake.student_zip", name=name, reason=str(exc) or type(exc).__name__))
    finally:
        scratch.unlink(missing_ok=True)
    if not folder.is_dir():
        private_dir(folder)

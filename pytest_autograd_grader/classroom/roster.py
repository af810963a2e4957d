"""A class's roster (``--roster``) and the roster line each submission is
matched to: by the LMS's own id first, by name only then.

A roster is a CSV whose first line names its columns (any case, any order,
``SIS User ID`` read as ``sis_user_id``):

- identities, each one student's alone (a value on two lines is an error):
  ``id`` (the LMS's id of the student: Canvas's user id, Moodle's
  participant id, Gradescope's SID), ``sis_user_id``, ``sis_login_id``,
  ``email``;
- names: ``student`` (the student's id in OUT or their submission folder's
  name; one student's alone too) and ``name`` (the person's name, shown in
  the gradebook; two students may share one);
- display only: ``section``.

Canvas's gradebook export (Grades > Export) serves as it is: its
``Student`` column holds the people's names ("Liddell, Alice", which two
students may share), so a roster whose first line has Canvas's own
``Student`` and ``ID`` and no ``name`` reads ``Student`` as ``name``.

A submission that carries an LMS id (from an LMS's export) is matched to
the line holding that id; only where no line does, by name, and then only
to a line holding no id of that kind (a line with a Canvas id belongs to
the Canvas user with that id, whatever a display name says). Names compare
folded (``folded``). A roster line two submissions match, or a submission
two roster lines match, is a clash: the caller refuses the LMS file.
"""

from __future__ import annotations

import csv
import io
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..boundary.untrusted import shown
from ..i18n import msg
from ..protocol import StudentStatus
from .class_data import ClassData, OutputsError

NAMES = ("student", "name")
IDENTITIES = ("id", "sis_user_id", "sis_login_id", "email")
COLUMNS = (*NAMES, *IDENTITIES, "section")
UNIQUE = ("student", *IDENTITIES)  # a value of these on two lines would be two students' at once
# The roster columns that may hold the id an LMS's export gives a student
# (the report's ``lms_id``), most telling first. Canvas's and Moodle's ids
# are their own numbers, never an SIS id: looking for them elsewhere could
# only find someone else. An LMS not listed: any identity column.
LMS_ID_COLUMNS = {
    "canvas": ("id",),
    "moodle": ("id",),
    "gradescope": ("id", "sis_user_id"),  # the SID, the school's student number
}
EMAIL_COLUMNS = ("email", "sis_login_id")  # Gradescope names a submitter without a SID by their email
# other ids a report may carry beside ``lms_id``, and the columns that hold them
OTHER_IDS = {"email": EMAIL_COLUMNS}
# the line of Canvas's gradebook export that gives each assignment's maximum
_POINTS_POSSIBLE = "points possible"


def folded(text: str) -> str:
    """How two spellings of one name (or id) compare: Unicode
    compatibility-folded, case-folded, every run of whitespace one space.

    NFKC rather than NFC: besides the composed and decomposed é (a zip made
    on a Mac), it folds what looks the same to a reader but is typed
    otherwise (fullwidth letters and the ideographic space of an East Asian
    input method, ligatures, non-breaking spaces). Folding more can only
    make two students look alike, and that is refused, never merged; it
    cannot make one student two."""
    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(text.split())


@dataclass(eq=False)  # a line is itself: two lines with the same text are still two
class Entry:
    """One line of the roster: its number and its understood cells."""

    line: int
    cells: dict[str, str]

    def get(self, column: str) -> str:
        return self.cells.get(column, "")

    def label(self, path: Path) -> str:
        who = "; ".join(f"{c} {self.get(c)}" for c in (*NAMES, *IDENTITIES) if self.get(c))
        return msg("classout.roster_line", line=self.line, path=str(path), who=who)


@dataclass
class Roster:
    path: Path
    entries: list[Entry]
    ids: dict[str, dict[str, Entry]] = field(default_factory=dict)  # UNIQUE column -> key of a value -> its line
    names: dict[str, list[Entry]] = field(default_factory=dict)  # key of a student or name -> their lines


def _column(header: str | None) -> str:
    return "_".join((header or "").strip().lower().replace("-", " ").split())


def read_roster(path: Path) -> Roster:
    """The roster at ``path``; ``OutputsError`` for one the grader cannot
    use: unreadable, no column to match a student by, or one id (or
    student) on two lines."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # Excel writes a BOM
    except (OSError, UnicodeDecodeError) as exc:
        raise OutputsError(msg("classout.roster_unreadable", path=str(path), error=str(exc))) from None
    reader = csv.DictReader(io.StringIO(text))
    headers = {_column(h): h for h in reversed(reader.fieldnames or ())}  # the first of two alike wins
    if _canvas_export(reader.fieldnames or ()) and "name" not in headers:
        headers["name"] = headers.pop("student")
    if not any(c in headers for c in (*NAMES, *IDENTITIES)):
        raise OutputsError(
            msg(
                "classout.roster_columns",
                path=str(path),
                identities=", ".join(IDENTITIES),
                names=", ".join(NAMES),
                columns=", ".join(COLUMNS),
            )
        )
    roster = Roster(Path(path), [], {c: {} for c in UNIQUE})
    for row in reader:
        cells = {c: shown(str(row.get(headers[c]) or "").strip()) for c in COLUMNS if c in headers}
        entry = Entry(reader.line_num, cells)
        if not any(entry.get(c) for c in (*NAMES, *IDENTITIES)) or _points_possible(entry):
            continue
        _add(roster, entry)
    return roster


def _canvas_export(fieldnames: Iterable[str]) -> bool:
    """A first line as Canvas's gradebook export writes it (its spelling
    exactly: a roster of our own columns writes ``student`` and ``id``)."""
    names = [str(h or "").strip() for h in fieldnames]
    return "Student" in names and "ID" in names


def _points_possible(entry: Entry) -> bool:
    """Canvas's gradebook export's second line, which is no student."""
    return not any(entry.get(c) for c in IDENTITIES) and any(folded(entry.get(c)) == _POINTS_POSSIBLE for c in NAMES)


def _add(roster: Roster, entry: Entry) -> None:
    for column in UNIQUE:
        key = folded(entry.get(column))
        first = roster.ids[column].get(key)
        if key and first is not None:
            raise OutputsError(
                msg(
                    "classout.roster_twice",
                    path=str(roster.path),
                    first=first.line,
                    second=entry.line,
                    column=column,
                    value=entry.get(column),
                )
            )
        if key:
            roster.ids[column][key] = entry
    roster.entries.append(entry)
    for key in dict.fromkeys(folded(entry.get(c)) for c in NAMES):
        if key:
            roster.names.setdefault(key, []).append(entry)


def _lines(found: Iterable[Entry | None]) -> list[Entry]:
    return sorted(dict.fromkeys(e for e in found if e is not None), key=lambda e: e.line)


def candidates(roster: Roster, report: dict[str, Any]) -> list[Entry]:
    """The roster lines ``report`` may be: those holding an id it carries,
    else those whose student or name is its id, folder or name, leaving
    out a line that holds an id of the kind the report carries (that line
    is someone's by that id)."""
    lms_id = str(report.get("lms_id") or "")
    held = [
        (
            folded(lms_id),
            EMAIL_COLUMNS if "@" in lms_id else LMS_ID_COLUMNS.get(str(report.get("lms") or ""), IDENTITIES),
        )
    ]
    held += [(folded(report[f]), columns) for f, columns in OTHER_IDS.items() if isinstance(report.get(f), str)]
    held = [(value, columns) for value, columns in held if value]
    found = _lines(roster.ids[c].get(value) for value, columns in held for c in columns)
    if found:
        return found
    kinds = {c for _, columns in held for c in columns}
    texts = dict.fromkeys(folded(str(report.get(f) or "")) for f in ("student", "folder", "name"))
    return _lines(e for t in texts if t for e in roster.names.get(t, ()) if not any(e.get(c) for c in kinds))


def submission(report: dict[str, Any]) -> str:
    """A submission as a message names it: its folder, its report in OUT
    and the LMS's id for it."""
    if report.get("roster_only"):
        return report["roster_label"]
    if report.get("lms_id"):
        return msg(
            "classout.submission_lms",
            folder=report["folder"],
            student=report["student"],
            lms=report.get("lms") or "LMS",
            lms_id=report["lms_id"],
        )
    return msg("classout.submission", folder=report["folder"], student=report["student"])


@dataclass
class Reconciled:
    """Each row of the class with its roster line (None: the roster has
    none for it), and what the instructor is told."""

    pairs: list[tuple[dict[str, Any], Entry | None]]
    unmatched: list[str]  # folders of the submissions no line matches
    absent: list[str]  # roster students who handed in nothing
    clashes: list[str]  # why the LMS file cannot be written


def _missing(entry: Entry, path: Path) -> dict[str, Any]:
    student = next(entry.get(c) for c in (*NAMES, *IDENTITIES) if entry.get(c))
    return {
        "student": student,
        "folder": "",
        "status": StudentStatus.MISSING,
        "score": 0.0,
        "max_score": None,
        "percent": 0.0,
        "concepts": [],
        "checks": [],
        "seed": None,
        "started": "",
        "finished": "",
        "error": "",
        "name": entry.get("name"),
        "lms": "",
        "lms_id": "",
        "late": False,
        "roster_only": True,
        "roster_label": entry.label(path),
    }


def reconcile(data: ClassData, roster: Roster) -> Reconciled:
    """Match every submission to its roster line; every roster student
    nobody's submission matches is added to ``data`` as ``missing``. A
    submission matched alone takes its line's name (the roster's is the
    instructor's spelling)."""
    pairs: list[tuple[dict[str, Any], Entry | None]] = []
    claimed: dict[Entry, list[dict[str, Any]]] = {}
    disputed: set[Entry] = set()
    unmatched, clashes = [], []
    for report in data.students:
        found = candidates(roster, report)
        if len(found) > 1:
            disputed.update(found)
            clashes.append(
                msg(
                    "classout.clash_lines",
                    submission=submission(report),
                    count=len(found),
                    lines="; ".join(e.label(roster.path) for e in found),
                )
            )
        elif not found:
            unmatched.append(report["folder"] or report["student"])
        entry = found[0] if len(found) == 1 else None
        if entry is not None:
            claimed.setdefault(entry, []).append(report)
        pairs.append((report, entry))
    for entry in roster.entries:
        twins = claimed.get(entry, [])
        if len(twins) > 1:
            clashes.append(
                msg(
                    "classout.clash_twins",
                    line=entry.label(roster.path),
                    count=len(twins),
                    submissions="; ".join(submission(r) for r in twins),
                )
            )
        elif twins and entry.get("name"):
            twins[0]["name"] = entry.get("name")
    absent = []
    for entry in roster.entries:
        if entry not in claimed and entry not in disputed:
            data.students.append(_missing(entry, roster.path))
            pairs.append((data.students[-1], entry))
            absent.append(data.students[-1]["student"])
    return Reconciled(pairs, unmatched, absent, clashes)

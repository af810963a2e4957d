"""The class run's outputs for people and platforms: ``gradebook.csv``
(student x concept), ``canvas.csv`` (Canvas's gradebook import) and
``report.html`` (``html_report``), all built from the class's data as
read from OUT (``class_data``), so a resumed, partial or merged run gives the same files.

Every text a student controls (their folder's name, feedback) is hostile:
CSV cells that a spreadsheet would read as a formula are defused, and the
page escapes everything.
"""

from __future__ import annotations

import csv
import io
import unicodedata
from pathlib import Path
from typing import Any

from ..i18n import msg
from ..reporters.files import ReportWriteError, write_text_atomic
from .class_data import ClassData, OutputsError, concept_scores, format_score, load_class, max_total, percent, total

GRADEBOOK = "gradebook.csv"
CANVAS = "canvas.csv"
REPORT = "report.html"
DEFAULT_ASSIGNMENT = "Autograd"
LMS = ("canvas", "none")
ROSTER_COLUMNS = ("name", "id", "sis_user_id", "sis_login_id", "section")


# A cell a spreadsheet would evaluate: =HYPERLINK(...), +cmd, -2+3, @SUM(...)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def defuse(text: Any) -> str:
    """A text cell a spreadsheet shows as text (OWASP's CSV injection advice:
    prefix a quote to cells starting with a formula character)."""
    text = "" if text is None else str(text)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _csv(rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")  # RFC 4180, as spreadsheets write
    writer.writerows(rows)
    return buffer.getvalue()


# -- gradebook.csv ----------------------------------------------------------

def gradebook_rows(data: ClassData) -> list[list[str]]:
    # columns are only ever added at the end: an instructor's script keeps reading the others
    header = ["student", "folder", "status", *(c.id for c in data.concepts),
              "total", "max_score", "percent", "seed", "started", "finished", "name", "late"]
    rows = [header]
    for report in data.students:
        scores = concept_scores(report)
        graded = report.get("status") != "error"
        rows.append([
            defuse(report["student"]), defuse(report["folder"]), defuse(report["status"]),
            *(format_score(scores.get(c.id)) if graded else "" for c in data.concepts),
            format_score(total(report)), format_score(max_total(report, data)),
            format_score(percent(report, data), 2),
            "" if report["seed"] is None else str(report["seed"]), defuse(report["started"]), defuse(report["finished"]),
            defuse(report.get("name", "")), "late" if report.get("late") else "",
        ])
    return rows


# -- canvas.csv -------------------------------------------------------------

def read_roster(path: Path) -> dict[str, dict[str, str]]:
    """student id (or folder name) -> the roster's Canvas fields for them.

    The roster is a CSV with a ``student`` column (the student's id in OUT,
    or their submission folder's name) and any of ``name``, ``id``,
    ``sis_user_id``, ``sis_login_id``, ``section``."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # Excel writes a BOM
    except (OSError, UnicodeDecodeError) as exc:
        raise OutputsError(msg("classout.roster_unreadable", path=str(path), error=str(exc))) from None
    reader = csv.DictReader(io.StringIO(text))
    columns = {(name or "").strip().lower(): name for name in reader.fieldnames or ()}
    if "student" not in columns:
        raise OutputsError(msg("classout.roster_columns", path=str(path),
                               columns=", ".join(("student",) + ROSTER_COLUMNS)))
    roster: dict[str, dict[str, str]] = {}
    for row in reader:
        student = (row.get(columns["student"]) or "").strip()
        if student:
            roster[student] = {key: (row.get(columns[key]) or "").strip() for key in ROSTER_COLUMNS if key in columns}
    return roster


def _key(text: str) -> str:
    """How a roster's student and a submission are matched: the same text
    in any Unicode form (a zip made on a Mac spells é as e and an accent)
    and any case."""
    return unicodedata.normalize("NFC", text).strip().casefold()


def roster_keys(roster: dict[str, dict[str, str]]) -> dict[str, str]:
    """Each roster student by the key a submission matches it with."""
    return {_key(student): student for student in roster}


def roster_entry(keys: dict[str, str], report: dict[str, Any]) -> str | None:
    """The roster's student a report belongs to (``keys``: ``roster_keys``):
    by the student's id in OUT or their submission folder's name."""
    return keys.get(_key(report["student"])) or keys.get(_key(report["folder"]))


def reconcile(data: ClassData, roster: dict[str, dict[str, str]]) -> tuple[list[str], list[str]]:
    """Every roster student gets a row: one who handed nothing in is added
    to ``data`` as ``missing``. Returns (the submissions no roster student
    matches, the roster students added)."""
    matched, unmatched = set(), []
    keys = roster_keys(roster)
    for report in data.students:
        student = roster_entry(keys, report)
        if student is None:
            unmatched.append(report["folder"])
        matched.add(student)
    absent = [student for student in roster if student not in matched]
    for student in absent:
        data.students.append({"student": student, "folder": "", "status": "missing", "score": 0.0,
                              "max_score": None, "percent": 0.0, "concepts": [], "checks": [], "seed": None,
                              "started": "", "finished": "", "error": "", "roster_only": True})
    return unmatched, absent


def canvas_rows(data: ClassData, assignment: str, roster: dict[str, dict[str, str]]) -> list[list[str]]:
    """Rows of Canvas's gradebook import (Grades > Import).

    Canvas reads the columns ``Student, ID, SIS User ID, SIS Login ID,
    Section`` and then one column per assignment; a row below the header
    starting with ``Points Possible`` gives the assignment's maximum (Canvas
    reads it as information, not as a student). Canvas matches each row to
    a student of the course by its identifying columns (``ID``, Canvas's own
    user id, or ``SIS User ID`` / ``SIS Login ID``), not by the name; a row
    it cannot match is reported on the import's confirmation page, and a
    grade import never creates students.

    The grader knows each student only by their submission folder, so the
    identifying columns come from the roster (``--roster``: the columns
    ``student,name,id,sis_user_id,sis_login_id,section``, ``student`` being
    the id in OUT or the folder's name) or, for a class read from Canvas's
    own "Download Submissions" zip, from the Canvas user id in each file's
    name; without either no canvas.csv is written. A submission the roster lacks keeps its folder's name and no
    ids. An assignment title that is not yet in the course makes Canvas
    create that assignment; one named as Canvas exports it ("Autograd
    (1234)") updates the existing one. A student whose grading broke
    (status error) gets an empty cell, which Canvas leaves ungraded, rather
    than a 0 they did not earn; one who handed in nothing gets 0.
    """
    rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", defuse(assignment)],
            ["Points Possible", "", "", "", "", format_score(data.max_score)]]
    keys = roster_keys(roster)
    for report in data.students:
        known = roster.get(roster_entry(keys, report) or "", {})
        canvas_id = report.get("lms_id") if report.get("lms") == "canvas" else ""
        rows.append([defuse(known.get("name") or report.get("name") or report["folder"] or report["student"]),
                     defuse(known.get("id") or canvas_id or ""),
                     defuse(known.get("sis_user_id", "")), defuse(known.get("sis_login_id", "")),
                     defuse(known.get("section", "")), format_score(total(report))])
    return rows


# -- everything -------------------------------------------------------------

def _write(path: Path, text: str) -> None:
    try:
        write_text_atomic(path, text)
    except ReportWriteError as exc:
        raise OutputsError(msg("classout.write_failed", path=str(path), reason=str(exc))) from None


def build_outputs(out: Path, *, assignment: str | None = None, lms: str = "canvas",
                  roster: Path | None = None) -> list[str]:
    """Write ``gradebook.csv``, the LMS file (``canvas.csv``; ``lms="none"``
    writes none) and ``report.html`` into ``out`` from the reports there.
    Returns warnings (files skipped, students the roster lacks); raises
    ``OutputsError`` for what the caller must fix (a bad roster, an
    unwritable folder)."""
    if lms not in LMS:
        raise OutputsError(msg("classout.lms", lms=lms, known=", ".join(LMS)))
    roster_map = read_roster(roster) if roster is not None else None
    data = load_class(Path(out))
    warnings = data.warnings
    title = assignment or str(data.run.get("assignment") or "") or DEFAULT_ASSIGNMENT
    if roster_map is not None:
        unmatched, absent = reconcile(data, roster_map)
        if unmatched:
            warnings.append(msg("classout.roster_missing", count=len(unmatched), students=_some(unmatched),
                                path=str(roster)))
        if absent:
            warnings.append(msg("classout.roster_absent", count=len(absent), students=_some(absent),
                                path=str(roster)))
    _write(data.out / GRADEBOOK, _csv(gradebook_rows(data)))
    if lms == "canvas":
        # a Canvas export names each student's Canvas id: its own ID column
        from_canvas = bool(data.students) and all(r.get("lms") == "canvas" and r.get("lms_id") for r in data.students)
        if roster_map is not None or from_canvas:
            _write(data.out / CANVAS, _csv(canvas_rows(data, title, roster_map or {})))
        else:
            # made-up ids would match no student of the course, or the wrong one
            (data.out / CANVAS).unlink(missing_ok=True)
            warnings.append(msg("classout.canvas_needs_roster"))
    from .html_report import render

    _write(data.out / REPORT, render(data, title))
    return warnings


def _some(names: list[str]) -> str:
    return ", ".join(names[:10]) + (", …" if len(names) > 10 else "")

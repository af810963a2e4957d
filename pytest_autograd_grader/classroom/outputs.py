"""The class run's outputs for people and platforms: ``gradebook.csv``
(student x concept), ``canvas.csv`` (Canvas's gradebook import) and
``report.html`` (``class_report``), all built from the class's data as
read from OUT (``class_data``), so a resumed, partial or merged run gives the same files.

Every text a student controls (their folder's name, feedback) is hostile:
CSV cells that a spreadsheet would read as a formula are defused, and the
page escapes everything.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..i18n import msg
from ..reporters.files import ReportWriteError, write_text_atomic
from .class_data import (
    ClassData,
    OutputsError,
    concept_scores,
    counted,
    display_name,
    format_score,
    intake_problems,
    load_class,
    max_total,
    percent,
    total,
)
from .roster import Entry, folded, read_roster, reconcile, submission

GRADEBOOK = "gradebook.csv"
CANVAS = "canvas.csv"
REPORT = "report.html"
DEFAULT_ASSIGNMENT = "Autograd"
LMS = ("canvas", "none")


# A cell a spreadsheet would evaluate: =HYPERLINK(...), +cmd, -2+3, @SUM(...),
# and, as a precaution, their fullwidth forms (what a Chinese or Japanese
# input method types; a spreadsheet may take them for the ASCII ones)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


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
    header = [
        "student",
        "folder",
        "status",
        *(c.id for c in data.concepts),
        "total",
        "max_score",
        "percent",
        "seed",
        "started",
        "finished",
        "name",
        "late",
        "intake_problems",
    ]
    rows = [header]
    for report in data.students:
        scores = concept_scores(report)
        graded = report.get("status") != "error"
        rows.append(
            [
                defuse(report["student"]),
                defuse(report["folder"]),
                defuse(report["status"]),
                *(format_score(scores.get(c.id)) if graded else "" for c in data.concepts),
                format_score(total(report)),
                format_score(max_total(report, data)),
                format_score(percent(report, data), 2),
                "" if report["seed"] is None else str(report["seed"]),
                defuse(report["started"]),
                defuse(report["finished"]),
                defuse(report.get("name", "")),
                "late" if report.get("late") else "",
                defuse("; ".join(intake_problems(report))),
            ]
        )
    return rows


# -- canvas.csv -------------------------------------------------------------


class CanvasRefused(OutputsError):
    """canvas.csv would give one student's grade to another (two rows with
    one id, one roster line matched twice): it is not written."""


# the columns by which Canvas's import finds a student: one row each
_ID_COLUMNS = {1: "ID", 2: "SIS User ID", 3: "SIS Login ID"}


def canvas_rows(
    data: ClassData, assignment: str, pairs: list[tuple[dict[str, Any], Entry | None]], clashes: Sequence[str] = ()
) -> list[list[str]]:
    """Rows of Canvas's gradebook import (Grades > Import), one per
    (report, roster line) of ``pairs`` (``roster.reconcile``); raises
    ``CanvasRefused`` for ``clashes`` or for two rows Canvas would take for
    one student.

    Canvas reads the columns ``Student, ID, SIS User ID, SIS Login ID,
    Section`` and then one column per assignment; a row below the header
    starting with ``Points Possible`` gives the assignment's maximum (Canvas
    reads it as information, not as a student). Canvas matches each row to
    a student of the course by its identifying columns (``ID``, Canvas's own
    user id, or ``SIS User ID`` / ``SIS Login ID``), not by the name; a row
    it cannot match is reported on the import's confirmation page, a grade
    import never creates students, and of two rows with one id it keeps the
    last (so a 0 could overwrite an earned grade: refused here).

    The identifying columns come from the submission's roster line
    (``--roster``, ``roster.py``) or, for a class read from Canvas's own
    "Download Submissions" zip, from the Canvas user id in each file's
    name; a submission the roster lacks keeps the ids its export carried
    and its name. An assignment title that is not yet in the course makes
    Canvas create that assignment; one named as Canvas exports it ("Autograd
    (1234)") updates the existing one. A student whose grading broke
    (status error) gets an empty cell, which Canvas leaves ungraded, rather
    than a 0 they did not earn; one who handed in nothing gets 0.
    """
    rows = [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", defuse(assignment)],
        ["Points Possible", "", "", "", "", format_score(data.max_score)],
    ]
    for report, entry in pairs:
        known = entry.cells if entry is not None else {}
        canvas_id = report.get("lms_id") if report.get("lms") == "canvas" else ""
        rows.append(
            [
                defuse(known.get("name") or report.get("name") or report["folder"] or report["student"]),
                defuse(known.get("id") or canvas_id or ""),
                defuse(known.get("sis_user_id", "")),
                defuse(known.get("sis_login_id", "")),
                defuse(known.get("section", "")),
                format_score(total(report)),
            ]
        )
    problems = [*clashes, *_repeated_ids(rows[2:], pairs)]
    if problems:
        raise CanvasRefused(msg("classout.canvas_refused", problems="".join(f"\n  - {p}" for p in problems)))
    return rows


def _repeated_ids(rows: list[list[str]], pairs: list[tuple[dict[str, Any], Entry | None]]) -> list[str]:
    """Two rows Canvas would take for one student, each named; rows of one
    roster line are left to the clash that tells of them."""
    found = []
    for column, title in _ID_COLUMNS.items():
        seen: dict[str, int] = {}
        for at, row in enumerate(rows):
            key = folded(row[column])
            first = seen.setdefault(key, at) if key else at
            one_line = pairs[first][1] is not None and pairs[first][1] is pairs[at][1]  # twins, told already
            if first != at and not one_line:
                found.append(
                    msg(
                        "classout.canvas_same_id",
                        column=title,
                        value=row[column],
                        first=submission(pairs[first][0]),
                        second=submission(pairs[at][0]),
                    )
                )
    return found


# -- everything -------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    try:
        write_text_atomic(path, text)
    except ReportWriteError as exc:
        raise OutputsError(msg("classout.write_failed", path=str(path), reason=str(exc))) from None


def build_outputs(
    out: Path,
    *,
    assignment: str | None = None,
    lms: str = "canvas",
    roster: Path | None = None,
    names: dict[str, str] | None = None,
) -> list[str]:
    """Write ``gradebook.csv``, the LMS file (``canvas.csv``; ``lms="none"``
    writes none) and ``report.html`` into ``out`` from the reports there.
    Returns warnings (files skipped, students the roster lacks, the LMS
    file refused: ``CanvasRefused``'s text); raises ``OutputsError`` for
    what the caller must fix first (a bad roster, an unwritable folder).
    ``names``, where given, gets each student's id -> the name the outputs
    show them by (the roster's, the LMS's, else their folder's)."""
    if lms not in LMS:
        raise OutputsError(msg("classout.lms", lms=lms, known=", ".join(LMS)))
    roster_map = read_roster(roster) if roster is not None else None
    data = load_class(Path(out))
    warnings = data.warnings
    title = assignment or str(data.run.get("assignment") or "") or DEFAULT_ASSIGNMENT
    pairs: list[tuple[dict[str, Any], Entry | None]] = [(report, None) for report in data.students]
    clashes: list[str] = []
    if roster_map is not None:
        reconciled = reconcile(data, roster_map)
        pairs, clashes = reconciled.pairs, reconciled.clashes
        if reconciled.unmatched:
            warnings.append(
                counted(
                    "classout.roster_missing",
                    len(reconciled.unmatched),
                    students=_some(reconciled.unmatched),
                    path=str(roster),
                )
            )
        if reconciled.absent:
            warnings.append(
                counted(
                    "classout.roster_absent",
                    len(reconciled.absent),
                    students=_some(reconciled.absent),
                    path=str(roster),
                )
            )
    if names is not None:
        names.update((report["student"], display_name(report)) for report in data.students)
    _write(data.out / GRADEBOOK, _csv(gradebook_rows(data)))
    if lms == "canvas":
        warnings += _write_canvas(data, title, pairs, clashes, with_roster=roster_map is not None)
    elif clashes:
        warnings.append(msg("classout.roster_clashes", problems="".join(f"\n  - {c}" for c in clashes)))
    from .class_report import render
    from .plots import font_note

    _write(data.out / REPORT, render(data, title))
    note = font_note(data) if data.students else None
    if note:
        warnings.append(note)
    return warnings


def _write_canvas(
    data: ClassData, title: str, pairs: list[tuple[dict[str, Any], Entry | None]], clashes: list[str], with_roster: bool
) -> list[str]:
    """canvas.csv, or why not (a file of an earlier run is removed: Canvas
    must never be fed one that no longer says what this run found)."""
    # a Canvas export names each student's Canvas id: its own ID column
    from_canvas = bool(data.students) and all(r.get("lms") == "canvas" and r.get("lms_id") for r in data.students)
    if not (with_roster or from_canvas):
        # made-up ids would match no student of the course, or the wrong one
        (data.out / CANVAS).unlink(missing_ok=True)
        return [msg("classout.canvas_needs_roster")]
    try:
        rows = canvas_rows(data, title, pairs, clashes)
    except CanvasRefused as exc:
        (data.out / CANVAS).unlink(missing_ok=True)
        return [str(exc)]
    _write(data.out / CANVAS, _csv(rows))
    return []


def _some(names: list[str]) -> str:
    return ", ".join(names[:10]) + (", …" if len(names) > 10 else "")

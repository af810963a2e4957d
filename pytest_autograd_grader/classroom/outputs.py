"""The class run's outputs for people and platforms: ``gradebook.csv``
(student x concept), ``canvas.csv`` (Canvas's gradebook import) and
``report.html`` (``html_report``), all built from the per-student reports
in OUT, so a resumed, partial or merged run gives the same files.

Every text a student controls (their folder's name, feedback) is hostile:
CSV cells that a spreadsheet would read as a formula are defused, and the
page escapes everything.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..messages import msg
from ..reporters.files import ReportWriteError, write_text_atomic

RUN_FILE = "class-run.json"
GRADEBOOK = "gradebook.csv"
CANVAS = "canvas.csv"
REPORT = "report.html"
DEFAULT_ASSIGNMENT = "Autograd"
LMS = ("canvas", "none")
ROSTER_COLUMNS = ("name", "id", "sis_user_id", "sis_login_id", "section")
STATUSES = ("graded", "not attempted", "missing", "error")
# Students whose scores say something about the class's understanding; a
# missing submission or a grading error says nothing about it.
SCORED = ("graded", "not attempted")


class OutputsError(Exception):
    """The outputs could not be built; the message says why and what to do."""


@dataclass
class Concept:
    id: str
    title: str
    max_score: float | None = None


@dataclass
class ClassData:
    """What OUT holds: the run's record and the students' reports."""

    out: Path
    run: dict[str, Any]
    students: list[dict[str, Any]]  # sorted by student id
    concepts: list[Concept]
    warnings: list[str] = field(default_factory=list)

    @property
    def max_score(self) -> float | None:
        known = [c.max_score for c in self.concepts if c.max_score is not None]
        return sum(known) if known and len(known) == len(self.concepts) else None


# -- numbers and cells ------------------------------------------------------

def number(value: Any) -> float | None:
    """A finite number from a report, else None (reports may be foreign)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def format_score(value: Any, digits: int = 4) -> str:
    """A plain number for a spreadsheet: 2, 1.5, 0.3333; '' when unknown."""
    value = number(value)
    if value is None:
        return ""
    text = repr(round(value, digits) + 0.0)  # + 0.0 turns -0.0 into 0.0
    return text[:-2] if text.endswith(".0") else text


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


# -- reading OUT ------------------------------------------------------------

def _read_json(path: Path, warnings: list[str]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        warnings.append(msg("classout.skipped_unreadable", path=str(path), error=str(exc).splitlines()[0][:200]))
        return None


def _concept_list(run: dict[str, Any], students: list[dict[str, Any]]) -> list[Concept]:
    """The run's concepts in its order, then any a report adds, in the order first seen."""
    concepts: dict[str, Concept] = {}
    listed = run.get("concepts")
    for entry in listed if isinstance(listed, list) else ():
        if isinstance(entry, dict) and entry.get("id") is not None:
            cid = str(entry["id"])
            concepts.setdefault(cid, Concept(cid, str(entry.get("title") or cid), number(entry.get("max_score"))))
    for report in students:
        for entry in report.get("concepts") or ():
            if isinstance(entry, dict) and entry.get("id") is not None:
                cid = str(entry["id"])
                if cid not in concepts:
                    concepts[cid] = Concept(cid, str(entry.get("title") or cid), None)
                concept = concepts[cid]
                if concept.max_score is None:
                    concept.max_score = number(entry.get("max_score"))
    return list(concepts.values())


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _normalise(report: dict[str, Any]) -> None:
    """Give the fields the rest of this package reads the shape it trusts
    (a report may come from another version, or another tool)."""
    report["folder"] = _text(report.get("folder")) or report["student"]
    for key in ("started", "finished", "error"):
        report[key] = _text(report.get(key))
    if not isinstance(report.get("seed"), int) or isinstance(report.get("seed"), bool):
        report["seed"] = None
    for key in ("concepts", "checks"):
        if not isinstance(report.get(key), list):
            report[key] = []
    if report.get("status") not in STATUSES:
        report["status"] = "error" if report["error"] else "graded"


def _run_info(run: dict[str, Any]) -> dict[str, Any]:
    for key in ("assignment", "checks_sha256", "started", "finished"):
        if key in run and not isinstance(run[key], str):
            run[key] = ""
    return run


def load_class(out: Path) -> ClassData:
    """The run's record and every student report in ``out``; a file that is
    not one (unreadable, not JSON, no ``student``) is skipped with a warning."""
    out = Path(out)
    warnings: list[str] = []
    if not out.is_dir():
        raise OutputsError(msg("classout.no_out", path=str(out)))
    run: dict[str, Any] = {}
    run_path = out / RUN_FILE
    if run_path.is_file():
        data = _read_json(run_path, warnings)
        if isinstance(data, dict):
            run = _run_info(data)
        elif data is not None:
            warnings.append(msg("classout.skipped_foreign", path=str(run_path)))
    by_id: dict[str, dict[str, Any]] = {}
    for path in sorted(out.glob("*.json")):
        if path.name == RUN_FILE or path.name.startswith(".") or not path.is_file():
            continue
        data = _read_json(path, warnings)
        if data is None:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("student"), str) or not data["student"]:
            warnings.append(msg("classout.skipped_foreign", path=str(path)))
            continue
        _normalise(data)
        student = data["student"]
        if student in by_id:
            warnings.append(msg("classout.skipped_duplicate", path=str(path), student=student))
            continue
        by_id[student] = data
    students = [by_id[key] for key in sorted(by_id)]
    return ClassData(out, run, students, _concept_list(run, students), warnings)


def concept_scores(report: dict[str, Any]) -> dict[str, float]:
    """concept id -> the student's score on it."""
    scores = {}
    for entry in report.get("concepts") or ():
        if isinstance(entry, dict) and entry.get("id") is not None:
            score = number(entry.get("score"))
            if score is not None:
                scores[str(entry["id"])] = score
    return scores


def total(report: dict[str, Any]) -> float | None:
    """The student's total, or None where no grade should be given (the
    grading broke: a 0 would be a grade the student did not earn)."""
    if report.get("status") == "error":
        return None
    score = number(report.get("score"))
    if score is None:
        scores = concept_scores(report)
        score = sum(scores.values()) if scores else None
    return score


def max_total(report: dict[str, Any], data: ClassData) -> float | None:
    value = number(report.get("max_score"))
    return value if value else data.max_score


def percent(report: dict[str, Any], data: ClassData) -> float | None:
    if total(report) is None:
        return None
    value = number(report.get("percent"))
    if value is None:
        most = max_total(report, data)
        value = 100.0 * total(report) / most if most else None
    return value


# -- gradebook.csv ----------------------------------------------------------

def gradebook_rows(data: ClassData) -> list[list[str]]:
    header = ["student", "folder", "status", *(c.id for c in data.concepts),
              "total", "max_score", "percent", "seed", "started", "finished"]
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


def canvas_rows(data: ClassData, assignment: str, roster: dict[str, dict[str, str]] | None = None) -> list[list[str]]:
    """Rows of Canvas's gradebook import (Grades > Import).

    Canvas reads the columns ``Student, ID, SIS User ID, SIS Login ID,
    Section`` and then one column per assignment; a row below the header
    starting with ``Points Possible`` gives the assignment's maximum (Canvas
    reads it as information, not as a student). Canvas matches each row to
    a student of the course by its identifying columns (``ID``, Canvas's own
    user id, or ``SIS User ID`` / ``SIS Login ID``), not by the name; a row
    it cannot match is reported on the import's confirmation page, and a
    grade import never creates students.

    The grader knows each student only by their submission folder, so
    without a roster ``Student`` is the folder's name and ``SIS Login ID``
    the student's id (a GitHub Classroom folder is the student's GitHub
    login, which is often not their SIS login): fill the ``ID`` column from
    the course's exported gradebook, or pass ``--roster`` with the columns
    ``student,name,id,sis_user_id,sis_login_id,section``, ``student`` being
    the id in OUT or the folder's name. An assignment title that is not yet
    in the course makes Canvas create that assignment; one named as Canvas
    exports it ("Autograd (1234)") updates the existing one. A student
    whose grading broke (status error) gets an empty cell, which Canvas
    leaves ungraded, rather than a 0 they did not earn.
    """
    roster = roster or {}
    rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", defuse(assignment)],
            ["Points Possible", "", "", "", "", format_score(data.max_score)]]
    for report in data.students:
        student, folder = report["student"], report["folder"]
        known = roster.get(student) or roster.get(folder) or {}
        rows.append([defuse(known.get("name") or folder), defuse(known.get("id", "")),
                     defuse(known.get("sis_user_id", "")), defuse(known.get("sis_login_id") or student),
                     defuse(known.get("section", "")), format_score(total(report))])
    return rows


def _not_in_roster(data: ClassData, roster: dict[str, dict[str, str]]) -> list[str]:
    return [r["student"] for r in data.students if r["student"] not in roster and r["folder"] not in roster]


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
    _write(data.out / GRADEBOOK, _csv(gradebook_rows(data)))
    if lms == "canvas":
        if roster_map is not None:
            missing = _not_in_roster(data, roster_map)
            if missing:
                shown = ", ".join(missing[:10]) + (", …" if len(missing) > 10 else "")
                warnings.append(msg("classout.roster_missing", count=len(missing), students=shown, path=str(roster)))
        _write(data.out / CANVAS, _csv(canvas_rows(data, title, roster_map)))
    from .html_report import render

    _write(data.out / REPORT, render(data, title))
    return warnings

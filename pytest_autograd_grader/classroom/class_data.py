"""A class's results as read back from OUT (the run file and one JSON per
student), with the numbers every output shows: totals, percentages and
per-concept scores.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..boundary.untrusted import shown
from ..i18n import has_message, msg
from ..protocol import StudentStatus

RUN_FILE = "class-run.json"


class OutputsError(Exception):
    """The outputs could not be built; the message says why and what to do."""


@dataclass
class ConceptColumn:
    """A concept as the class outputs show it: a column of the gradebook
    and of the class report (its points when every report agrees on them)."""

    id: str
    title: str
    max_score: float | None = None


@dataclass
class ClassData:
    """What OUT holds: the run's record and the students' reports."""

    out: Path
    run: dict[str, Any]
    students: list[dict[str, Any]]  # sorted by student id
    concepts: list[ConceptColumn]
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


def counted(key: str, count: int, **fields: Any) -> str:
    """``key``'s text for ``count`` things: its ``_one`` form for one (an
    English noun's singular; Chinese says both alike), with ``count``."""
    one = key + "_one"
    return msg(one if count == 1 and has_message(one) else key, count=count, **fields)


def students_text(count: int) -> str:
    """ "1 student", "3 students"."""
    return counted("class.n_students", count)


# -- reading OUT ------------------------------------------------------------


def _read_json(path: Path, warnings: list[str]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        warnings.append(msg("classout.skipped_unreadable", path=str(path), error=str(exc).splitlines()[0][:200]))
        return None


def _concept_list(run: dict[str, Any], students: list[dict[str, Any]]) -> list[ConceptColumn]:
    """The run's concepts in its order, then any a report adds, in the order first seen."""
    concepts: dict[str, ConceptColumn] = {}
    listed = run.get("concepts")
    for entry in listed if isinstance(listed, list) else ():
        if isinstance(entry, dict) and entry.get("id") is not None:
            cid = str(entry["id"])
            concepts.setdefault(cid, ConceptColumn(cid, str(entry.get("title") or cid), number(entry.get("max_score"))))
    for report in students:
        for entry in report.get("concepts") or ():
            if isinstance(entry, dict) and entry.get("id") is not None:
                cid = str(entry["id"])
                if cid not in concepts:
                    concepts[cid] = ConceptColumn(cid, str(entry.get("title") or cid), None)
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
    # a folder's name and a grading error's text come from the student's side:
    # shown escaped on the page and in the spreadsheets, as in every report
    report["folder"], report["error"] = shown(report["folder"]), shown(report["error"])
    # what an LMS export said of the student (intake/): its name is the student's own text too
    report["name"], report["lms"], report["lms_id"] = (shown(_text(report.get(k))) for k in ("name", "lms", "lms_id"))
    report["late"] = report.get("late") is True
    if not isinstance(report.get("seed"), int) or isinstance(report.get("seed"), bool):
        report["seed"] = None
    for key in ("concepts", "checks"):
        if not isinstance(report.get(key), list):
            report[key] = []
    if report.get("status") not in tuple(StudentStatus):
        report["status"] = StudentStatus.ERROR if report["error"] else StudentStatus.GRADED


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
    got = total(report)
    if got is None:
        return None
    value = number(report.get("percent"))
    if value is None:
        most = max_total(report, data)
        value = 100.0 * got / most if most else None
    return value


def display_name(report: dict[str, Any]) -> str:
    """The student as a person reads them: the roster's or the LMS's name,
    else their folder, else their id in OUT (which machines keep using)."""
    return report.get("name") or report.get("folder") or report["student"]


def intake_problems(report: dict[str, Any]) -> list[str]:
    """What of a student's upload the intake could not take, or why it found
    no module there (each a line of text; the upload's names in it)."""
    problems = report.get("intake_problems")
    return [str(p) for p in problems] if isinstance(problems, list) else []

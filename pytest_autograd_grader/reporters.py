"""What a graded session writes: the terminal table, the JSON report and
Gradescope's results.json."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .messages import msg
from .scoring import Gradebook

BAR_WIDTH = 20


def write_json_atomic(path: Path, data: Any) -> None:
    """Write through a temporary file and rename it, so a reader (or a grader
    killed half way) never sees a half-written file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _bar(score: float, max_score: float) -> str:
    filled = round(BAR_WIDTH * score / max_score) if max_score else 0
    return "#" * filled + "." * (BAR_WIDTH - filled)


def _points(x: float) -> str:
    return f"{x:g}"


def table_lines(gradebook: Gradebook) -> list[str]:
    """One row per concept, then the total."""
    rows = []
    for total in gradebook.concept_totals():
        percent = 100.0 * total.score / total.max_score if total.max_score else 0.0
        rows.append((f"{total.title} ({total.id})", f"{_points(total.score)}/{_points(total.max_score)}",
                     f"{total.passed}/{total.checks} passed", _bar(total.score, total.max_score), f"{percent:5.1f}%"))
    width = max([len(r[0]) for r in rows] + [len(msg("summary.total"))])
    score_width = max([len(r[1]) for r in rows] + [1])
    lines = [f"{name:<{width}}  {score:>{score_width}}  {passed:<13} {bar} {pct}" for name, score, passed, bar, pct in rows]
    total = f"{_points(gradebook.score)}/{_points(gradebook.max_score)}"
    lines.append(f"{msg('summary.total'):<{width}}  {total:>{score_width}}  {'':<13} {_bar(gradebook.score, gradebook.max_score)} {gradebook.percent:5.1f}%")
    return lines


def gradescope_results(gradebook: Gradebook) -> dict[str, Any]:
    """Gradescope's results.json: one test per graded check, the concept in tags."""
    tests = []
    for number, check in enumerate(gradebook.graded(), start=1):
        tests.append({
            "name": check.id,
            "number": str(number),
            "score": check.score,
            "max_score": check.max_score,
            "status": "passed" if check.status == "passed" else "failed",
            "output": check.feedback,
            "output_format": "text",
            "tags": [check.concept] if check.concept else [],
            "visibility": "after_published" if check.hidden else "visible",
            "extra_data": {"grader_status": check.status, "device": check.device},
        })
    return {
        "score": gradebook.score,
        "execution_time": gradebook.duration_s,
        "output": "\n".join(table_lines(gradebook)),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"percent": gradebook.percent, "seed": gradebook.seed, "complete": gradebook.complete},
    }

"""The grade table as text: the terminal summary, and every platform's
plain-text output (Gradescope's top-level output) reuse it."""

from __future__ import annotations

import unicodedata

from ..i18n import msg
from ..scoring import Gradebook

BAR_WIDTH = 20


def _bar(score: float, max_score: float) -> str:
    filled = round(BAR_WIDTH * score / max_score) if max_score else 0
    return "#" * filled + "." * (BAR_WIDTH - filled)


def points(x: float) -> str:
    """A score as people write it: 2, 1.5, 0.333333."""
    return f"{x:g}"


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _left(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def table_lines(gradebook: Gradebook) -> list[str]:
    """One row per concept, then the total."""
    rows = []
    for total in gradebook.concept_totals():
        percent = 100.0 * total.score / total.max_score if total.max_score else 0.0
        rows.append((f"{total.title} ({total.id})", f"{points(total.score)}/{points(total.max_score)}",
                     msg("summary.passed", passed=total.passed, checks=total.checks), _bar(total.score, total.max_score),
                     f"{percent:5.1f}%"))
    width = max([_width(r[0]) for r in rows] + [_width(msg("summary.total"))])
    score_width = max([len(r[1]) for r in rows] + [1])
    passed_width = max([_width(r[2]) for r in rows] + [13])
    lines = [f"{_left(name, width)}  {score:>{score_width}}  {_left(passed, passed_width)} {bar} {pct}"
             for name, score, passed, bar, pct in rows]
    total = f"{points(gradebook.score)}/{points(gradebook.max_score)}"
    lines.append(f"{_left(msg('summary.total'), width)}  {total:>{score_width}}  {'':<{passed_width}} "
                 f"{_bar(gradebook.score, gradebook.max_score)} {gradebook.percent:5.1f}%")
    return lines


def isolation_lines(gradebook: Gradebook) -> list[str]:
    """How student code was fenced off, and what that mode does not protect."""
    return [msg("report.isolation", mode=gradebook.isolation)] + [
        msg("header.missing", what=what) for what in gradebook.isolation_missing]

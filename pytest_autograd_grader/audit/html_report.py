"""The audit's page (``--html FILE``): the terminal report's sections as one
self-contained page in the class report's style (its ``page``, CSS and
tables), drawn from the audit's JSON document alone.

Every text of the document is escaped, after ``shown`` has made its control
characters and direction marks visible: file names, ids, descriptions and
diffs are text from files, and a diff holds whatever the author's (or a
generated) module holds. The page runs no script at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..boundary.untrusted import shown
from ..classroom.html_page import escape, page, table
from ..i18n import msg
from ..reporters.files import write_text_atomic
from .text_report import COLUMNS, baseline_lines, lines_of, percent_text, score_text, seeds_text, verdict_line

_CSS = """
pre.diff .add { color: #2a7a2a; } pre.diff .del { color: #a0201e; } pre.diff .hunk { color: #555; }
tr.killed .status, tr.accepted .status { color: #2a7a2a; }
tr.survived .status, tr.unnamed .status, tr.error .status { color: #a0201e; }
p.verdict { font-weight: bold; } p.verdict.failed { color: #a0201e; } p.verdict.passed { color: #2a7a2a; }
"""


def _e(value: Any) -> str:
    """A value of the document, shown safely, escaped."""
    return escape(shown("" if value is None else str(value)))


def _items(document: dict, key: str) -> list[dict]:
    value = document.get(key)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _h2(anchor: str, key: str) -> str:
    return f'<h2 id="{anchor}">{escape(msg(key))}</h2>'


def _header(*keys: str, numeric: tuple[str, ...] = ()) -> list[tuple[str, bool]]:
    return [(escape(msg(key)), key in numeric) for key in keys]


def _status(status: Any) -> str:
    try:
        return msg(f"audit.html.status.{status}")
    except KeyError:
        return str(status)


def _status_cell(status: Any) -> tuple[str, bool]:
    return (f'<span class="status">{_e(_status(status))}</span>', False)


def _classes(items: list[dict]) -> list[str]:
    """Each row's class: its status, when it is one the page knows."""
    known = ("killed", "survived", "unnamed", "accepted", "error")
    return [str(i.get("status")) if i.get("status") in known else "" for i in items]


def _lines(lines: list[str]) -> str:
    """The terminal's lines (already made safe there) as paragraphs."""
    return "".join(f"<p>{escape(line.strip())}</p>" for line in lines if line.strip())


# -- sections -------------------------------------------------------------------------------


def run_html(document: dict) -> str:
    info = [
        (msg("audit.html.checks_dir"), document.get("checks_dir")),
        (msg("audit.html.solutions_dir"), document.get("solutions_dir")),
        (msg("audit.html.mistakes_dir"), document.get("mistakes_dir") or msg("audit.report.none")),
        (msg("audit.html.seeds"), seeds_text(document.get("seeds"))),
    ]
    seconds, rate = document.get("seconds"), document.get("mutants_per_second")
    if isinstance(seconds, (int, float)):
        key = "audit.report.speed" if isinstance(rate, (int, float)) else "audit.report.speed_no_rate"
        info.append((msg("audit.html.time"), msg(key, seconds=f"{seconds:.1f}", rate=f"{rate or 0:.2f}")))
    return (
        _h2("run", "audit.html.run")
        + '<table id="run-info"><tbody>'
        + "".join(f"<tr><th>{escape(k)}</th><td>{_e(v)}</td></tr>" for k, v in info)
        + "</tbody></table>"
    )


def checks_html(document: dict) -> str:
    header = [(escape(msg(f"audit.report.col.{name}")), numeric) for name, numeric in COLUMNS]
    rows = [[(_e(check.get(name)), numeric) for name, numeric in COLUMNS] for check in _items(document, "checks")]
    body = (
        table("check-table", header, rows, sortable=False)
        if rows
        else f'<p class="note">{escape(msg("audit.report.no_checks"))}</p>'
    )
    return _h2("checks", "audit.html.checks") + body


COUNTS = ("mutants", "killed", "survived", "accepted")


def _score(topic: dict) -> str:
    """A topic's mutation score, ``-`` where no mutant was killed or survived."""
    graded = topic.get("killed") or topic.get("survived")
    return percent_text(topic.get("score")) if graded else msg("audit.report.none")


def topics_html(document: dict) -> str:
    header = _header(
        "audit.report.col.topic",
        "audit.html.col.mutants",
        "audit.html.col.killed",
        "audit.html.col.survived",
        "audit.html.col.accepted",
        "audit.html.col.score",
        numeric=(
            "audit.html.col.mutants",
            "audit.html.col.killed",
            "audit.html.col.survived",
            "audit.html.col.accepted",
            "audit.html.col.score",
        ),
    )
    rows = [
        [(_e(t.get("topic")), False), *((_e(t.get(k)), True) for k in COUNTS), (_e(_score(t)), True)]
        for t in _items(document, "topics")
    ]
    return (
        _h2("topics", "audit.html.topics")
        + table("topic-table", header, rows)
        + f'<p class="note">{escape(score_text(document))}</p>'
    )


def mistakes_html(document: dict) -> str:
    mistakes = _items(document, "mistakes")
    if not mistakes:
        none = escape(msg("audit.report.mistakes_none"))
        return _h2("mistakes", "audit.html.mistakes") + f'<p class="note">{none}</p>'
    header = _header(
        "audit.html.col.mistake",
        "audit.html.col.what",
        "audit.html.col.status",
        "audit.html.col.seeds_passed",
        "audit.html.col.seeds_unnamed",
        "audit.html.col.expected",
    )
    rows = [
        [
            (f"{_e(m.get('topic'))}/{_e(m.get('name'))}<br><small>{_e(m.get('path'))}</small>", False),
            (_e(m.get("what")), False),
            _status_cell(m.get("status")),
            (_e(seeds_text(m.get("seeds_passed")) if m.get("seeds_passed") else ""), False),
            (_e(seeds_text(m.get("seeds_unnamed")) if m.get("seeds_unnamed") else ""), False),
            (", ".join(_e(x) for x in m.get("expected") or ()), False),
        ]
        for m in mistakes
    ]
    return _h2("mistakes", "audit.html.mistakes") + table("mistake-table", header, rows, _classes(mistakes))


def diff_html(diff: Any) -> str:
    """A unified diff in a <pre>, its added and removed lines coloured (its
    ---/+++ header, before the first hunk, is not)."""
    out, in_hunk = [], False
    for line in lines_of(diff):
        in_hunk = in_hunk or line.startswith("@@")
        kind = (
            "hunk"
            if line.startswith("@@") or not in_hunk
            else "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else ""
        )
        out.append(f'<span class="{kind}">{_e(line)}</span>' if kind else _e(line))
    return '<pre class="diff">' + "\n".join(out) + "</pre>"


def survivors_html(document: dict) -> str:
    survivors = [m for m in _items(document, "mutants") if m.get("status") == "survived"]
    parts = [_h2("survivors", "audit.html.survivors")]
    if not survivors:
        return parts[0] + f'<p class="note">{escape(msg("audit.report.no_survivors"))}</p>'
    for m in survivors:
        checks = msg("audit.report.separator").join(str(c) for c in m.get("checks_passed") or ()) or msg(
            "audit.report.none"
        )
        seeds = seeds_text(m.get("seeds_passed"))
        title = msg("audit.report.mutant", id=m.get("id"), line=m.get("line"), description=m.get("description"))
        parts.append(
            f'<section class="survivor"><h3>{_e(title)}</h3>'
            f'<p class="note">{_e(msg("audit.report.mutant_passed", seeds=seeds, checks=checks))}</p>'
            + diff_html(m.get("diff"))
            + "</section>"
        )
    return "".join(parts)


def accepted_html(document: dict) -> str:
    accepted = [m for m in _items(document, "mutants") if m.get("status") == "accepted"]
    if not accepted:
        return ""
    header = _header("audit.html.col.mutant", "audit.html.col.reason")
    rows = [[(_e(m.get("id")), False), (_e(m.get("reason")), False)] for m in accepted]
    return (
        _h2("accepted", "audit.html.accepted")
        + f'<p class="note">{escape(msg("audit.report.accepted", count=len(accepted)))}</p>'
        + table("accepted-table", header, rows)
    )


def errors_html(document: dict) -> str:
    # a mutant's id read back from the document may be anything; _e shows any value
    failed: list[tuple[object, dict]] = [
        (f"{m.get('topic')}/{m.get('name')}", m) for m in _items(document, "mistakes") if m.get("status") == "error"
    ]
    failed += [(m.get("id"), m) for m in _items(document, "mutants") if m.get("status") == "error"]
    if not failed:
        return ""
    header = _header("audit.html.col.mutant", "audit.html.col.error")
    rows = [[(_e(what), False), (f"<pre>{_e(item.get('error'))}</pre>", False)] for what, item in failed]
    return _h2("errors", "audit.html.errors") + table("error-table", header, rows)


def verdict_html(document: dict) -> str:
    outcome = "passed" if document.get("passed") else "failed"
    return _h2("verdict", "audit.html.verdict") + f'<p class="verdict {outcome}">{escape(verdict_line(document))}</p>'


def render(document: dict) -> str:
    """The whole page, as text."""
    title = msg("audit.html.title", checks=shown(str(document.get("checks_dir") or "")))
    body = [
        f"<h1>{escape(title)}</h1>",
        run_html(document),
        _h2("baseline", "audit.html.baseline") + _lines(baseline_lines(document)),
        checks_html(document),
        topics_html(document),
        mistakes_html(document),
        survivors_html(document),
        accepted_html(document),
        errors_html(document),
        verdict_html(document),
    ]
    return page(title, [part for part in body if part], css=_CSS)


def write_html(document: dict, path: Path) -> None:
    """Write the audit's page to ``path`` atomically (``ReportWriteError``
    says why it could not be written)."""
    write_text_atomic(Path(path), render(document))

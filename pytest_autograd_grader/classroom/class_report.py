"""``report.html``: one self-contained page about a class run.

Run information, per-concept statistics and score distributions, the
students x concepts heat map, the total-percent histogram, the class's most
frequent diagnosed mistakes (with one anonymised example each) and the
gradebook. Plots are PNG ``data:`` URIs drawn by matplotlib (the ``class``
extra) on Agg figures that never touch pyplot's global state; without
matplotlib the page is written without them and says how to get them. The
gradebook sorts by any column (the page's one script, which its content
security policy allows by hash; it loads nothing from elsewhere) and links
each student to a section with every check and its feedback. Every text
from the reports is escaped: feedback holds text the students' code chose.
"""

from __future__ import annotations

import statistics
from typing import Any

from ..i18n import msg
from ..i18n.en import EN
from ..i18n.zh import ZH
from ..protocol import SCORED, Status, StudentStatus
from .class_data import (
    ClassData,
    concept_scores,
    counted,
    display_name,
    format_score,
    intake_problems,
    max_total,
    percent,
    total,
)
from .frequent_mistakes import Mistake, frequent_mistakes
from .heatmap import CSS as HEATMAP_CSS
from .heatmap import heatmap_html
from .html_page import SORTING_SCRIPT, page, table
from .html_page import escape as _e
from .plots import font_note
from .plots import plots as draw

FEEDBACK_CHARS = 4000  # of one check's feedback in a student's section


# -- statistics ---------------------------------------------------------------


def _scored(data: ClassData) -> list[dict[str, Any]]:
    return [r for r in data.students if r.get("status") in SCORED]


def _concept_stats(data: ClassData, scored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for concept in data.concepts:
        values = [s[concept.id] for s in map(concept_scores, scored) if concept.id in s]
        row: dict[str, Any] = {"concept": concept, "n": len(values)}
        if values:
            full = [v for v in values if concept.max_score is not None and v >= concept.max_score - 1e-9]
            row.update(
                mean=statistics.fmean(values),
                median=statistics.median(values),
                min=min(values),
                max=max(values),
                full=len(full) / len(values) if concept.max_score else None,
            )
        rows.append(row)
    return rows


# -- the page ---------------------------------------------------------------------

# a check whose student module did not import says so with the catalogue's
# words, in either language: the longer of the texts before the file's name
# and between it and the error's ("could not be loaded: ", "无法加载 ")
_NOT_IMPORTED = tuple(
    max(template.split("{type}", 1)[0].split("{file}", 1), key=len)
    for template in (EN["student.import_error"], ZH["student.import_error"])
)
FLAGS = ("timeout", "crashed", "not_imported")


def flags(report: dict[str, Any]) -> dict[str, int]:
    """How many of a student's checks timed out, crashed their process, or
    met a module that did not import."""
    counts = dict.fromkeys(FLAGS, 0)
    for check in report.get("checks") or ():
        if not isinstance(check, dict):
            continue
        text = str(check.get("private_feedback") or check.get("feedback") or "")
        if check.get("status") in (Status.TIMEOUT, Status.CRASHED):
            counts[check["status"]] += 1
        elif check.get("status") == Status.FAILED and any(mark in text for mark in _NOT_IMPORTED):
            counts["not_imported"] += 1
    return counts


def _flag_html(counts: dict[str, int]) -> str:
    return "".join(
        f'<span class="flag">{_e(msg(f"classout.flag.{f}", count=n))}</span>' for f, n in counts.items() if n
    )


def _anchor(report: dict[str, Any]) -> str:
    return "s-" + str(report["student"])


_name = display_name


def _who(report: dict[str, Any]) -> str:
    """The student as the LMS named them, their id beside it where it differs."""
    name = _name(report)
    extra = [x for x in dict.fromkeys((report.get("folder"), report["student"])) if x and x != name]
    # <bdi>: a name written right to left does not reorder what follows it
    return f"<bdi>{_e(name)}</bdi>" + "".join(f"<br><small><bdi>{_e(x)}</bdi></small>" for x in extra)


def _students_html(data: ClassData, flagged: dict[str, dict[str, int]]) -> str:
    """A section per student: every check, its status, points and feedback
    (a hidden check's real reasons: this page is the instructor's)."""
    parts = []
    header = [
        (_e(msg(k)), n)
        for k, n in (
            ("classout.col.check", False),
            ("classout.col.concept_id", False),
            ("classout.col.status", False),
            ("classout.col.points", True),
            ("classout.col.feedback", False),
        )
    ]
    for report in data.students:
        total_ = total(report)
        summary = f"{_who(report)} &middot; {_e(_status(str(report.get('status'))))}" + (
            f" &middot; {_e(format_score(total_))} / {_e(format_score(max_total(report, data)))}"
            if total_ is not None
            else ""
        )
        rows, classes = [], []
        for check in report.get("checks") or ():
            if not isinstance(check, dict):
                continue
            feedback = str(check.get("private_feedback") or check.get("feedback") or "")
            hidden = f" <small>({_e(msg('classout.hidden'))})</small>" if check.get("hidden") else ""
            rows.append(
                [
                    (_e(check.get("title") or check.get("id")) + hidden, False),
                    (_e(check.get("concept") or ""), False),
                    (_e(check.get("status") or ""), False),
                    (_e(f"{format_score(check.get('score'))} / {format_score(check.get('max_score'))}"), True),
                    (f"<pre>{_e(feedback[:FEEDBACK_CHARS])}</pre>" if feedback else "", False),
                ]
            )
            classes.append(f"check-{check.get('status')}")
        check_table = table(f"checks-{_anchor(report)}", header, rows, classes)
        error = report.get("error")
        parts.append(
            f'<details id="{_e(_anchor(report))}"><summary>{summary}</summary>'
            + (f"<p>{_e(error)}</p>" if error else "")
            + _problems_html(report)
            + _flag_html(flagged[report["student"]])
            + (check_table if rows else f'<p class="note">{_e(msg("classout.no_checks"))}</p>')
            + "</details>"
        )
    return '<section class="student">' + "".join(parts) + "</section>"


def _problems_html(report: dict) -> str:
    """What the intake could not take of the student's upload, or why it
    found no module: told where the instructor looks for the student."""
    problems = intake_problems(report)
    if not problems:
        return ""
    items = "".join(f"<li>{_e(problem)}</li>" for problem in problems)
    return f'<p class="note">{_e(msg("classout.intake_problems"))}</p><ul class="problems">{items}</ul>'


def _status(status: str) -> str:
    key = "classout.status." + status.replace(" ", "_")
    try:
        return msg(key)
    except KeyError:
        return status


def _figure(plot_id: str, uri: str, alt: str, caption: str) -> str:
    return f'<figure><img id="{plot_id}" src="{uri}" alt="{_e(alt)}"><figcaption>{_e(caption)}</figcaption></figure>'


def _mistakes_html(data: ClassData, mistakes: dict[str, list[Mistake]]) -> str:
    titles = {c.id: c.title for c in data.concepts}
    order = [c.id for c in data.concepts] + [c for c in mistakes if c not in titles]
    parts = []
    for concept in order:
        found = mistakes.get(concept)
        if not found:
            continue
        parts.append(f'<h3>{_e(titles.get(concept, concept))} <small>({_e(concept)})</small></h3><ol class="mistakes">')
        for m in found:
            parts.append(
                f"<li><p>{_e(counted('classout.mistake', m.students, text=m.text))}</p>"
                f"<details><summary>{_e(msg('classout.example'))}</summary><pre>{_e(m.example)}</pre>"
                f"</details></li>"
            )
        parts.append("</ol>")
    return "".join(parts) or f'<p class="note">{_e(msg("classout.no_mistakes"))}</p>'


def render(data: ClassData, assignment: str) -> str:
    """The whole page, as text."""
    scored = _scored(data)
    flagged = {r["student"]: flags(r) for r in data.students}
    title = msg("classout.title", assignment=assignment)
    body = [f"<h1>{_e(title)}</h1>", *_run_section(data, assignment, scored, flagged)]
    if not data.students:
        body.append(f'<p class="note" id="no-students">{_e(msg("classout.no_students"))}</p>')
    else:
        body += _class_sections(data, scored)
    body += _gradebook_section(data, flagged)
    if data.students:
        body.append(f'<h2 id="students">{_e(msg("classout.students_section"))}</h2>')
        body.append(_students_html(data, flagged))
    return page(title, body, css=HEATMAP_CSS, script=SORTING_SCRIPT)


def _run_section(
    data: ClassData, assignment: str, scored: list[dict[str, Any]], flagged: dict[str, dict[str, int]]
) -> list[str]:
    """The run: assignment, checks, date, how many students of each status
    and flag, the class's mean and median."""
    run = data.run
    percents = [p for p in (percent(r, data) for r in scored) if p is not None]
    counts = {s: sum(r.get("status") == s for r in data.students) for s in StudentStatus}
    date = (
        run.get("finished")
        or run.get("started")
        or max((str(r.get("finished") or "") for r in data.students), default="")
    )
    info = [
        (msg("classout.assignment"), assignment),
        (msg("classout.checks"), run.get("checks_sha256") or ""),
        (msg("classout.date"), date),
        (
            msg("classout.students"),
            msg(
                "classout.statuses",
                students=len(data.students),
                graded=counts[StudentStatus.GRADED],
                not_attempted=counts[StudentStatus.NOT_ATTEMPTED],
                missing=counts[StudentStatus.MISSING],
                errors=counts[StudentStatus.ERROR],
            ),
        ),
    ]
    many: dict[str, Any] = {f: sum(counts[f] > 0 for counts in flagged.values()) for f in FLAGS}
    many["timeout"] = counted("class.n_students", many["timeout"])  # the sentence's noun: "1 student", "2 students"
    info.append((msg("classout.flagged"), msg("classout.flagged_counts", **many)))
    if percents:
        info.append(
            (
                msg("classout.mean_median"),
                msg("classout.percents", mean=statistics.fmean(percents), median=statistics.median(percents)),
            )
        )
    return [
        f'<h2 id="run">{_e(msg("classout.run"))}</h2>',
        '<table id="run-info"><tbody>'
        + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in info)
        + "</tbody></table>",
    ]


def _class_sections(data: ClassData, scored: list[dict[str, Any]]) -> list[str]:
    """The class as a whole: the concepts (table and plot), the heat map,
    the totals' distribution, the frequent mistakes."""
    body = [f'<p class="note">{_e(counted("classout.scored_note", len(scored)))}</p>']
    plots = draw(data, scored)
    if plots is None:
        body.append(f'<p class="note" id="no-plots">{_e(msg("classout.no_matplotlib"))}</p>')
        plots = {}
    note = font_note(data) if plots else None  # the concepts' numbers stand in their panels' titles
    body.append(f'<h2 id="concepts">{_e(msg("classout.concepts"))}</h2>')
    body.append(_concept_table(data, scored, numbered=bool(note)))
    if "plot-concepts" in plots:
        body.append(
            _figure(
                "plot-concepts", plots["plot-concepts"], msg("classout.alt.concepts"), msg("classout.caption.concepts")
            )
        )
        if note:
            body.append(f'<p class="note" id="plot-fonts">{_e(note)}</p>')
    if data.concepts:  # drawn by the browser: every script's names, none clipped
        body.append(f'<h2 id="heatmap">{_e(msg("classout.heatmap"))}</h2>')
        body.append(heatmap_html(data, _e, _anchor))
    if "plot-totals" in plots:
        body.append(f'<h2 id="totals">{_e(msg("classout.totals"))}</h2>')
        body.append(
            _figure("plot-totals", plots["plot-totals"], msg("classout.alt.totals"), msg("classout.caption.totals"))
        )
    body.append(f'<h2 id="mistakes">{_e(msg("classout.mistakes"))}</h2>')
    body.append(f'<p class="note">{_e(msg("classout.mistakes_note"))}</p>')
    body.append(_mistakes_html(data, frequent_mistakes(data.students, top=None)))  # every one, ranked
    return body


def _concept_table(data: ClassData, scored: list[dict[str, Any]], numbered: bool) -> str:
    """Each concept's points and statistics; ``numbered`` where the plot's
    panels are titled by number."""
    header = [
        (_e(msg(k)), n)
        for k, n in (
            ("classout.col.concept", False),
            ("classout.col.points", True),
            ("classout.col.mean", True),
            ("classout.col.median", True),
            ("classout.col.min", True),
            ("classout.col.max", True),
            ("classout.col.full", True),
        )
    ]
    rows: list[list[tuple]] = []
    for number, row in enumerate(_concept_stats(data, scored), 1):
        concept = row["concept"]
        full = row.get("full")
        prefix = f"<small>#{number}</small> " if numbered else ""
        rows.append(
            [
                (f"{prefix}{_e(concept.title)} <small>({_e(concept.id)})</small>", False),
                (_e(format_score(concept.max_score)), True),
                *((_e(format_score(row.get(k), 2)), True) for k in ("mean", "median", "min", "max")),
                (_e(f"{full:.0%}" if full is not None else ""), True),
            ]
        )
    return table("concept-table", header, rows)


def _gradebook_section(data: ClassData, flagged: dict[str, dict[str, int]]) -> list[str]:
    """The gradebook: a row a student, sortable by every column."""
    header = [
        (_e(msg("classout.col.student")), False),
        (_e(msg("classout.col.status")), False),
        # concept ids may break after their underscores: the table fits the page
        *((_e(c.id).replace("_", "_<wbr>"), True) for c in data.concepts),
        (_e(msg("classout.col.total")), True),
        (_e(msg("classout.col.percent")), True),
    ]
    rows = [_gradebook_row(data, report, flagged[report["student"]]) for report in data.students]
    classes = [str(report.get("status")).replace(" ", "-") for report in data.students]
    return [
        f'<h2 id="gradebook">{_e(msg("classout.gradebook"))}</h2>',
        f'<p class="note">{_e(msg("classout.gradebook_note"))}</p>',
        table("gradebook-table", header, rows, classes, sortable=True),
    ]


def _gradebook_row(data: ClassData, report: dict[str, Any], flags_of: dict[str, int]) -> list[tuple]:
    """One student's cells: (html, numeric, the value it sorts by)."""
    scores = concept_scores(report)
    status = str(report.get("status"))
    error = report.get("error") if status == "error" else None
    late = f'<span class="flag">{_e(msg("classout.late"))}</span>' if report.get("late") else ""
    status_cell = (
        _e(_status(status))
        + (f"<br><small>{_e(str(error)[:500])}</small>" if error else "")
        + ("<br>" if late or any(flags_of.values()) else "")
        + late
        + _flag_html(flags_of)
    )
    graded = status != "error"
    most = max_total(report, data)
    pct = percent(report, data)
    got = total(report)
    return [
        (f'<a href="#{_e(_anchor(report))}">{_who(report)}</a>', False, _name(report)),
        (status_cell, False, status),
        *(
            (_e(format_score(scores.get(c.id)) if graded else ""), True, scores.get(c.id) if graded else None)
            for c in data.concepts
        ),
        (_e(f"{format_score(got)} / {format_score(most)}" if got is not None else ""), True, got),
        (_e(f"{pct:.1f}" if pct is not None else ""), True, pct),
    ]

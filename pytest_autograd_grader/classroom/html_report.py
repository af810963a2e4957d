"""``report.html``: one self-contained page about a class run.

Run information, per-concept statistics and score distributions, the
students x concepts heat map, the total-percent histogram, the class's most
frequent diagnosed mistakes (with one anonymised example each) and the
gradebook. Plots are PNG ``data:`` URIs drawn by matplotlib (the ``class``
extra) on Agg figures that never touch pyplot's global state; without
matplotlib the page is written without them and says how to get them. The
page has no script and loads nothing from elsewhere. Every text from the
reports is escaped: feedback holds text the students' code chose.
"""

from __future__ import annotations

import base64
import html
import io
import statistics
import warnings
from typing import Any

from ..i18n import current_language, msg
from .class_data import SCORED, ClassData, concept_scores, format_score, max_total, percent, total
from .mistakes import Mistake, frequent_mistakes

PLOT_IDS = ("plot-concepts", "plot-heatmap", "plot-totals")
HEATMAP_LABELS_UP_TO = 60  # students; above it the rows are too thin to name
DPI = 100

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 72em;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.error td, tr.missing td { color: #888; }
img { max-width: 100%; height: auto; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: 0.9em; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; white-space: pre-wrap; }
.note { color: #555; }
details { margin: 0.2em 0 0.8em 0; }
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


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
            row.update(mean=statistics.fmean(values), median=statistics.median(values), min=min(values),
                       max=max(values), full=len(full) / len(values) if concept.max_score else None)
        rows.append(row)
    return rows


# -- plots ----------------------------------------------------------------------

def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _plots(data: ClassData, scored: list[dict[str, Any]]) -> dict[str, str] | None:
    """plot id -> PNG data URI; None without matplotlib.

    Margins are set by hand: matplotlib's constrained layout would double the
    time of a 300-student page."""
    try:
        import matplotlib
        import numpy as np
        from matplotlib.figure import Figure
    except ImportError:
        return None
    plots = {}
    concepts = data.concepts
    # No pyplot: a Figure of its own saves through Agg without changing the
    # process's backend (the grader may run inside someone's notebook).
    # parse_math off: a student id such as "$x$" must stay text, not TeX.
    with matplotlib.rc_context({"text.parse_math": False, "font.size": 8, "axes.titlesize": 9}), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")  # glyphs a font lacks in a student's id
        bins = np.linspace(0.0, 100.0, 11)
        if concepts:
            # share of each concept's points, so that the panels share their axes
            shares = []
            for concept in concepts:
                values = [s[concept.id] for s in map(concept_scores, scored) if concept.id in s]
                most = concept.max_score or max(values, default=0.0) or 1.0
                shares.append(np.clip(np.asarray(values, dtype=float) * (100.0 / most), 0.0, 100.0))
            cols = min(4, len(concepts))
            rows = -(-len(concepts) // cols)
            width, height = 2.4 * cols + 0.5, 1.7 * rows + 0.5
            figure = Figure(figsize=(width, height))
            axes = figure.subplots(rows, cols, squeeze=False, sharex=True, sharey=True)
            figure.subplots_adjust(left=0.45 / width, right=1 - 0.1 / width, bottom=0.4 / height,
                                   top=1 - 0.3 / height, wspace=0.12, hspace=0.45)
            for ax, concept, values in zip(axes.flat, concepts, shares):
                counts, _ = np.histogram(values, bins=bins)
                ax.bar(bins[:-1], counts, width=10.0, align="edge", color="#4c72b0", edgecolor="white")
                ax.set_title(concept.id)
            for ax in list(axes.flat)[len(concepts):]:
                ax.set_visible(False)
            axes[0, 0].set_xlim(0.0, 100.0)
            axes[0, 0].set_xticks([0, 50, 100])
            plots["plot-concepts"] = _png(figure)

            students = data.students
            matrix = np.full((len(students), len(concepts)), np.nan)
            for i, report in enumerate(students):
                if report.get("status") not in SCORED:
                    continue
                scores = concept_scores(report)
                for j, concept in enumerate(concepts):
                    if concept.id in scores and concept.max_score:
                        matrix[i, j] = scores[concept.id] / concept.max_score
            labelled = len(students) <= HEATMAP_LABELS_UP_TO
            # Inches: the rows grow with the class, named rows need room for a name.
            label_room = 0.3 + (0.065 * max(len(r["student"]) for r in students[:HEATMAP_LABELS_UP_TO])
                                if labelled else 0.0)
            top_room = 0.3 + 0.05 * max(len(c.id) for c in concepts)
            rows_height = len(students) * (0.2 if labelled else 0.06)
            width = min(label_room, 3.0) + 0.5 * len(concepts) + 1.2
            height = min(max(rows_height, 1.5) + top_room + 0.2, 60.0)
            figure = Figure(figsize=(width, height))
            left, right = min(label_room, 3.0) / width, 1 - 1.0 / width
            ax = figure.add_axes((left, 0.2 / height, right - left, 1 - (top_room + 0.2) / height))
            cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#dddddd")
            image = ax.imshow(matrix, aspect="auto", interpolation="nearest", cmap=cmap, vmin=0.0, vmax=1.0)
            ax.xaxis.tick_top()
            ax.set_xticks(range(len(concepts)), [c.id for c in concepts], rotation=45, ha="left")
            if labelled:
                ax.set_yticks(range(len(students)), [r["student"] for r in students])
            else:
                ax.set_yticks([])
            bar_height = min(3.0, height - top_room - 0.2)
            bar = figure.add_axes((1 - 0.75 / width, 1 - (top_room + bar_height) / height, 0.15 / width,
                                   bar_height / height))
            figure.colorbar(image, cax=bar)
            plots["plot-heatmap"] = _png(figure)

        figure = Figure(figsize=(6.0, 2.4))
        figure.subplots_adjust(left=0.08, right=0.98, bottom=0.15, top=0.95)
        ax = figure.subplots()
        values = [p for p in (percent(r, data) for r in scored) if p is not None]
        counts, edges = np.histogram(np.clip(values, 0.0, 100.0), bins=np.linspace(0.0, 100.0, 21))
        ax.bar(edges[:-1], counts, width=5.0, align="edge", color="#4c72b0", edgecolor="white")
        ax.set_xlim(0.0, 100.0)
        plots["plot-totals"] = _png(figure)
    return plots


# -- the page ---------------------------------------------------------------------

def _table(table_id: str, header: list[tuple[str, bool]], rows: list[list[tuple[str, bool]]],
           row_classes: list[str] | None = None) -> str:
    """A table; cells are (already escaped html, numeric)."""
    out = [f'<table id="{table_id}"><thead><tr>']
    out += [f'<th{" class=n" if n else ""}>{text}</th>' for text, n in header]
    out.append("</tr></thead><tbody>")
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        out.append(f"<tr{cls}>" + "".join(f'<td{" class=n" if n else ""}>{text}</td>' for text, n in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _status(status: str) -> str:
    key = "classout.status." + status.replace(" ", "_")
    try:
        return msg(key)
    except KeyError:
        return status


def _figure(plot_id: str, uri: str, alt: str, caption: str) -> str:
    return (f'<figure><img id="{plot_id}" src="{uri}" alt="{_e(alt)}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>")


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
            key = "classout.mistake_one" if m.students == 1 else "classout.mistake"
            parts.append(f"<li><p>{_e(msg(key, count=m.students, text=m.text))}</p>"
                         f"<details><summary>{_e(msg('classout.example'))}</summary><pre>{_e(m.example)}</pre>"
                         f"</details></li>")
        parts.append("</ol>")
    return "".join(parts) or f'<p class="note">{_e(msg("classout.no_mistakes"))}</p>'


def render(data: ClassData, assignment: str) -> str:
    """The whole page, as text."""
    scored = _scored(data)
    percents = [p for p in (percent(r, data) for r in scored) if p is not None]
    run = data.run
    counts = {s: sum(r.get("status") == s for r in data.students) for s in ("graded", "not attempted", "missing", "error")}
    date = run.get("finished") or run.get("started") or max((str(r.get("finished") or "") for r in data.students),
                                                            default="")
    title = msg("classout.title", assignment=assignment)
    body = [f"<h1>{_e(title)}</h1>", f'<h2 id="run">{_e(msg("classout.run"))}</h2>']
    info = [(msg("classout.assignment"), assignment),
            (msg("classout.checks"), run.get("checks_sha256") or ""),
            (msg("classout.date"), date),
            (msg("classout.students"), msg("classout.statuses", students=len(data.students), graded=counts["graded"],
                                           not_attempted=counts["not attempted"], missing=counts["missing"],
                                           errors=counts["error"]))]
    if percents:
        info.append((msg("classout.mean_median"), msg("classout.percents", mean=statistics.fmean(percents),
                                                      median=statistics.median(percents))))
    body.append('<table id="run-info"><tbody>' + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in info)
                + "</tbody></table>")
    if not data.students:
        body.append(f'<p class="note" id="no-students">{_e(msg("classout.no_students"))}</p>')
    else:
        body.append(f'<p class="note">{_e(msg("classout.scored_note", count=len(scored)))}</p>')
        plots = _plots(data, scored)
        if plots is None:
            body.append(f'<p class="note" id="no-plots">{_e(msg("classout.no_matplotlib"))}</p>')
            plots = {}

        body.append(f'<h2 id="concepts">{_e(msg("classout.concepts"))}</h2>')
        header = [(_e(msg(k)), n) for k, n in (("classout.col.concept", False), ("classout.col.points", True),
                                               ("classout.col.mean", True), ("classout.col.median", True),
                                               ("classout.col.min", True), ("classout.col.max", True),
                                               ("classout.col.full", True))]
        rows = []
        for row in _concept_stats(data, scored):
            concept = row["concept"]
            full = row.get("full")
            rows.append([(f"{_e(concept.title)} <small>({_e(concept.id)})</small>", False),
                         (_e(format_score(concept.max_score)), True),
                         *((_e(format_score(row.get(k), 2)), True) for k in ("mean", "median", "min", "max")),
                         (_e(f"{full:.0%}" if full is not None else ""), True)])
        body.append(_table("concept-table", header, rows))
        if "plot-concepts" in plots:
            body.append(_figure("plot-concepts", plots["plot-concepts"], msg("classout.alt.concepts"),
                                msg("classout.caption.concepts")))

        if "plot-heatmap" in plots:
            body.append(f'<h2 id="heatmap">{_e(msg("classout.heatmap"))}</h2>')
            body.append(_figure("plot-heatmap", plots["plot-heatmap"], msg("classout.alt.heatmap"),
                                msg("classout.caption.heatmap")))
        if "plot-totals" in plots:
            body.append(f'<h2 id="totals">{_e(msg("classout.totals"))}</h2>')
            body.append(_figure("plot-totals", plots["plot-totals"], msg("classout.alt.totals"),
                                msg("classout.caption.totals")))

        body.append(f'<h2 id="mistakes">{_e(msg("classout.mistakes"))}</h2>')
        body.append(f'<p class="note">{_e(msg("classout.mistakes_note"))}</p>')
        body.append(_mistakes_html(data, frequent_mistakes(data.students)))

    body.append(f'<h2 id="gradebook">{_e(msg("classout.gradebook"))}</h2>')
    header = [(_e(msg("classout.col.student")), False), (_e(msg("classout.col.folder")), False),
              (_e(msg("classout.col.status")), False), *((_e(c.id), True) for c in data.concepts),
              (_e(msg("classout.col.total")), True), (_e(msg("classout.col.percent")), True)]
    rows, classes = [], []
    for report in data.students:
        scores = concept_scores(report)
        status = str(report.get("status"))
        error = report.get("error") if status == "error" else None
        status_cell = _e(_status(status)) + (f'<br><small>{_e(str(error)[:500])}</small>' if error else "")
        graded = status != "error"
        most = max_total(report, data)
        pct = percent(report, data)
        rows.append([(_e(report["student"]), False), (_e(report.get("folder") or ""), False), (status_cell, False),
                     *((_e(format_score(scores.get(c.id)) if graded else ""), True) for c in data.concepts),
                     (_e(f"{format_score(total(report))} / {format_score(most)}" if total(report) is not None
                         else ""), True),
                     (_e(f"{pct:.1f}" if pct is not None else ""), True)])
        classes.append(status.replace(" ", "-"))
    body.append(_table("gradebook-table", header, rows, classes))
    lang = "zh" if current_language() == "zh" else "en"
    return (f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n" + "\n".join(body)
            + "\n</body></html>\n")

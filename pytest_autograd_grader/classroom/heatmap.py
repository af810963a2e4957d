"""The class report's students x concepts heat map, as an HTML table.

The browser draws the names, so every script a roster holds (Chinese,
Arabic read right to left, emoji) is drawn with the reader's own fonts,
a long name wraps instead of being clipped, and a screen reader reads
each cell's student, concept and score; a PNG drew CJK names as empty
boxes where the server lacked a font, and cut long ones. Each cell shows
the share of the concept's points (so the colour is never the only
carrier of the value) on viridis's colour for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..i18n import msg
from ..protocol import SCORED
from .class_data import ClassData, concept_scores, display_name, format_score

# matplotlib's viridis at 0, 0.1, ..., 1 (perceptually uniform, colour-blind safe)
VIRIDIS = (
    "#440154",
    "#482475",
    "#414487",
    "#355f8d",
    "#2a788e",
    "#21918c",
    "#22a884",
    "#44bf70",
    "#7ad151",
    "#bddf26",
    "#fde725",
)
NO_SCORE = "#dddddd"
NAME_CHARS = 40  # of a name in its row's header; the whole name is its title and the gradebook's

CSS = """
.heatmap-wrap { max-height: 40em; overflow: auto; border: 1px solid #ddd; }
table.heatmap { border-collapse: separate; border-spacing: 0; margin: 0; font-size: 0.8em; }
table.heatmap th, table.heatmap td { border: 0; border-bottom: 1px solid #fff; padding: 0.15em 0.4em; }
table.heatmap thead th { position: sticky; top: 0; background: #fff; z-index: 1; vertical-align: bottom; }
table.heatmap th.who { min-width: 10em; max-width: 16em; overflow-wrap: anywhere; font-weight: normal; background: #fff;
                       position: sticky; left: 0; }
table.heatmap td { text-align: center; min-width: 2.5em; font-variant-numeric: tabular-nums; }
"""


def colour(share: float) -> str:
    """viridis at ``share`` (0..1), linearly between its tenths."""
    share = min(max(share, 0.0), 1.0) * 10
    low = min(int(share), 9)
    mix = share - low
    a, b = (tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in (VIRIDIS[low], VIRIDIS[low + 1]))
    return "#" + "".join(f"{round(x + (y - x) * mix):02x}" for x, y in zip(a, b))


def shortened(name: str, limit: int = NAME_CHARS) -> str:
    """``name`` cut to ``limit`` characters with an ellipsis (whole words
    where there is a space to cut at); the full name goes to a title."""
    if len(name) <= limit:
        return name
    cut = name[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def _cell(report: dict[str, Any], scores: dict[str, float], concept, escape: Callable[[Any], str]) -> str:
    who = display_name(report)
    score = scores.get(concept.id) if report.get("status") in SCORED and concept.max_score else None
    if score is None:
        title = msg("classout.heatmap_none", student=who, concept=concept.id)
        return f'<td style="background:{NO_SCORE}" title="{escape(title)}">–</td>'
    share = score / concept.max_score
    text = "#000" if share >= 0.55 else "#fff"  # viridis is light from about there
    title = msg(
        "classout.heatmap_cell",
        student=who,
        concept=concept.id,
        score=format_score(score, 2),
        max_score=format_score(concept.max_score),
        percent=round(100 * share),
    )
    return f'<td style="background:{colour(share)};color:{text}" title="{escape(title)}">{round(100 * share)}</td>'


def heatmap_html(data: ClassData, escape: Callable[[Any], str], anchor: Callable[[dict], str]) -> str:
    """The table: a row per student (their name, linked to their section),
    a column per concept, each cell the percent of its points earned."""
    head = [f'<th scope="col">{escape(msg("classout.col.student"))}</th>']
    head += [
        f'<th scope="col" title="{escape(c.title)}">{escape(c.id).replace("_", "_<wbr>")}</th>' for c in data.concepts
    ]
    rows = []
    for report in data.students:
        scores = concept_scores(report)
        name = display_name(report)
        label = f'<a href="#{escape(anchor(report))}"><bdi>{escape(shortened(name))}</bdi></a>'
        cells = "".join(_cell(report, scores, c, escape) for c in data.concepts)
        rows.append(f'<tr><th scope="row" class="who" title="{escape(name)}">{label}</th>{cells}</tr>')
    return (
        '<figure><div class="heatmap-wrap"><table id="heatmap-table" class="heatmap">'
        f"<thead><tr>{''.join(head)}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        f"<figcaption>{escape(msg('classout.caption.heatmap'))}</figcaption></figure>"
    )

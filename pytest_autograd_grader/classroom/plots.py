"""The class report's plots: per-concept score distributions, the
students x concepts heat map and the total-percent histogram, as PNG
``data:`` URIs drawn by matplotlib (the ``class`` extra) on Agg figures
that never touch pyplot's global state."""

from __future__ import annotations

import base64
import io
import warnings
from typing import Any

from .class_data import SCORED, ClassData, concept_scores, percent

PLOT_IDS = ("plot-concepts", "plot-heatmap", "plot-totals")
HEATMAP_LABELS_UP_TO = 60  # students; above it the rows are too thin to name
DPI = 100


def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def preload() -> None:
    """Import matplotlib and its Agg canvas ahead of ``plots`` (about a third
    of a second): the class runner does it while its workers warm up."""
    try:
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
    except ImportError:
        pass


def plots(data: ClassData, scored: list[dict[str, Any]]) -> dict[str, str] | None:
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

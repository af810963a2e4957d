"""The class report's plots: per-concept score distributions and the
total-percent histogram, as PNG ``data:`` URIs drawn by matplotlib (the
``class`` extra) on Agg figures that never touch pyplot's global state.
They draw no student's name (the heat map is the page's own table,
``heatmap``); a concept id the installed fonts cannot draw is drawn as its
number in the concept table instead, and ``font_note`` says what to install."""

from __future__ import annotations

import base64
import io
import warnings
from typing import Any

from ..i18n import msg
from .class_data import ClassData, concept_scores, percent
from .fonts import packages, plot_fonts, uncovered

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


def _titles(data: ClassData) -> list[str]:
    """Each concept's panel title: its id, or its number where the fonts
    installed cannot draw the id (never empty boxes)."""
    return [c.id if not uncovered([c.id]) else f"#{i}" for i, c in enumerate(data.concepts, 1)]


def font_note(data: ClassData) -> str | None:
    """What to install for the plots to draw every concept id, or None."""
    try:
        missing = uncovered([c.id for c in data.concepts])
    except ImportError:
        return None
    if not missing:
        return None
    return msg("classout.plot_fonts", chars=missing, packages=" ".join(packages(missing)))


def plots(data: ClassData, scored: list[dict[str, Any]]) -> dict[str, str] | None:
    """plot id -> PNG data URI; None without matplotlib.

    Margins are set by hand: matplotlib's constrained layout would double the
    time of a 300-student page."""
    try:
        import matplotlib
        import matplotlib.figure  # noqa: F401  (what the plots draw on: none without it)
    except ImportError:
        return None
    plots = {}
    # No pyplot: a Figure of its own saves through Agg without changing the
    # process's backend (the grader may run inside someone's notebook).
    # parse_math off: a student id such as "$x$" must stay text, not TeX.
    # font.family: a list, which matplotlib falls back along glyph by glyph
    with (
        matplotlib.rc_context(
            {"text.parse_math": False, "font.size": 8, "axes.titlesize": 9, "font.family": list(plot_fonts())}
        ),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")  # a glyph no font has: _titles drew the concept's number instead
        if data.concepts:
            plots["plot-concepts"] = _concepts_plot(data, scored)
        plots["plot-totals"] = _totals_plot(data, scored)
    return plots


def _concepts_plot(data: ClassData, scored: list[dict[str, Any]]) -> str:
    """A panel per concept: how many students got what share of its points."""
    import numpy as np
    from matplotlib.figure import Figure

    concepts = data.concepts
    bins = np.linspace(0.0, 100.0, 11)
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
    figure.subplots_adjust(
        left=0.45 / width, right=1 - 0.1 / width, bottom=0.4 / height, top=1 - 0.3 / height, wspace=0.12, hspace=0.45
    )
    for ax, title, share in zip(axes.flat, _titles(data), shares):
        counts, _ = np.histogram(share, bins=bins)
        ax.bar(bins[:-1], counts, width=10.0, align="edge", color="#4c72b0", edgecolor="white")
        ax.set_title(title)
    for ax in list(axes.flat)[len(concepts) :]:
        ax.set_visible(False)
    axes[0, 0].set_xlim(0.0, 100.0)
    axes[0, 0].set_xticks([0, 50, 100])
    return _png(figure)


def _totals_plot(data: ClassData, scored: list[dict[str, Any]]) -> str:
    """How many students got what percent of the whole."""
    import numpy as np
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.0, 2.4))
    figure.subplots_adjust(left=0.08, right=0.98, bottom=0.15, top=0.95)
    ax = figure.subplots()
    values = [p for p in (percent(r, data) for r in scored) if p is not None]
    counts, edges = np.histogram(np.clip(values, 0.0, 100.0), bins=np.linspace(0.0, 100.0, 21))
    ax.bar(edges[:-1], counts, width=5.0, align="edge", color="#4c72b0", edgecolor="white")
    ax.set_xlim(0.0, 100.0)
    return _png(figure)

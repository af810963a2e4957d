"""The grade table as text: the terminal summary, and every platform's
plain-text output (Gradescope's top-level output) reuse it.

Rows fit ``width`` display columns (CJK characters take two): bars shrink
before titles are cut; a title is cut between words, its concept's id kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..boundary.shortening import shorten, width_of
from ..i18n import msg, template
from ..protocol import STUDENT_FAILED, Status
from ..scoring import Gradebook
from .order import course_order

WIDTH = 80  # columns every row fits: a terminal's default, and Gradescope's text box
BAR_WIDTHS = (20, 10)  # the bar's width, the second where titles would otherwise be cut


def _bar(score: float, max_score: float, width: int) -> str:
    filled = round(width * score / max_score) if max_score else 0
    return "#" * filled + "." * (width - filled)


def points(x: float) -> str:
    """A score as people write it: 2, 1.5, 0.333333."""
    return f"{x:g}"


def _left(text: str, width: int) -> str:
    return text + " " * max(0, width - width_of(text))


def separator(title: str, width: int = WIDTH) -> str:
    """pytest's "==== title ====" line, measured in display columns (pytest
    counts characters, so a Chinese title made it two columns too wide)."""
    fill = max(2, width - width_of(title) - 2)
    return f"{'=' * (fill // 2)} {title} {'=' * (fill - fill // 2)}"


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` columns, cut between words and ending
    in an ellipsis when cut."""
    return shorten(text, width, wide=True)


def _name(title: str, concept_id: str, width: int) -> str:
    """The row's name, its id always shown: "Leaf tensors (leaf)", the
    title cut between words where the row has no room for all of it."""
    tag = f" ({concept_id})"
    if width_of(title + tag) <= width:
        return title + tag
    room = width - width_of(tag)
    # where not even the first word fits: the ellipsis alone ("\u2026 (vector_backward)")
    return shorten(title, room, wide=True, split_words=False) + tag if room >= 1 else cut(title + tag, width)


def table_lines(gradebook: Gradebook, width: int = WIDTH) -> list[str]:
    """One row per concept (with the files its points come from, where they
    come from more than one), then the total."""
    totals = gradebook.concept_totals()
    rows = []
    for total in totals:
        percent = 100.0 * total.score / total.max_score if total.max_score else 0.0
        rows.append(
            (
                total,
                f"{points(total.score)}/{points(total.max_score)}",
                msg("summary.passed", passed=total.passed, checks=total.checks),
                f"{percent:5.1f}%",
            )
        )
    score_w = max([len(r[1]) for r in rows] + [len(f"{points(gradebook.score)}/{points(gradebook.max_score)}")])
    passed_w = max([width_of(r[2]) for r in rows] + [1])
    wanted = max([width_of(f"{t.title} ({t.id})") for t, *_ in rows] + [width_of(msg("summary.total"))])
    for bar_w in BAR_WIDTHS:
        # name, two spaces, score, two spaces, passed, a space, bar, a space, "100.0%"
        name_w = width - (2 + score_w + 2 + passed_w + 1 + bar_w + 1 + 6)
        if name_w >= wanted:
            break
    name_w = max(8, min(wanted, name_w))

    def line(name: str, score: str, passed: str, bar: str, pct: str) -> str:
        return f"{_left(name, name_w)}  {score:>{score_w}}  {_left(passed, passed_w)} {bar} {pct}"

    sources = _sources(gradebook)
    lines = []
    for total, score, passed, pct in rows:
        lines.append(
            line(_name(total.title, total.id, name_w), score, passed, _bar(total.score, total.max_score, bar_w), pct)
        )
        lines += [cut("  " + text, width) for text in sources.get(total.id, ())]
    lines.append(
        line(
            msg("summary.total"),
            f"{points(gradebook.score)}/{points(gradebook.max_score)}",
            "",
            _bar(gradebook.score, gradebook.max_score, bar_w),
            f"{gradebook.percent:5.1f}%",
        )
    )
    return lines


def topic_files(gradebook: Gradebook) -> dict[str, str]:
    """The student's file each topic's checks call most (test_engine.py's:
    engine.py), else the file named after the topic."""
    called: dict[str, dict[str, int]] = {}
    for check in gradebook.checks.values():
        if check.topic and check.file:
            counts = called.setdefault(check.topic, {})
            counts[check.file] = counts.get(check.file, 0) + 1
    topics = {check.topic for check in gradebook.checks.values() if check.topic}
    return {topic: _most(called[topic]) if topic in called else f"{topic}.py" for topic in topics}


def _most(counts: Mapping[str, float]) -> str:
    """The key with the largest count, the first of those on a tie."""
    return max(counts, key=counts.__getitem__)


def _sources(gradebook: Gradebook) -> dict[str, list[str]]:
    """For each concept whose points come from more than one topic, a line
    per topic other than its own: "engine.py holds 2 of these points"."""
    file_of = topic_files(gradebook)
    per_concept: dict[str, dict[str, float]] = {}
    for check in gradebook.graded():
        if check.concept and check.topic:
            per_topic = per_concept.setdefault(check.concept, {})
            per_topic[check.topic] = per_topic.get(check.topic, 0.0) + check.max_score
    out = {}
    for concept, per_topic in per_concept.items():
        if len(per_topic) < 2:
            continue
        # the concept's own topic (leaf for leaf) first; else the one with most points
        own = concept if concept in per_topic else _most(per_topic)
        out[concept] = [
            msg("summary.points_in", points=points(p), file=file_of[t]) for t, p in per_topic.items() if t != own
        ]
    return out


def place(file: str, line: int | None, cell: int | None = None) -> str:
    """Where in a student's file: ``leaf.py:12``, or a notebook's cell and
    the line in it (``leaf.ipynb, cell 3, line 2``), or the file alone."""
    if cell and line:
        return msg("place.cell", file=file, cell=cell, line=line)
    return file + (f":{line}" if line else "")


# lines that only head the details under them ("instruction not followed
# (costs 1 of the 4 points ...):", "1 of 2 parts right"): the next step
# names the detail, the problem itself
HEADINGS = (
    "cmp.instruction_broken",
    "cmp.instruction_also",
    "cmp.parts",
    "cmp.parts_earned",
    "cmp.parts_stopped",
    "cmp.parts_stopped_total",
    "cmp.part_within",
    "cmp.credit",
)


def _is_heading(line: str, following: str | None) -> bool:
    text = line.strip()
    if not text:
        return True
    for key in HEADINGS:
        pattern = ".*?".join(re.escape(part) for part in re.split(r"\{[^{}]*\}", template(key)))
        if re.fullmatch(pattern, text, re.S):
            return True
    indent = len(line) - len(line.lstrip())
    # "part 2:" above its failures, indented under it
    return (
        text.endswith((":", "\uff1a")) and following is not None and len(following) - len(following.lstrip()) > indent
    )


def headline(feedback: str, title: str) -> str:
    """The first line of a check's feedback that says what is wrong: past
    blank lines and the headings above the details, with the concept's
    "[title] " the feedback starts with."""
    tag = msg("feedback.header", title=title, what="")
    text = feedback.strip()
    text = text[len(tag) :] if tag and text.startswith(tag) else text
    lines = [line for line in text.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if not _is_heading(line, lines[i + 1] if i + 1 < len(lines) else None):
            return (tag if feedback.strip().startswith(tag) else "") + line.strip()
    return feedback.strip().splitlines()[0] if feedback.strip() else ""


def next_step(gradebook: Gradebook, partial: bool = False) -> str:
    """What to do next: the first check the student has not passed, in the
    course's order (``order.course_order``), at the place in their file it
    concerns, with the line of its feedback that says what is wrong
    (``headline``); or that all is done (of the checks run, when the run
    was ``partial``). Broken checks (``error``) are the instructor's,
    listed apart."""
    todo = course_order(
        gradebook, [c for c in gradebook.checks.values() if c.status in STUDENT_FAILED], begun_first=False
    )
    visible = [c for c in todo if not c.hidden]
    if visible:
        check = visible[0]
        where = (
            place(check.file, check.line, check.cell)
            if check.file
            else topic_files(gradebook).get(check.topic or "", "")
        )
        first = headline(check.feedback, gradebook.concept_title(check)) or check.status
        return msg("summary.next", where=where or check.id, what=first)
    if todo:
        return msg("summary.next_hidden", what=gradebook.concept_title(todo[0]))
    if any(c.status == Status.ERROR for c in gradebook.checks.values()):
        return ""
    return msg("summary.all_done_partial" if partial else "summary.all_done")


def isolation_lines(gradebook: Gradebook) -> list[str]:
    """How student code was fenced off, and what that mode does not protect."""
    return [msg("report.isolation", mode=gradebook.isolation)] + [
        msg("header.missing", what=what) for what in gradebook.isolation_missing
    ]

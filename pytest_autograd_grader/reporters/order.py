"""The order in which a student works through what did not pass.

GitHub shows only the first 10 error annotations of a step, so their order
decides what a student sees: the topics in the course's order, the ones
the student has begun before those not begun yet, down the student's file
within a topic, and broken checks (the instructor's to fix) last.
"""

from __future__ import annotations

from ..protocol import STUDENT_FAILED, Status
from ..scoring import CheckResult, Gradebook

NOT_STARTED_KEYS = ("student.not_implemented", "student.module_missing", "student.empty")


def not_started(check: CheckResult) -> bool:
    """Whether a check failed only because the student has not begun its
    part: a stub still raising NotImplementedError, a missing or empty file
    (in any language the catalogues hold)."""
    from ..i18n.en import EN
    from ..i18n.zh import ZH

    leads = [catalogue[key].split("{")[0] for catalogue in (EN, ZH) for key in NOT_STARTED_KEYS]
    return any(lead in check.feedback for lead in leads)


def _topic(check: CheckResult) -> str:
    return check.topic or check.concept or ""


def topic_ranks(gradebook: Gradebook) -> dict[str, int]:
    """Each topic's place in the course: its own concept's (leaf.py: leaf),
    else that of the first concept its checks count under (engine.py)."""
    order = list(gradebook.concepts)
    rank: dict[str, int] = {}
    for check in gradebook.graded():
        place = order.index(check.concept) if check.concept in order else len(order)
        rank[_topic(check)] = min(rank.get(_topic(check), place), place)
    rank.update({topic: order.index(topic) for topic in rank if topic in order})
    return rank


def begun_topics(gradebook: Gradebook) -> set[str]:
    """The topics with a point earned, or a visible failure that is more
    than "not implemented yet" (a hidden check's generic failure says
    nothing of it)."""
    return {
        _topic(c)
        for c in gradebook.graded()
        if c.score > 0
        or c.status == Status.PASSED
        or (not c.hidden and c.status in STUDENT_FAILED and not not_started(c))
    }


def _place(check: CheckResult) -> tuple:
    """Down the student's file: a notebook's cells in turn, the lines in
    each; a check that names no place comes after those that do. A hidden
    check's place in the file is no part of it: it must not show through."""
    last = 1 << 30
    if check.hidden:
        return (True, "", last, last)
    cell = check.cell if check.cell is not None else (0 if check.line is not None else last)
    return (check.file is None, check.file or "", cell, check.line if check.line is not None else last)


def course_order(gradebook: Gradebook, checks: list[CheckResult], begun_first: bool = True) -> list[CheckResult]:
    """``checks`` in the order a student works through them: the topics in
    the course's order, down the student's file within each, broken checks
    (the instructor's) last; the same whatever order they ran in (-n too).
    ``begun_first`` puts the topics the student has begun before those not
    begun yet (GitHub's 10 annotations); ``next:`` names the course's first."""
    rank, begun = topic_ranks(gradebook), begun_topics(gradebook) if begun_first else set()
    last = len(gradebook.concepts)

    def key(check: CheckResult) -> tuple:
        topic = _topic(check)
        return (
            check.status == Status.ERROR,
            begun_first and topic not in begun,
            rank.get(topic, last),
            topic,
            *_place(check),
            check.id,
        )

    return sorted(checks, key=key)

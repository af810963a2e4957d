"""The order in which a student works through what did not pass.

GitHub shows only the first 10 error annotations of a step, so their order
decides what a student sees: the topics in the course's order, the ones
the student has begun before those not begun yet, down the student's file
within a topic, and broken checks (the instructor's to fix) last.
"""

from __future__ import annotations

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
    return {_topic(c) for c in gradebook.graded() if c.score > 0 or c.status == "passed"
            or (not c.hidden and c.status in ("failed", "timeout", "crashed") and not not_started(c))}


def course_order(gradebook: Gradebook, checks: list[CheckResult]) -> list[CheckResult]:
    """``checks`` in the order a student works through them; the same
    whatever order they ran in (with -n too). A hidden check's place in
    the student's file is no part of its key: it must not show through."""
    rank, begun = topic_ranks(gradebook), begun_topics(gradebook)
    last = len(gradebook.concepts)

    def key(check: CheckResult) -> tuple:
        topic = _topic(check)
        file = None if check.hidden else check.file
        line = check.line if not check.hidden and check.line is not None else 1 << 30
        return (check.status == "error", topic not in begun, rank.get(topic, last), topic,
                file is None, file or "", check.cell or 0, line, check.id)

    return sorted(checks, key=key)

"""The class's most frequent diagnosed mistakes, per concept.

Each check of a student's report lists the diagnoses its feedback gave
(``diagnoses``: {"id", "text"}, noted by the grader while the check ran):
the grader's and a course's own ``diag.*`` messages and the texts a check's
author gave. They are counted by id, so a course's diagnoses count exactly
like the grader's and a class graded in any language counts the same ids;
the students who got one are counted once per concept.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any, NamedTuple

from ..i18n import msg
from ..protocol import STUDENT_FAILED

TOP = 5  # diagnoses kept per concept
EXAMPLE_LINES = 25
EXAMPLE_LINE_CHARS = 300  # a printed tensor can make one line of many kilobytes
# Statuses whose feedback is about the student's code ("error" means the
# check itself broke, "skipped" was never graded).
MISTAKE_STATUSES = STUDENT_FAILED
TEXTS_COMPARED = 100  # a diagnosis's most common texts that its shown text is made from
KEPT_SHARE = 0.4  # the common words must keep this share of a text, or the most common text is shown
GAP = "…"
# words (a name, a number, w.grad), runs of blanks, any other character (each
# Chinese character one): the units in which the texts of one diagnosis differ
_TOKEN = re.compile(r"[A-Za-z0-9_.+\-]+|\s+|.", re.S)


class Mistake(NamedTuple):
    message_id: str
    text: str  # the diagnosis: as the students got it, or with "…" where their values differ
    students: int  # distinct students who got it on this concept
    example: str  # one check's feedback holding it, anonymised and shortened


def _anonymiser(names: Iterable[str]):
    names = sorted({n for n in names if n and n.strip()}, key=len, reverse=True)
    if not names:
        return lambda text: text
    # whole words only: an id such as "al" must not eat the "al" of "already"
    regex = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(n) for n in names) + r")(?!\w)")
    replacement = msg("classout.a_student")
    return lambda text: regex.sub(replacement, text)


def anonymise(text: str, *names: str) -> str:
    """``text`` with each of ``names`` (a student's id, their folder's name)
    replaced by "a student"."""
    return _anonymiser(names)(text)


def shorten(text: str, lines: int = EXAMPLE_LINES) -> str:
    kept = text.splitlines()
    out = [line if len(line) <= EXAMPLE_LINE_CHARS else line[:EXAMPLE_LINE_CHARS] + "…" for line in kept[:lines]]
    if len(kept) > lines:
        out.append("…")
    return "\n".join(out)


def _feedback(check: Mapping[str, Any]) -> str:
    text = check.get("private_feedback") or check.get("feedback") or ""
    return text if isinstance(text, str) else str(text)


def check_diagnoses(check: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(id, text) of each diagnosis a check's report lists, each id once;
    entries that are not two texts are no diagnosis (a report is data)."""
    listed = check.get("diagnoses")
    found: dict[str, str] = {}
    for entry in listed if isinstance(listed, list) else ():
        if (
            isinstance(entry, Mapping)
            and isinstance(entry.get("id"), str)
            and isinstance(entry.get("text"), str)
            and entry["id"]
            and entry["text"]
        ):
            found.setdefault(entry["id"], entry["text"])
    return list(found.items())


def _common(kept: list[str], other: list[str]) -> list[str]:
    """The tokens two texts share, in order, with GAP where they differ."""
    out: list[str] = []
    start_a = start_b = 0
    for a, b, size in SequenceMatcher(None, kept, other, autojunk=False).get_matching_blocks():
        if (a > start_a or b > start_b) and (not out or out[-1] != GAP):
            out.append(GAP)
        out.extend(kept[a : a + size])
        start_a, start_b = a + size, b + size
    return out


def _joined(tokens: list[str]) -> str:
    # blanks alone between two gaps are part of one gap
    text = "".join(tokens)
    return re.sub(rf"{GAP}(\s*{GAP})+", GAP, text)


def general_text(texts: Counter) -> str:
    """What a diagnosis's students got, as one text: the text itself when
    all got the same; else the words all its texts share, with "…" where
    their values differ; the most common text where too little is shared
    (texts that differ in more than their values)."""
    common = [text for text, _ in texts.most_common(TEXTS_COMPARED)]
    if len(common) == 1:
        return common[0]
    tokens = _TOKEN.findall(common[0])
    for text in common[1:]:
        tokens = _common(tokens, _TOKEN.findall(text))
    shared = _joined(tokens)
    fixed = len(shared.replace(GAP, "").strip())
    return shared if fixed >= KEPT_SHARE * min(len(t) for t in common) else common[0]


Key = tuple[str, str]  # (concept, diagnosis id)


@dataclass
class _Tally:
    """Per (concept, id): the students who got it; its texts, counted; the
    names in them to anonymise; the first example. ``concepts`` in the
    order first met."""

    students: dict[Key, set[str]] = field(default_factory=dict)
    texts: dict[Key, Counter] = field(default_factory=dict)
    names: dict[Key, set[str]] = field(default_factory=dict)
    examples: dict[Key, str] = field(default_factory=dict)
    concepts: dict[str, None] = field(default_factory=dict)


def frequent_mistakes(reports: Iterable[Mapping[str, Any]], top: int | None = TOP) -> dict[str, list[Mistake]]:
    """Per concept id (in the order first met), its ``top`` diagnoses (None:
    every one) by the number of distinct students who got them (ties by
    id).

    ``reports`` are per-student class reports (``student``, ``folder``,
    ``checks``); a hidden check's diagnoses are in the instructors' report a
    class run writes, and its example is its ``private_feedback``."""
    tally = _Tally()
    for number, report in enumerate(reports):
        if not isinstance(report, Mapping):
            continue
        student = str(report.get("student") or f"#{number}")
        folder = str(report.get("folder") or "")
        for check in report.get("checks") or ():
            if isinstance(check, Mapping) and check.get("status") in MISTAKE_STATUSES:
                _count_check(tally, check, student, folder)
    return _ranked(tally, top)


def _count_check(tally: _Tally, check: Mapping[str, Any], student: str, folder: str) -> None:
    """One student's check's diagnoses counted."""
    found = check_diagnoses(check)
    if not found:
        return
    concept = str(check.get("concept") or "")
    tally.concepts.setdefault(concept, None)
    for message_id, text in found:
        key = (concept, message_id)
        tally.students.setdefault(key, set()).add(student)
        tally.texts.setdefault(key, Counter())[text] += 1
        tally.names.setdefault(key, set()).update((student, folder))
        if key not in tally.examples:
            tally.examples[key] = shorten(anonymise(_feedback(check) or text, student, folder))


def _ranked(tally: _Tally, top: int | None) -> dict[str, list[Mistake]]:
    """Each concept's mistakes, anonymised, most students first."""
    result: dict[str, list[Mistake]] = {concept: [] for concept in tally.concepts}
    for key, who in tally.students.items():
        concept, message_id = key
        text = shorten(_anonymiser(tally.names[key])(general_text(tally.texts[key])), lines=3)
        result[concept].append(Mistake(message_id, text, len(who), tally.examples[key]))
    for mistakes in result.values():
        mistakes.sort(key=lambda m: (-m.students, m.message_id))
        if top is not None:
            del mistakes[top:]
    return result

"""The class's most frequent diagnosed mistakes, per concept.

A failed check's feedback carries the grader's diagnoses as sentences from
the message catalogue (the ``diag.*`` messages). Matching each catalogue
template (English and Chinese: a class run may use either language) against
the feedback tells which diagnoses a student got without the reports having
to carry message ids; the students who got one are counted once per concept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from ..i18n import msg
from ..i18n.en import EN

TOP = 5  # diagnoses kept per concept
EXAMPLE_LINES = 25
EXAMPLE_LINE_CHARS = 300  # a printed tensor can make one line of many kilobytes
# Statuses whose feedback is about the student's code ("error" means the
# check itself broke, "skipped" was never graded).
MISTAKE_STATUSES = ("failed", "timeout", "crashed")
# A diag.* message whose English text has no fixed run of at least this many
# characters is a fragment other diagnoses embed ("derivative {k} of p"), not a
# diagnosis of its own: its pattern would match ordinary text everywhere.
MIN_LITERAL = 20
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


class Mistake(NamedTuple):
    message_id: str
    text: str      # the diagnosis: as the students got it, or with "…" where their values differ
    students: int  # distinct students who got it on this concept
    example: str   # one check's feedback holding it, anonymised and shortened


class _Pattern(NamedTuple):
    message_id: str
    key: str  # the template's longest fixed text: a fast substring test before the regex
    regex: re.Pattern[str]
    template: str
    words: frozenset[str]  # whole words of the fixed text, each found as a word in every match


class _Index(NamedTuple):
    by_word: dict[str, tuple[_Pattern, ...]]  # a rare word of each pattern -> the patterns it stands for
    always: tuple[_Pattern, ...]  # patterns without such a word: tried on every text


_WORD = re.compile(r"\w+")


def _compile(message_id: str, template: str) -> _Pattern | None:
    parts = _PLACEHOLDER.split(template)
    # A leading or trailing placeholder would only widen the match to the
    # whole line, which would hide diagnoses that sit inside another's span.
    while parts and not parts[0]:
        parts.pop(0)
    while parts and not parts[-1]:
        parts.pop()
    if not parts:
        return None
    # As tests/conftest.py pattern(): placeholders match anything on the line.
    regex = re.compile(".*?".join(re.escape(part) for part in parts))
    # Words with a non-word character on both sides inside the fixed text:
    # at its edges a placeholder's value or the text before the match could
    # run on into the word ("2倍", "。可能").
    words = frozenset(m.group() for part in parts for m in _WORD.finditer(part)
                      if 0 < m.start() and m.end() < len(part))
    return _Pattern(message_id, max(parts, key=len), regex, template, words)


@lru_cache(maxsize=1)
def patterns() -> tuple[_Pattern, ...]:
    """One compiled pattern per diagnosis and language, built once per process."""
    from ..i18n.zh import ZH

    ids = [key for key, text in EN.items() if key.startswith("diag.")
           and max(len(part) for part in _PLACEHOLDER.split(text)) >= MIN_LITERAL]
    found = []
    for catalogue in (EN, ZH):
        for key in ids:
            pattern = _compile(key, catalogue.get(key, ""))
            if pattern is not None:
                found.append(pattern)
    return tuple(found)


@lru_cache(maxsize=1)
def _index() -> _Index:
    """Each pattern filed under its rarest word, so that a text is tried only
    against the patterns whose word it holds (a set lookup per word of the
    text instead of a substring search for each of the ~300 patterns)."""
    every = patterns()
    counts: dict[str, int] = {}
    for pattern in every:
        for word in pattern.words:
            counts[word] = counts.get(word, 0) + 1
    by_word: dict[str, list[_Pattern]] = {}
    always = []
    for pattern in every:
        if pattern.words:
            word = min(pattern.words, key=lambda w: (counts[w], -len(w), w))
            by_word.setdefault(word, []).append(pattern)
        else:
            always.append(pattern)
    return _Index({w: tuple(p) for w, p in by_word.items()}, tuple(always))


def _line_diagnoses(line: str) -> list[tuple[str, str, str]]:
    index = _index()
    candidates = [p for word in set(_WORD.findall(line)) for p in index.by_word.get(word, ())]
    spans = []
    for pattern in (*candidates, *index.always):
        if pattern.key not in line:
            continue
        for match in pattern.regex.finditer(line):
            spans.append((match.start(), match.end(), pattern, match.group()))
    found = []
    reach = -1
    for start, end, pattern, matched in sorted(spans, key=lambda s: (s[0], -s[1], s[2].message_id)):
        if end <= reach:  # inside the previous (longer or earlier) match: a fragment of it
            continue
        reach = max(reach, end)
        found.append((pattern.message_id, matched, pattern.template))
    return found


def diagnoses(text: str, cache: dict[str, list[tuple[str, str, str]]] | None = None) -> list[tuple[str, str, str]]:
    """The diagnoses in one feedback text: (message id, the matched text,
    the template), in order, each id once. A match lying inside another
    one's span is a fragment of that diagnosis and not counted.

    No template holds a line break and a placeholder's wildcard stops at
    one, so a diagnosis lies within a line: lines are matched one by one,
    and ``cache`` (line -> its diagnoses) spares matching a line again that
    other students' feedback holds too (most of a class's diagnosis lines)."""
    found: dict[str, tuple[str, str, str]] = {}
    for line in text.split("\n"):
        if cache is None:
            hits = _line_diagnoses(line)
        else:
            hits = cache.get(line)
            if hits is None:
                hits = cache[line] = _line_diagnoses(line)
        for hit in hits:
            found.setdefault(hit[0], hit)
    return list(found.values())


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


def _general(template: str) -> str:
    return _PLACEHOLDER.sub("…", template)


def frequent_mistakes(reports: Iterable[Mapping[str, Any]], top: int | None = TOP) -> dict[str, list[Mistake]]:
    """Per concept id (in the order first met), its ``top`` diagnoses (None:
    every one) by the number of distinct students who got them (ties by
    message id).

    ``reports`` are per-student class reports (``student``, ``folder``,
    ``checks``); a hidden check's ``private_feedback`` is read where present,
    since its ``feedback`` only says that it failed."""
    # (concept, id) -> the students who got it; the texts matched, each with
    # the first student who got it (to anonymise it); the first example
    students: dict[tuple[str, str], set[str]] = {}
    texts: dict[tuple[str, str], dict[str, tuple[str, str]]] = {}
    templates: dict[tuple[str, str], str] = {}
    examples: dict[tuple[str, str], str] = {}
    concepts: dict[str, None] = {}
    cache: dict[str, list[tuple[str, str, str]]] = {}
    for number, report in enumerate(reports):
        if not isinstance(report, Mapping):
            continue
        student = str(report.get("student") or f"#{number}")
        folder = str(report.get("folder") or "")
        for check in report.get("checks") or ():
            if not isinstance(check, Mapping) or check.get("status") not in MISTAKE_STATUSES:
                continue
            text = _feedback(check)
            found = diagnoses(text, cache) if text else []
            if not found:
                continue
            concept = str(check.get("concept") or "")
            concepts.setdefault(concept, None)
            for message_id, matched, template in found:
                key = (concept, message_id)
                students.setdefault(key, set()).add(student)
                texts.setdefault(key, {}).setdefault(matched, (student, folder))
                templates.setdefault(key, template)
                if key not in examples:
                    examples[key] = shorten(anonymise(text, student, folder))
    result: dict[str, list[Mistake]] = {concept: [] for concept in concepts}
    for key, who in students.items():
        concept, message_id = key
        seen = texts[key]
        if len(seen) == 1:  # every student got the very same sentence
            matched, names = next(iter(seen.items()))
            text = anonymise(matched, *names)
        else:  # their values differ: the sentence with "…" for them
            text = _general(templates[key])
        result[concept].append(Mistake(message_id, text, len(who), examples[key]))
    for mistakes in result.values():
        mistakes.sort(key=lambda m: (-m.students, m.message_id))
        if top is not None:
            del mistakes[top:]
    return result

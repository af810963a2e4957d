"""Text made to fit a room: cut between words, never inside one, and never
inside a quote it leaves open. What is cut says so with an ellipsis (inside
the quote it closes: ``'Trying to backward through…'``).

Feedback quotes what the student's code returned or raised, often a repr
whose closing quote is the first thing a plain slice loses; a reader then
cannot tell where the quoted text ends and the grader's own words start.
The room is counted in characters, or in a terminal's display columns
(``wide``: East Asian wide characters take two).
"""

from __future__ import annotations

import unicodedata
from itertools import accumulate

ELLIPSIS = "\u2026"
# opening quote -> its closing one; the symmetric ones (' " `) open only
# where a word does not go on (an apostrophe: don't) and close only where
# none follows
QUOTES = {
    "'": "'",
    '"': '"',
    "`": "`",
    "\u201c": "\u201d",
    "\u2018": "\u2019",
    "\u300c": "\u300d",
    "\u300e": "\u300f",
    "\u00ab": "\u00bb",
    "\uff08": "\uff09",
}
_SYMMETRIC = {"'", '"', "`"}
JOINERS = "-'\u2019"
MAX_OPEN = 8  # quotes tracked inside each other: a text of 20,000 opening quotes must not cost 20,000 closers


def is_wide(c: str) -> bool:
    return unicodedata.east_asian_width(c) in "WF"


def width_of(text: str) -> int:
    """Columns ``text`` takes in a terminal: East Asian wide characters take two."""
    return sum(2 if is_wide(c) else 1 for c in text)


def _wordish(c: str) -> bool:
    # a letter of a script that separates words with spaces; CJK characters are words of their own
    return (c.isalnum() or c == "_" or unicodedata.combining(c) > 0) and not is_wide(c)


def is_boundary(text: str, i: int) -> bool:
    """Whether cutting ``text`` before index ``i`` cuts no word, no
    combining mark from its letter and no backslash escape in two."""
    if i <= 0 or i >= len(text):
        return True
    if text[i - 1] == "\\" or unicodedata.combining(text[i]):
        return False
    before, after = text[i - 1], text[i]
    # a hyphen or an apostrophe between letters joins one word (non-scalars, don't)
    if after in JOINERS and i + 1 < len(text) and _wordish(before) and _wordish(text[i + 1]):
        return False
    if before in JOINERS and i >= 2 and _wordish(text[i - 2]) and _wordish(after):
        return False
    return not (_wordish(before) and _wordish(after))


def _escape_end(text: str, i: int) -> int:
    """Where the escape starting with the backslash at ``i`` ends (a repr's
    \\n, \\x1b, \\u4e2d, \\U0001f600, \\N{...}, \\012)."""
    kind = text[i + 1] if i + 1 < len(text) else ""
    if kind in ("x", "u", "U"):
        return i + {"x": 4, "u": 6, "U": 10}[kind]
    if kind == "N" and text.startswith("{", i + 2):
        close = text.find("}", i + 3)
        return close + 1 if close > 0 else len(text)
    if kind.isdigit():
        j = i + 1
        while j < min(len(text), i + 4) and text[j] in "01234567":
            j += 1
        return j
    return i + 2


def _scan(text: str, end: int) -> tuple[list[tuple[str, ...]], set[int]]:
    """For every prefix ``text[:i]`` (i <= end), the closing quotes of the
    quotes it leaves open, innermost last; and the places inside a quoted
    escape (``\\x1b``), where a cut would leave half of it."""
    states: list[tuple[str, ...]] = [()]
    inside: set[int] = set()
    stack: tuple[str, ...] = ()
    escape_end = 0
    for i, c in enumerate(text[:end]):
        before = text[i - 1] if i else " "
        after = text[i + 1] if i + 1 < len(text) else " "
        if i < escape_end:
            inside.add(i)
        elif c == "\\" and stack and stack[-1] in ("'", '"'):
            escape_end = _escape_end(text, i)  # a repr's escape: \\' does not close the quote
        elif stack and c == stack[-1] and not (c in _SYMMETRIC and _wordish(after)):
            stack = stack[:-1]
        elif c in QUOTES and len(stack) < MAX_OPEN and not (c in _SYMMETRIC and _wordish(before)):
            stack = stack + (QUOTES[c],)
        states.append(stack)
    return states, inside


def cut_point(text: str, limit: int, wide: bool = False, split_words: bool = True) -> tuple[int, str]:
    """Where to cut ``text`` so that what is kept, the ellipsis and the
    quotes it closes fit ``limit``: (characters kept, the closing quotes).
    The last word boundary that fits; a single word longer than the whole
    room is cut where the room ends (there is no boundary to keep), unless
    not ``split_words``: then nothing is kept."""
    sizes = [2 if wide and is_wide(c) else 1 for c in text]
    upto = [0, *accumulate(sizes)]
    room = limit - 1  # the ellipsis
    end = 0
    while end < len(text) and upto[end + 1] <= room:
        end += 1
    states, inside = _scan(text, end)
    first = len(text) - len(text.lstrip())  # cutting before it keeps nothing

    def fitting(i: int, strict: bool = True) -> tuple[int, str] | None:
        kept = len(text[:i].rstrip())
        if kept in inside:
            return None
        if strict and kept and len(states[kept]) > len(states[kept - 1]):
            return None  # a quote that opens only to be cut: cut before it
        closers = "".join(reversed(states[kept]))
        size = upto[kept] + 1 + sum(2 if wide and is_wide(c) else 1 for c in closers)
        return (kept, closers) if kept and size <= limit else None

    for i in range(end, first, -1):
        if is_boundary(text, i) and (found := fitting(i)):
            return found
    if not split_words:
        return 0, ""
    # no boundary fits: one word longer than the whole room, cut where the room ends;
    # else keep a quote that opens only to show its ellipsis
    return next((found for i in range(end, first, -1) if (found := fitting(i))), None) or next(
        (found for i in range(end, first, -1) if (found := fitting(i, strict=False))), (0, "")
    )


def shorten(text: str, limit: int, wide: bool = False, split_words: bool = True) -> str:
    """``text`` as it is when it fits ``limit`` (characters, or columns
    when ``wide``); else cut at a word boundary, ending in an ellipsis and
    the quotes it leaves open, closed."""
    if (width_of(text) if wide else len(text)) <= limit:
        return text
    if limit < 1:
        return ""
    kept, closers = cut_point(text, limit, wide, split_words)
    return text[:kept] + ELLIPSIS + closers

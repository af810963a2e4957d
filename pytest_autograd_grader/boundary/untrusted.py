"""Text from the student's side, made safe to show.

Exception messages and type names, reprs, notes and printed output come
from the student's process. Shown raw, their control characters would drive
whatever shows them: a carriage return or an escape sequence redraws the
terminal (a fake "TOTAL ... 100.0%" under the real table, lines of it
erased), a bidi override reverses what a reader sees, a lone surrogate makes
printing fail. Every check's feedback passes through ``shown`` once, when
its result is made (``plugin``), before any reporter (terminal, JSON,
Gradescope, GitHub's summary and annotations, the class report) reads it.

Text that spans lines is quoted where it is put into a message
(``quoted``): a line of it must never pass for one of the grader's own (a
row of the grade table, its TOTAL, a header) nor for a workflow command,
which GitHub's runner reads from any line of the job's log that starts with
``::`` after spaces. ``guarded`` is the net under that for the whole of a
check's feedback.
"""

from __future__ import annotations

import re

from ..i18n import msg
from .shortening import ELLIPSIS, cut_point

GUTTER = "  | "  # in front of every line of student text that starts a line
FEEDBACK_LIMIT = 20_000  # characters of one check's feedback
# C0 controls but tab and line feed, DEL, C1 controls, zero-width and
# direction marks, line and paragraph separators, bidi embeddings, overrides
# and isolates, the byte-order mark, surrogates, interlinear annotations
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff\ufff9-\ufffb]"
)


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str, limit: int = FEEDBACK_LIMIT) -> str:
    """``text`` with every character that could drive a terminal or a
    reader shown as its escape (``\\x1b``, ``\\u202e``), cut to ``limit``
    characters between words, the quotes it leaves open closed, with a
    note of what was left out."""
    if len(text) > limit:
        kept, closers = cut_point(text, limit + 1)  # up to ``limit`` characters, then the ellipsis
        text = text[:kept] + ELLIPSIS + closers + msg("text.cut", count=len(text) - kept)
    return _UNSAFE.sub(_escaped, text)


def quoted(text: object, block: bool = False) -> str:
    """``text`` with each line after the first behind the gutter (every
    line, for a ``block`` that starts on a line of its own), so that no line
    of it starts a line of what the grader prints. A line already behind
    the gutter stays as it is: quoting twice changes nothing."""
    text = str(text)
    end = "\n" if text.endswith("\n") else ""  # a last newline ends the text, it starts no line
    lines = text.removesuffix("\n").split("\n") if text else []
    head = [] if block or not lines else [lines.pop(0)]
    return "\n".join(head + [line if line.startswith(GUTTER) else GUTTER + line for line in lines]) + end


# a line that starts like a workflow command or the table's TOTAL, or ends
# like a row of the table (a percentage)
_GRADERS_OWN = re.compile(r"^\s*(::|##\[|TOTAL\b|={3,}|_{3,})|\d%\s*$")


def guarded(text: str) -> str:
    """A check's feedback with every line after the first that could pass
    for the grader's own put behind the gutter: the net for student text
    some message took in without ``quoted``."""
    total = msg("summary.total").strip()
    lines = text.split("\n")
    return "\n".join(
        lines[:1]
        + [
            GUTTER + line
            if not line.startswith(GUTTER)
            and (_GRADERS_OWN.search(line) or (total and line.lstrip().startswith(total)))
            else line
            for line in lines[1:]
        ]
    )

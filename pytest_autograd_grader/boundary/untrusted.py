"""Text from the student's side, made safe to show.

Exception messages and type names, reprs, notes and printed output come
from the student's process. Shown raw, their control characters would drive
whatever shows them: a carriage return or an escape sequence redraws the
terminal (a fake "TOTAL ... 100.0%" under the real table, lines of it
erased), a bidi override reverses what a reader sees, a lone surrogate makes
printing fail. Every check's feedback passes through ``shown`` once, when
its result is made (``plugin``), before any reporter (terminal, JSON,
Gradescope, GitHub's summary and annotations, the class report) reads it.
"""

from __future__ import annotations

import re

from ..i18n import msg

FEEDBACK_LIMIT = 20_000  # characters of one check's feedback
# C0 controls but tab and line feed, DEL, C1 controls, zero-width and
# direction marks, line and paragraph separators, bidi embeddings, overrides
# and isolates, the byte-order mark, surrogates, interlinear annotations
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
                     "\ud800-\udfff\ufff9-\ufffb]")


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str, limit: int = FEEDBACK_LIMIT) -> str:
    """``text`` with every character that could drive a terminal or a
    reader shown as its escape (``\\x1b``, ``\\u202e``), cut to ``limit``
    characters with a note of what was left out."""
    if len(text) > limit:
        text = text[:limit] + msg("text.cut", count=len(text) - limit)
    return _UNSAFE.sub(_escaped, text)

"""Fonts for the text the class report's PNG plots still draw (concept ids
in the distributions' panel titles): matplotlib's font fallback list made
of the fonts installed here, and the characters none of them can draw, so
that a plot never shows empty boxes silently (names are drawn by the
browser: ``heatmap``)."""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable

# tried in order for each glyph (matplotlib >= 3.6 falls back per glyph)
FALLBACK = (
    "DejaVu Sans",
    "Noto Sans",
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Noto Sans CJK KR",
    "Noto Sans Arabic",
    "Noto Sans Hebrew",
    "Noto Sans Devanagari",
    "Noto Sans Thai",
    "Noto Sans Symbols",
    "Noto Sans Symbols 2",
    "WenQuanYi Zen Hei",
    "Droid Sans Fallback",
    "Symbola",
)
# Debian's package that covers a script (by words of its characters' Unicode names)
PACKAGES = ((("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "BOPOMOFO", "IDEOGRAPHIC", "FULLWIDTH"), "fonts-noto-cjk"),)
# emoji: matplotlib draws outline fonts only (not the colour bitmaps of Noto Color Emoji)
EMOJI = ((0x2600, 0x27BF), (0x1F000, 0x1FAFF))
EMOJI_PACKAGE = "fonts-symbola"
OTHER_PACKAGE = "fonts-noto-core"


@functools.lru_cache(maxsize=1)
def plot_fonts() -> tuple[str, ...]:
    """The families of ``FALLBACK`` installed here, in its order."""
    from matplotlib import font_manager

    present = {font.name for font in font_manager.fontManager.ttflist}
    return tuple(family for family in FALLBACK if family in present) or ("DejaVu Sans",)


@functools.cache
def _charmap(family: str) -> frozenset[int]:
    from matplotlib import font_manager, ft2font

    path = font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
    try:
        return frozenset(ft2font.FT2Font(path).get_charmap())
    except (OSError, RuntimeError, ValueError):
        return frozenset()


def uncovered(texts: Iterable[str], families: Iterable[str] | None = None) -> str:
    """The characters of ``texts`` no font of ``families`` (default:
    ``plot_fonts()``) can draw, each once, in order (spaces and marks
    that draw nothing of their own left out)."""
    maps = [_charmap(f) for f in (plot_fonts() if families is None else families)]
    found = dict.fromkeys(
        ch
        for text in texts
        for ch in text
        if not ch.isspace()
        and unicodedata.category(ch) not in ("Cc", "Cf", "Mn")
        and not any(ord(ch) in m for m in maps)
    )
    return "".join(found)


def packages(chars: str) -> list[str]:
    """The Debian font packages that draw ``chars``."""
    wanted = []
    for ch in chars:
        name = unicodedata.name(ch, "")
        emoji = any(low <= ord(ch) <= high for low, high in EMOJI)
        script = next((p for words, p in PACKAGES if any(w in name for w in words)), OTHER_PACKAGE)
        package = EMOJI_PACKAGE if emoji else script
        if package not in wanted:
            wanted.append(package)
    return wanted

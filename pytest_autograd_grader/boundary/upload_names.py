"""A module missing from a submission, and a file beside it that is its
copy under another name: ``leaf (1).py`` (a browser's second download),
``leaf-1.py`` (Canvas's second upload), ``leaf copy.py``, ``leaf - Copy.py``,
``Copy of leaf.py``, ``Leaf.py``, ``leaf.py.txt``.

The grader only names such a file and asks for it to be renamed; it never
grades it as ``leaf.py``. Which of two copies is the student's answer
(``leaf (1).py`` beside ``leaf (2).py``) is theirs to say, and a name is
the student's text: it is shown quoted, a few of them at most.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..i18n import msg
from .untrusted import quoted, shown

# what browsers, systems and LMSs add to a file's stem when they keep a second copy
_MARK = re.compile(
    r"(?: ?\(\d{1,4}\)| ?-\d{1,4}| ?- ?copy(?: ?\(\d{1,4}\))?| copy(?: \d{1,4})?"
    r"| \(copy\)| \(\d{1,4}\) ?- ?copy)$",
    re.IGNORECASE,
)
_COPY_OF = re.compile(r"^copy of ", re.IGNORECASE)
_SUFFIXES = (".py", ".ipynb")
SCAN_LIMIT = 2000  # directory entries looked at: an upload of a million files costs no more
SHOWN_LIMIT = 3


def original_name(name: str) -> str | None:
    """The name ``name`` is a copy of (``leaf (1).py`` -> ``leaf.py``),
    lower-cased; None when it is no module's name or already the original."""
    lowered = name.lower()
    if lowered.endswith((".py.txt", ".ipynb.txt")):
        lowered = lowered.removesuffix(".txt")  # an extension a system hid, added again
    suffix = next((s for s in _SUFFIXES if lowered.endswith(s)), None)
    if suffix is None or "\n" in name or "/" in name:
        return None
    stem = _COPY_OF.sub("", lowered.removesuffix(suffix)).strip()
    for _ in range(4):  # leaf (1) (1).py
        stripped = _MARK.sub("", stem).strip()
        if stripped == stem:
            break
        stem = stripped
    original = stem + suffix
    return original if original != name else None


def copies_of(directory: Path, module: str) -> list[str]:
    """The regular files in ``directory`` whose names are copies of
    ``module``'s file (``.py`` or notebook), sorted."""
    wanted = {f"{module}{suffix}".lower() for suffix in _SUFFIXES}
    found = []
    try:
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= SCAN_LIMIT:
                    break
                if entry.is_file(follow_symlinks=False) and original_name(entry.name) in wanted:
                    found.append(entry.name)
    except OSError:
        return []
    return sorted(found)


def rename_hint(directory: Path | None, module: str) -> str | None:
    """ "found 'leaf (1).py': rename it to leaf.py ..." for a module the
    submission lacks, when a copy of it under another name is there."""
    if directory is None:
        return None
    copies = copies_of(directory, module)
    if not copies:
        return None
    names = ", ".join(quoted(shown(repr(name), 200)) for name in copies[:SHOWN_LIMIT])
    if len(copies) > SHOWN_LIMIT:
        names += msg("student.rename_more", count=len(copies) - SHOWN_LIMIT)
    suffix = Path(original_name(copies[0]) or ".py").suffix  # leaf (1).ipynb: rename it to leaf.ipynb
    return msg("student.rename_copy", found=names, expected=f"{module}{suffix}", example=f"{module} (1){suffix}")

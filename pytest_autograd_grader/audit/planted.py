"""The author's planted mistakes: ``MISTAKES/<topic>/<name>.py``, each a
whole module (the solution with one wrong answer) whose docstring's first
line says what is wrong, then optional fields, one a line::

    expected diagnosis: diag.hooks.unscaled, diag.hooks.other
    check: test_reversed_grad

Files starting with ``_`` are ignored (helpers, ``__init__.py``)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from ..i18n import msg


class AuditUsageError(Exception):
    """Input the author must fix before an audit can run (exit 2)."""


@dataclass(frozen=True)
class Planted:
    topic: str
    name: str
    path: Path
    what: str = ""  # the docstring's first line
    expected: tuple[str, ...] = ()  # diagnosis ids that must all be named
    check: str = ""  # informative: the check meant to catch it
    source: str = field(default="", repr=False)
    error: str = ""  # why it cannot be graded (it does not parse)


def find_planted(mistakes: Path, topics: list[str]) -> list[Planted]:
    """Every planted mistake under ``mistakes``, by topic then name. A
    folder named like no solution module, or a folder holding no mistake,
    is the author's to fix: AuditUsageError saying what to do."""
    planted: list[Planted] = []
    entries = [p for p in mistakes.iterdir() if not p.name.startswith(".")]
    if not entries:  # an author who made the folder meant to plant something
        raise AuditUsageError(msg("audit.mistakes_folder_empty", folder=str(mistakes)))
    for folder in sorted(p for p in entries if p.is_dir() and not _skipped(p)):
        if folder.name not in topics:
            raise AuditUsageError(
                msg("audit.mistakes_unknown_topic", folder=str(folder), topics=", ".join(topics) or "-")
            )
        files = sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))
        if not files:
            raise AuditUsageError(msg("audit.mistakes_empty", folder=str(folder), topic=folder.name))
        planted += [read_planted(path, folder.name) for path in files]
    return planted


def _skipped(folder: Path) -> bool:
    return folder.name.startswith((".", "_"))


def read_planted(path: Path, topic: str) -> Planted:
    """One mistake with its docstring's fields; one that does not parse
    keeps the reason in ``error`` (an 'error' verdict, not a crash)."""
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return Planted(topic, path.stem, path, error=msg("audit.mistake_unreadable", error=str(exc)))
    try:
        tree = ast.parse(source, filename=str(path))
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or "?"
        return Planted(
            topic,
            path.stem,
            path,
            source=source,
            error=msg("audit.mistake_syntax", line=line, error=getattr(exc, "msg", str(exc))),
        )
    what, fields = parse_docstring(ast.get_docstring(tree) or "")
    expected = tuple(i.strip() for i in fields.get("expected diagnosis", "").split(",") if i.strip())
    return Planted(topic, path.stem, path, what, expected, fields.get("check", ""), source)


def parse_docstring(docstring: str) -> tuple[str, dict[str, str]]:
    """The first line, and the ``key: value`` fields of the lines after it."""
    lines = docstring.strip().splitlines()
    what = lines[0].strip() if lines else ""
    fields: dict[str, str] = {}
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in ("expected diagnosis", "expected diagnoses", "check"):
            name = "expected diagnosis" if key.strip().lower().startswith("expected") else "check"
            fields[name] = ", ".join(filter(None, (fields.get(name, ""), value.strip())))
    return what, fields

"""The author's accepted survivors: mutants that cannot be told from the
solution (equivalent), each with the reason it is accepted::

    [[survivor]]
    id = "leaf.init_parameter:swap_operands:1a2b3c4d"
    reason = "w * x and x * w are the same product"
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..i18n import msg
from .planted import AuditUsageError

_KEYS = {"id", "reason"}


def _toml():
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:
        import tomli
    except ImportError:
        raise AuditUsageError(msg("audit.install_extra", missing="tomli")) from None
    return tomli


def read_accepted(path: Path | None) -> dict[str, str]:
    """Mutant id -> reason; an absent file accepts none. An entry without
    an id or a reason, or with a key of its own, is the author's to fix."""
    if path is None or not path.is_file():
        return {}
    toml = _toml()
    try:
        data = toml.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, toml.TOMLDecodeError) as exc:
        raise AuditUsageError(msg("audit.accepted_unreadable", path=str(path), error=str(exc))) from None
    entries = data.get("survivor", [])
    unknown_tables = sorted(set(data) - {"survivor"})
    if unknown_tables or not isinstance(entries, list):
        raise AuditUsageError(
            msg("audit.accepted_bad_entry", path=str(path), number=0, problem=", ".join(unknown_tables) or "survivor")
        )
    accepted: dict[str, str] = {}
    for number, entry in enumerate(entries, 1):
        problem = _problem(entry)
        if problem:
            raise AuditUsageError(msg("audit.accepted_bad_entry", path=str(path), number=number, problem=problem))
        accepted[entry["id"].strip()] = entry["reason"].strip()
    return accepted


def _problem(entry) -> str:
    if not isinstance(entry, dict):
        return "[[survivor]]"
    extra = sorted(set(entry) - _KEYS)
    if extra:
        return ", ".join(extra)
    for key in ("id", "reason"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            return key
    return ""


def stale(accepted: dict[str, str], mutant_ids: set[str]) -> list[str]:
    """Accepted ids no mutant has any more (the solution changed): warned about."""
    return sorted(set(accepted) - mutant_ids)

"""The synthetic class an audit grades: per topic, a checks folder holding
that topic's check files only (with every other file of CHECKS, so the
course's conftest, concepts and messages register), and one folder per
variant, a copy of the solutions with the topic's module replaced (by the
solution itself, the stub, a planted mistake or a mutant)."""

from __future__ import annotations

import ast
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..boundary.layout import TOOL_FOLDERS, is_check_file
from ..i18n import msg
from .planted import AuditUsageError


@dataclass(frozen=True)
class Variant:
    """One module graded in place of the topic's solution."""

    kind: str  # "solution", "stub", "mistake" or "mutant"
    topic: str
    key: str  # the mistake's name or the mutant's id ("" for solution and stub)
    source: str = field(repr=False)


def solution_modules(solutions: Path) -> dict[str, str]:
    """Module name -> source of every solution module; one that does not
    parse stops the audit (the baseline would mean nothing)."""
    modules = {}
    for path in sorted(solutions.glob("*.py")):
        if path.name.startswith("_") or is_check_file(path.name):
            continue
        try:
            source = path.read_text(encoding="utf-8")
            ast.parse(source, filename=str(path))
        except (OSError, UnicodeDecodeError) as exc:
            raise AuditUsageError(msg("audit.solution_unreadable", path=str(path), error=str(exc))) from None
        except (SyntaxError, ValueError) as exc:
            raise AuditUsageError(
                msg(
                    "audit.solution_syntax",
                    path=str(path),
                    line=getattr(exc, "lineno", "?"),
                    error=getattr(exc, "msg", str(exc)),
                )
            ) from None
        modules[path.stem] = source
    if not modules:
        raise AuditUsageError(msg("audit.no_solutions", path=str(solutions)))
    return modules


def check_files_of(checks: Path, topic: str) -> list[Path]:
    """The check files whose source calls ``submission("<topic>"...)``."""
    call = re.compile(r"submission\(\s*['\"]" + re.escape(topic) + r"['\"]")
    found = []
    for path in sorted(checks.rglob("*.py")):
        if is_check_file(path.name) and not TOOL_FOLDERS.intersection(path.relative_to(checks).parts):
            try:
                if call.search(path.read_text(encoding="utf-8", errors="replace")):
                    found.append(path)
            except OSError:
                continue
    return found


def build_checks(checks: Path, chosen: list[Path], dest: Path) -> Path:
    """``dest``: CHECKS without caches and without the check files not in ``chosen``."""
    keep = {p.resolve() for p in chosen}

    def ignored(folder: str, names: list[str]) -> set[str]:
        return {
            n for n in names if n in TOOL_FOLDERS or (is_check_file(n) and (Path(folder) / n).resolve() not in keep)
        }

    shutil.copytree(checks, dest, ignore=ignored, symlinks=True)
    return dest


def build_variant(solutions: Path, variant: Variant, dest: Path) -> Path:
    """A copy of the solutions with the topic's module replaced by the variant's."""
    shutil.copytree(
        solutions, dest, ignore=shutil.ignore_patterns(*TOOL_FOLDERS, "test_*.py", "*_test.py"), symlinks=True
    )
    (dest / f"{variant.topic}.py").write_text(variant.source, encoding="utf-8")
    return dest


def stub_source(checks: Path, topic: str) -> str | None:
    """The untouched stub of ``topic`` in CHECKS (exercises/<topic>.py), if any."""
    path = checks / f"{topic}.py"
    try:
        return path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError):
        return None

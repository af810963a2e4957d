"""Plain folders or zips, one per student: ``alice/`` or ``alice.zip`` (or
``alice/submission.zip``). A folder of folders only is graded where it is;
where a zip is among them, every student is laid out in OUT/.intake (each
folder named by the grader: ``alice.zip`` and ``alice/`` get two)."""

from __future__ import annotations

from pathlib import Path

from . import Handed, lay_out
from .export import Export


def _zip(name: str) -> bool:
    return name.lower().endswith(".zip")


def _only_zips(export: Export, name: str) -> bool:
    inside = [(n, k) for n, k in export.children(name).items() if not n.startswith(".")]
    return bool(inside) and all(kind == "file" and _zip(n) for n, kind in inside)


class Folders:
    name = "folders"

    def claim(self, export: Export, name: str, kind: str) -> int | None:
        # the surest claim of none: any export's entries are folders or zips too
        return len(name) + 1 if kind == "dir" or (kind == "file" and _zip(name)) else None

    def collect(self, export: Export, names: dict[str, str], into: Path) -> tuple[Path, list[Handed]]:
        root = export.root
        in_place = root is not None and not any(
            (kind == "file" and _zip(name)) or _only_zips(export, name) for name, kind in names.items()
        )
        if root is not None and in_place:
            return root, []  # one folder per student already: graded where it is
        handed = []
        taken: set[str] = set()
        for name, kind in names.items():
            student = Handed(name=name[:-4] if kind == "file" else name)
            lay_out(export, name, kind, student, into, taken)
            handed.append(student)
        return into, handed


FORMAT = Folders()

"""GitHub Classroom's clone of every student repository (``gh classroom
clone student-repos``, or the assistant's download): one git repository
per student, each folder named ``{assignment}-{GitHub username}``. A
folder is graded where it is (a zip of the clone is laid out in
OUT/.intake); the student is named by their GitHub username."""

from __future__ import annotations

import os
from pathlib import Path

from . import Handed, lay_out
from .export import Export


def _prefix(names: list[str]) -> str:
    common = os.path.commonprefix(names) if len(names) > 1 else ""
    return common[: common.rfind("-") + 1]


class GitHubClassroom:
    name = "github-classroom"

    def claim(self, export: Export, name: str, kind: str) -> int | None:
        return len(name) if kind == "dir" and export.has(name, ".git") else None

    def collect(self, export: Export, names: dict[str, str], into: Path) -> tuple[Path, list[Handed]]:
        prefix = _prefix(list(names))
        handed = [Handed(name=name[len(prefix) :] or name, folder=name) for name in names]
        if export.root is not None:
            return export.root, handed
        taken: set[str] = set()
        for name, student in zip(names, handed):
            student.folder = ""
            lay_out(export, name, "dir", student, into, taken)
        return into, handed


FORMAT = GitHubClassroom()

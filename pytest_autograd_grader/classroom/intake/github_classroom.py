"""GitHub Classroom's clone of every student repository (``gh classroom
clone student-repos``, or the assistant's download): one git repository
per student, each folder named ``{assignment}-{GitHub username}``. Graded
where they are; the student is named by their GitHub username."""

from __future__ import annotations

import os
from pathlib import Path

from . import Handed


def _repositories(root: Path) -> list[Path]:
    return [p for p in sorted(root.iterdir()) if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")]


def _prefix(names: list[str]) -> str:
    common = os.path.commonprefix(names)
    return common[:common.rfind("-") + 1]


class GitHubClassroom:
    name = "github-classroom"

    def detect(self, root: Path) -> bool:
        repositories = _repositories(root)
        return len(repositories) >= 2 and all((r / ".git").exists() for r in repositories) and \
            bool(_prefix([r.name for r in repositories]))

    def collect(self, root: Path, into: Path) -> tuple[Path, list[Handed]]:
        repositories = _repositories(root)
        prefix = _prefix([r.name for r in repositories])
        return root, [Handed(name=r.name[len(prefix):] or r.name, folder=r.name) for r in repositories]


    def skipped(self, root: Path) -> list[tuple[str, str]]:
        return []  # the export's own files: nothing a student handed in is left out


FORMAT = GitHubClassroom()

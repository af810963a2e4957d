"""Canvas's "Download Submissions" zip: loose files, one per student and
upload, each named ``{sortable name}_{user id}_{attachment id}_{file name}``
with ``late`` after the name for a late upload (``garcíajosé_late_5678_9012_leaf.py``).
The sortable name is the student's "Last, First" lowercased with spaces and
punctuation removed (letters of any script kept); the user id is Canvas's
own, the ID column of its gradebook import."""

from __future__ import annotations

import re
from pathlib import Path

from . import Handed, place

NAME = re.compile(r"(?P<name>.+?)(?P<late>_late)?_(?P<user>\d+)_(?P<attachment>\d+)_(?P<file>.+)", re.IGNORECASE)


class Canvas:
    name = "canvas"

    def detect(self, root: Path) -> bool:
        files = [p for p in root.iterdir() if p.is_file() and not p.name.startswith(".")]
        named = [p for p in files if NAME.fullmatch(p.name)]
        return bool(named) and len(named) * 2 >= len(files)

    def collect(self, root: Path, into: Path) -> tuple[Path, list[Handed]]:
        uploads: dict[str, list[tuple[Path, str]]] = {}
        handed: dict[str, Handed] = {}
        for path in sorted(root.iterdir()):
            found = NAME.fullmatch(path.name) if path.is_file() else None
            if found is None:
                continue
            user = found.group("user")
            student = handed.setdefault(user, Handed(name=found.group("name"), lms_id=user))
            student.late = student.late or bool(found.group("late"))
            uploads.setdefault(user, []).append((path, found.group("file")))
        folders: set[str] = set()
        for user, student in handed.items():
            # two students of one sortable name keep folders of their own
            student.folder = student.name if student.name not in folders else f"{student.name}_{user}"
            folders.add(student.folder)
            place(uploads[user], into / student.folder, student)
        return into, list(handed.values())


    def skipped(self, root: Path) -> list[tuple[str, str]]:
        return []  # the export's own files: nothing a student handed in is left out


FORMAT = Canvas()

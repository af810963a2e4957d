"""Moodle's "Download all submissions" of an assignment: a folder per
student and submission plugin, ``{full name}_{participant id}_assignsubmission_file``
(with a trailing ``_`` before Moodle 4), holding the uploaded files; or,
with "Download submissions in folders" off, loose files named
``{full name}_{participant id}_assignsubmission_file_{file name}``. The
participant id is the assignment's own (unique per student, anonymous
under blind marking); only the file plugin's uploads are code."""

from __future__ import annotations

import re
from pathlib import Path

from . import Handed, place

FOLDER = re.compile(r"(?P<name>.+)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?")
FILE = re.compile(r"(?P<name>.+)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.+)")


class Moodle:
    name = "moodle"

    def detect(self, root: Path) -> bool:
        return any((FOLDER if p.is_dir() else FILE).fullmatch(p.name) for p in root.iterdir())

    def collect(self, root: Path, into: Path) -> tuple[Path, list[Handed]]:
        handed: dict[str, Handed] = {}
        uploads: dict[str, list[tuple[Path, str]]] = {}
        for path in sorted(root.iterdir()):
            found = (FOLDER if path.is_dir() else FILE).fullmatch(path.name)
            if found is None:
                continue
            student = handed.setdefault(found.group("id"), Handed(name=found.group("name"), lms_id=found.group("id")))
            files = uploads.setdefault(found.group("id"), [])
            if found.group("plugin") != "file":
                continue  # online text, comments: not code
            if path.is_dir():
                files += [(f, str(f.relative_to(path))) for f in sorted(path.rglob("*")) if f.is_file()
                          and not f.is_symlink()]
            else:
                files.append((path, found.group("file")))
        for key, student in handed.items():
            student.folder = f"{student.name}_{key}"  # two students of one name keep folders of their own
            place(uploads[key], into / student.folder, student)
        return into, list(handed.values())


    def skipped(self, root: Path) -> list[tuple[str, str]]:
        return []  # the export's own files: nothing a student handed in is left out


FORMAT = Moodle()

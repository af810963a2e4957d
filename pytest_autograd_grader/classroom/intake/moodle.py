"""Moodle's "Download all submissions" of an assignment: a folder per
student and submission plugin, ``{full name}_{participant id}_assignsubmission_file``
(with a trailing ``_`` before Moodle 4), holding the uploaded files; or,
with "Download submissions in folders" off, loose files named
``{full name}_{participant id}_assignsubmission_file_{file name}``. The
participant id is the assignment's own (unique per student, anonymous
under blind marking); only the file plugin's uploads are code. A loose
file's own name may repeat the pattern (``Bob Smith_222_assignsubmission_file_leaf.py``
uploaded by Alice): the participant is the FIRST match, and folders are
keyed by the participant id, never by a name."""

from __future__ import annotations

import re
from pathlib import Path

from ..students import safe_folder
from . import Handed, place
from .export import Entry, Export

FOLDER = re.compile(r"(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?", re.DOTALL)
FILE = re.compile(r"(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.+)", re.DOTALL)


def _match(name: str, kind: str) -> re.Match | None:
    """A folder of Moodle's, or a loose file (a folder too where the file's name held a "/")."""
    return (FOLDER.fullmatch(name) if kind == "dir" else None) or FILE.fullmatch(name)


class Moodle:
    name = "moodle"

    def claim(self, export: Export, name: str, kind: str) -> int | None:
        found = _match(name, kind)
        return found.end("plugin") if found else None

    def collect(self, export: Export, names: dict[str, str], into: Path) -> tuple[Path, list[Handed]]:
        handed: dict[str, Handed] = {}
        uploads: dict[str, list[tuple[Entry, str]]] = {}
        for name, kind in names.items():
            found = _match(name, kind)
            assert found is not None  # claim() took only the names that match
            key = found.group("id")
            handed.setdefault(key, Handed(name=found.group("name"), lms_id=key, submission_id=key))
            files = uploads.setdefault(key, [])
            if found.group("plugin") != "file":
                continue  # online text, comments: not code
            if kind == "dir":
                inside = found.groupdict().get("file")  # a loose file's name that held a "/"
                files += [(e, "/".join((inside, *e.parts) if inside else e.parts)) for e in export.under(name)]
            else:
                files.append((export.entry(name), found.group("file")))
        taken: set[str] = set()
        for key, student in handed.items():
            student.folder = safe_folder(f"{student.name}_{key}", taken)  # two students of one name: two folders
            place(export, uploads[key], into / student.folder, student)
        return into, list(handed.values())


FORMAT = Moodle()

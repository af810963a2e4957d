"""Canvas's "Download Submissions" zip: loose files, one per student and
upload, each named ``{sortable name}_{user id}_{attachment id}_{file name}``
with ``late`` after the name for a late upload (``garcíajosé_late_5678_9012_leaf.py``).
The sortable name is the student's "Last, First" lowercased with spaces and
punctuation removed (letters of any script kept); the user id is Canvas's
own, the ID column of its gradebook import. The file name is the
student's: the ids are the FIRST ``_{digits}_{digits}_`` of the name
(``alice_111_444_bob_222_333_leaf.py`` is alice's ``bob_222_333_leaf.py``),
and a student's folder is keyed by the user id, never by a name."""

from __future__ import annotations

import re
from pathlib import Path

from ..students import safe_folder
from . import Handed, place
from .export import Entry, Export

NAME = re.compile(
    r"(?P<name>.+?)(?P<late>_late)?_(?P<user>\d+)_(?P<attachment>\d+)_(?P<file>.+)", re.IGNORECASE | re.DOTALL
)


class Canvas:
    name = "canvas"

    def claim(self, export: Export, name: str, kind: str) -> int | None:
        # a folder too: a file name holding a "/" would otherwise be no format's but plain folders'
        found = NAME.fullmatch(name)
        return found.end("attachment") if found else None

    def collect(self, export: Export, names: dict[str, str], into: Path) -> tuple[Path, list[Handed]]:
        uploads: dict[str, list[tuple[str, Entry, str]]] = {}
        handed: dict[str, Handed] = {}
        for name in names:
            found = NAME.fullmatch(name)
            assert found is not None  # claim() took only the names that match
            user = found.group("user")
            student = handed.setdefault(user, Handed(name=found.group("name"), lms_id=user))
            student.late = student.late or bool(found.group("late"))
            files = uploads.setdefault(user, [])
            if names[name] == "dir":  # the upload's name held a "/": its files under that name
                files += [
                    (found.group("attachment"), e, "/".join((found.group("file"), *e.parts)))
                    for e in export.under(name)
                ]
            else:
                files.append((found.group("attachment"), export.entry(name), found.group("file")))
        taken: set[str] = set()
        for user, student in handed.items():
            # the newest upload first: of two of one name, it is the one graded
            files = sorted(uploads[user], key=lambda u: (len(u[0]), u[0]), reverse=True)
            student.submission_id = files[0][0]
            # two students of one sortable name (or one up to case and accents) keep folders of their own
            student.folder = safe_folder(student.name, taken, qualifier=user)
            place(export, [(entry, file) for _, entry, file in files], into / student.folder, student)
        return into, list(handed.values())


FORMAT = Canvas()

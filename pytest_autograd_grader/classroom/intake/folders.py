"""Plain folders or zips, one per student: ``alice/`` or ``alice.zip`` (or
``alice/submission.zip``). A folder of folders only is graded where it is;
where a zip is among them, every student is laid out in OUT/.intake."""

from __future__ import annotations

from pathlib import Path

from ...sandbox.staging import SKIP_DIRS, StageError, stage
from ...i18n import msg
from . import Handed, place
from .unpack import UnpackError, unpack


def _entries(root: Path) -> list[Path]:
    return [p for p in sorted(root.iterdir(), key=lambda p: p.name)
            if not p.name.startswith(".") and p.name not in SKIP_DIRS and not p.is_symlink()]


def _only_zips(folder: Path) -> bool:
    inside = [p for p in folder.iterdir() if not p.name.startswith(".")]
    return bool(inside) and all(p.is_file() and p.suffix.lower() == ".zip" for p in inside)


class Folders:
    name = "folders"

    def detect(self, root: Path) -> bool:
        return True

    def collect(self, root: Path, into: Path) -> tuple[Path, list[Handed]]:
        entries = _entries(root)
        zips = [p for p in entries if p.is_file() and p.suffix.lower() == ".zip"]
        zipped = [p for p in entries if p.is_dir() and _only_zips(p)]
        if not zips and not zipped:
            return root, []  # one folder per student already: graded where it is
        handed = []
        into.mkdir(parents=True, exist_ok=True)
        for entry in entries:
            if entry.is_file() and entry.suffix.lower() != ".zip":
                continue  # the class runner names what it does not grade
            student = Handed(name=entry.stem if entry.is_file() else entry.name)
            if entry.is_file():  # alice.zip: its contents are alice's folder
                try:
                    unpack(entry, into / student.name)
                except UnpackError as exc:
                    (into / student.name).mkdir(exist_ok=True)
                    student.problems.append(msg("intake.student_zip", name=entry.name, reason=str(exc)))
            elif entry in zipped:
                place([(z, z.name) for z in sorted(entry.iterdir()) if z.is_file()], into / student.name, student)
            else:
                try:
                    stage(entry, into / student.name)
                except StageError as exc:
                    student.problems.append(str(exc))
            handed.append(student)
        return into, handed

    def skipped(self, root: Path) -> list[tuple[str, str]]:
        # a link could lead the grader to another student's work or the checks
        return [(p.name, "link") for p in sorted(root.iterdir()) if p.is_symlink()] + \
            [(p.name, "file") for p in _entries(root) if p.is_file() and p.suffix.lower() != ".zip"]


FORMAT = Folders()

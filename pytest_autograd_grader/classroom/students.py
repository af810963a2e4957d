"""The submissions of a class: one folder per student, its id, where its
modules are, and the seed it is graded with."""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ..boundary.layout import find_modules, has_modules
from .shards import parse as parse_shard

# files of the checks directory that decide a grade; caches are not part of it
_SKIP = {"__pycache__", ".pytest_cache", ".git", ".hypothesis"}
# names the run itself writes into OUT, which a student id must not take
RESERVED = {"class-run", "gradebook", "canvas", "report"}
_SAFE = re.compile(r"[^\w.@+-]")  # \w: letters and digits of any script, so names keep their accents


@dataclass(frozen=True)
class Student:
    id: str          # safe as a file name: OUT/<id>.json
    folder: str      # the folder's own name, as it was
    modules: Path    # where the student's modules are
    has_modules: bool  # any .py file there (else the submission is "missing")
    # what the LMS's export said of the student (intake/): name, late, lms, lms_id; goes into the report
    handed: dict = field(default_factory=dict, hash=False, compare=False)


def safe_id(name: str, taken: set[str]) -> str:
    """The folder name where it is a safe file name, else with the unsafe
    characters replaced; never one of the run's own file names, never twice."""
    base = _SAFE.sub("_", unicodedata.normalize("NFC", name)).strip(".") or "student"
    base = base[:100]
    candidate, number = base, 2
    while candidate.lower() in taken or candidate.lower() in RESERVED:
        candidate, number = f"{base}-{number}", number + 1
    taken.add(candidate.lower())
    return candidate


def find_students(submissions: Path, skipped: list[tuple[str, str]] | None = None,
                  handed: dict[str, dict] | None = None) -> list[Student]:
    """Every folder directly in ``submissions`` is a student (hidden folders
    and caches aside), sorted by name. What is not graded although it may be
    a student's (a file, a zip, a symbolic link) is added to ``skipped`` as
    (name, why) for the instructor to see. ``handed``: what an LMS export
    said of each folder (``intake.gather``), kept with the student."""
    taken: set[str] = set()
    students = []
    for folder in sorted(submissions.iterdir(), key=lambda p: p.name):
        if folder.name.startswith(".") or folder.name in _SKIP:
            continue
        if folder.is_symlink():
            # a link could lead the grader to another student's work or the checks
            if skipped is not None:
                skipped.append((folder.name, "link"))
            continue
        if not folder.is_dir():
            if skipped is not None:
                skipped.append((folder.name, "file"))
            continue
        modules = find_modules(folder)
        told = (handed or {}).get(folder.name)
        extra = {"name": told.name, "late": told.late, "lms": told.lms, "lms_id": told.lms_id} if told else {}
        students.append(Student(safe_id(folder.name, taken), folder.name, modules, has_modules(modules), extra))
    return students


def student_seed(salt: str, student: str) -> int:
    """A seed of its own per student, reproducible from the salt."""
    return int.from_bytes(hashlib.sha256(f"{salt}\0{student}".encode()).digest()[:4], "big")


def checks_sha256(checks: Path) -> str:
    """One hash of every file under the checks directory (names and
    contents), so a report says which checks graded it."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(checks):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP)
        for name in sorted(files):
            if name.endswith(".pyc"):
                continue
            path = Path(root) / name
            digest.update(path.relative_to(checks).as_posix().encode() + b"\0")
            try:
                digest.update(path.read_bytes())
            except OSError:
                digest.update(b"<unreadable>")
            digest.update(b"\0")
    return digest.hexdigest()


def class_sha256(students: list[Student]) -> str:
    """One hash of who is in the class (the student ids, in order)."""
    return hashlib.sha256("\0".join(s.id for s in students).encode()).hexdigest()


def shard(students: list[Student], spec: str | None) -> list[Student]:
    """``K/N``: the K-th of N interleaved parts (1-based)."""
    if not spec:
        return students
    k, n = parse_shard(spec)
    return [s for i, s in enumerate(students) if i % n == k - 1]

"""The submissions of a class: one folder per student, its id, where its
modules are, and the seed it is graded with."""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..boundary.layout import TOOL_FOLDERS, find_modules, has_modules
from ..i18n import msg
from .shards import parse as parse_shard

# names the run itself writes into OUT, which a student id must not take
RESERVED = {"class-run", "gradebook", "canvas", "report"}
# names Windows will not create a file of (a class's OUT may be copied there)
_DEVICES = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
_SAFE = re.compile(r"[^\w.@+-]")  # \w: letters and digits of any script, so names keep their accents
# a folder the grader makes keeps the name but for separators, controls and what Windows refuses in a name
_SAFE_FOLDER = re.compile(r'[\x00-\x1f\x7f-\x9f<>:"/\\|?*\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]')
MAX_NAME = 100  # bytes of UTF-8: OUT/<id>.json and the sandbox's copy stay far below NAME_MAX


@dataclass(frozen=True)
class Student:
    id: str  # safe as a file name: OUT/<id>.json
    folder: str  # the folder's own name, as it was
    modules: Path  # where the student's modules are
    has_modules: bool  # any .py file there (else the submission is "missing")
    # what the LMS's export said of the student (intake/): name, late, lms, lms_id; goes into the report
    handed: dict = field(default_factory=dict, hash=False, compare=False)
    # graded as with -x, stopping at the first failing check (the audit's
    # mutants, where the only question is whether any check fails)
    stop_first: bool = False


def safe_id(name: str, taken: set[str]) -> str:
    """The folder name where it is a safe file name, else with the unsafe
    characters replaced; never one of the run's own file names, never twice."""
    return _unique(_clean(name, _SAFE), taken)


def safe_folder(name: str, taken: set[str], qualifier: str = "") -> str:
    """A student's folder the grader makes from a name an export gives
    (data, never a path): no separator, at most ``MAX_NAME`` bytes, in NFC,
    no device name, and unique in ``taken`` whatever the case or Unicode
    form (so that a case-insensitive filesystem keeps two); where the name
    is taken, ``{name}_{qualifier}`` (the LMS's id) first."""
    base = _clean(name, _SAFE_FOLDER)
    if qualifier and _key(base) in taken:
        base = _clean(f"{name}_{qualifier}", _SAFE_FOLDER)
    return _unique(base, taken)


def _clean(name: str, unsafe: re.Pattern) -> str:
    base = unsafe.sub("_", unicodedata.normalize("NFC", name)).strip(". ")
    base = base.encode("utf-8")[:MAX_NAME].decode("utf-8", "ignore").rstrip(". ") or "student"
    return f"_{base}" if base.split(".")[0].casefold() in _DEVICES else base


def _key(name: str) -> str:
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


def _unique(base: str, taken: set[str]) -> str:
    candidate, number = base, 2
    while _key(candidate) in taken or _key(candidate) in RESERVED:
        candidate, number = f"{base}-{number}", number + 1
    taken.add(_key(candidate))
    return candidate


class Told(Protocol):
    """What an LMS export said of a student's folder (``intake.Handed``;
    named here by its fields, as intake imports this module)."""

    name: str
    late: bool
    lms: str
    lms_id: str
    submission_id: str
    problems: list[str]


def find_students(
    submissions: Path, skipped: list[tuple[str, str]] | None = None, handed: Mapping[str, Told] | None = None
) -> list[Student]:
    """Every folder directly in ``submissions`` is a student (hidden folders
    and caches aside), sorted by name. What is not graded although it may be
    a student's (a file, a zip, a symbolic link) is added to ``skipped`` as
    (name, why) for the instructor to see. ``handed``: what an LMS export
    said of each folder (``intake.gather``), kept with the student."""
    taken: set[str] = set()
    students = []
    # a filesystem may hand a folder's name back in another Unicode form (macOS: NFD) than it was made in
    handed = {unicodedata.normalize("NFC", k): v for k, v in (handed or {}).items()}
    for folder in sorted(submissions.iterdir(), key=lambda p: p.name):
        # a folder called venv or node_modules here may be a student's login: it is graded
        if folder.name.startswith(".") or folder.name == "__pycache__":
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
        found = has_modules(modules)
        told = handed.get(folder.name) or handed.get(unicodedata.normalize("NFC", folder.name))
        extra = (
            {
                "name": told.name,
                "late": told.late,
                "lms": told.lms,
                "lms_id": told.lms_id,
                "submission_id": told.submission_id,
            }
            if told
            else {}
        )
        problems = [*(told.problems if told else []), *([] if found else [_what_was_there(folder)])]
        if problems:
            extra["intake_problems"] = problems  # why a student is missing, or what of the upload is not graded
        students.append(Student(safe_id(folder.name, taken), folder.name, modules, found, extra))
    return students


def _what_was_there(folder: Path, most: int = 10) -> str:
    """Why no module was found: the files the upload held (the first few)."""
    held: list[str] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in TOOL_FOLDERS)
        held += [(Path(root) / name).relative_to(folder).as_posix() for name in sorted(files)]
        if len(held) > most:
            break
    if not held:
        return msg("intake.held_nothing")
    shown_files = ", ".join(held[:most]) + (", ..." if len(held) > most else "")
    return msg("intake.no_modules", files=shown_files)


def student_seed(salt: str, student: str) -> int:
    """A seed of its own per student, reproducible from the salt."""
    return int.from_bytes(hashlib.sha256(f"{salt}\0{student}".encode()).digest()[:4], "big")


def checks_sha256(checks: Path) -> str:
    """One hash of every file under the checks directory (names and
    contents), so a report says which checks graded it."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(checks):
        dirs[:] = sorted(d for d in dirs if d not in TOOL_FOLDERS)
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

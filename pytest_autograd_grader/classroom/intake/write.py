"""The only way the intake writes a student's file: under the student's
own folder, at a path made of the upload's names taken as data (no part
that leaves the folder, no link followed, nothing overwritten), private to
the grader (folders 0700, files 0600: students graded under ``user``
isolation run as other uids), within one budget per student that every
nesting level and every upload of that student shares."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ...i18n import msg
from ...sandbox.staging import MAX_BYTES, MAX_FILES

NESTED = 2  # zips inside a student's upload: unpacked this many levels deep
MAX_PARTS = 32  # folders deep inside a student's folder; deeper is no exercise layout
MAX_PATH = 1024  # bytes of a path inside a student's folder: room left for the sandbox's own prefix
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class UnpackError(Exception):
    """An upload cannot be laid out at all; the message says why."""


class OverBudget(UnpackError):
    """A student's (or the export's) budget is spent: the upload is refused."""


@dataclass
class Budget:
    """Files and bytes one student may hand in, every nesting level and
    upload counted together; ``parent``: the whole export's, charged too."""

    files: int = MAX_FILES
    size: int = MAX_BYTES
    depth: int = NESTED
    parent: Budget | None = None
    used_files: int = 0
    used_size: int = 0

    def charge(self, files: int = 0, size: int = 0) -> None:
        self.used_files += files
        self.used_size += size
        if self.used_files > self.files or self.used_size > self.size:
            raise OverBudget(msg("intake.too_large", files=self.files, mb=self.size >> 20))
        if self.parent is not None:
            self.parent.charge(files, size)


def clean_parts(name: str) -> tuple[str, ...] | None:
    """The path parts of ``name`` (an upload's own name: ``/`` or ``\\``
    separated), or None where it would leave its folder, hold a NUL, or go
    deeper or longer than any exercise layout."""
    if "\0" in name:
        return None
    raw = name.replace("\\", "/")
    parts = tuple(p for p in raw.split("/") if p not in ("", "."))
    if raw.startswith("/") or ".." in parts or not parts or len(parts) > MAX_PARTS:
        return None
    if len("/".join(parts).encode("utf-8", "surrogateescape")) > MAX_PATH:
        return None
    return parts


def private_dir(path: Path) -> None:
    """``path`` made (mode 0700) or already a real folder, never a link."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise NotADirectoryError(20, os.strerror(20), str(path)) from None


def folder_in(folder: Path, parts: tuple[str, ...], budget: Budget) -> Path:
    """The folder ``parts`` names under ``folder``, made as needed (each new
    folder charged as a file: a zip of empty folders is work too)."""
    path = folder
    for part in parts:
        path = path / part
        if not os.path.lexists(path):
            budget.charge(files=1)
        private_dir(path)
    _check_inside(folder, path)
    return path


def write_new(folder: Path, parts: tuple[str, ...], source: IO[bytes], budget: Budget) -> Path:
    """Copy ``source`` to ``folder/parts`` (a new file, never through a
    link), charging ``budget`` as it is written: declared sizes can lie."""
    target = folder_in(folder, parts[:-1], budget) / parts[-1]
    budget.charge(files=1)
    fd = os.open(target, _FLAGS, 0o600)
    try:
        with os.fdopen(fd, "wb") as sink:
            while chunk := source.read(1 << 20):
                budget.charge(size=len(chunk))
                sink.write(chunk)
    except BaseException:
        target.unlink(missing_ok=True)  # half a file is no upload; the budget stays spent
        raise
    return target


def _check_inside(folder: Path, path: Path) -> None:
    # belt and braces: a name that got past clean_parts still cannot leave the folder
    real, base = os.path.realpath(path), os.path.realpath(folder)
    if real != base and not real.startswith(base + os.sep):
        raise PermissionError(1, "outside the student's folder", str(path))


def reason(exc: OSError) -> str:
    """What an OSError says, without the grader's paths."""
    return exc.strerror or type(exc).__name__

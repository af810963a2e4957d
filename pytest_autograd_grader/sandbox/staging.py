"""Copies of a submission made for the sandbox.

Workers never see the student's directory itself: the grader copies it into
a directory of the sandbox's own (owned by the worker's uid where there is
one), so nothing else near the submission (the checks, reports, other
students) has to be visible, and nothing the worker does changes the
original. Symlinks are not followed: a link to a hidden check would
otherwise copy the check into the student's reach.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..boundary.layout import TOOL_FOLDERS
from ..i18n import msg

MAX_BYTES = 64 << 20
MAX_FILES = 10_000


class StageError(Exception):
    """The submission cannot be copied; the message is for the student."""


def _copy_file(source: Path, dest: Path, owner: int | None) -> int:
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 0
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        size = 0
        try:
            while chunk := os.read(fd, 1 << 20):
                os.write(out, chunk)
                size += len(chunk)
            if owner is not None:
                os.fchown(out, owner, owner)
        finally:
            os.close(out)
        return size
    finally:
        os.close(fd)


def stage(source: str | Path, dest: str | Path, owner: int | None = None) -> None:
    """Copy the regular files and directories under ``source`` to ``dest``
    (created here, mode 0700, owned by ``owner`` when given)."""
    source, dest = Path(source), Path(dest)
    total = files = 0
    for root, dirs, names in os.walk(source, followlinks=False):
        relative = Path(root).relative_to(source)
        target = dest / relative
        try:
            os.mkdir(target, 0o700)
        except OSError:
            if target == dest:
                raise
            # a path the copy's longer prefix makes too long: what is under it
            # is missing for the student's code, as an unreadable file is
            dirs[:] = []
            continue
        if owner is not None:
            os.chown(target, owner, owner)
        dirs[:] = sorted(d for d in dirs if d not in TOOL_FOLDERS and not os.path.islink(os.path.join(root, d)))
        for name in sorted(names):
            path = Path(root) / name
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            files += 1
            if files > MAX_FILES or total + info.st_size > MAX_BYTES:
                raise StageError(msg("student.submission_too_large", files=MAX_FILES, mb=MAX_BYTES >> 20))
            try:
                total += _copy_file(path, target / name, owner)
            except OSError:
                pass  # unreadable or vanished: the student's code will find it missing

"""Zips unpacked the way the sandbox stages a submission: a bounded
number of files and bytes (counted as they are written, not as the zip
declares them), no name that leaves the folder, no links, and zips inside
a student's files unpacked in turn, within the same bounds."""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path, PurePosixPath

from ...i18n import msg
from ...sandbox.staging import MAX_BYTES, MAX_FILES

BULK = 64          # a class's export may hold this many submissions' worth
NESTED = 2         # zips inside a zip inside the export: unpacked this deep


class UnpackError(Exception):
    """The zip cannot be unpacked; the message says why."""


def unpack(archive: Path, into: Path, bulk: bool = False, depth: int = 0) -> None:
    """Unpack ``archive`` into ``into`` (created). ``bulk``: a whole class's
    export, allowed ``BULK`` times a submission's bounds."""
    limit_files, limit_bytes = (MAX_FILES * BULK, MAX_BYTES * BULK) if bulk else (MAX_FILES, MAX_BYTES)
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = zipped.infolist()
            if len(members) > limit_files:
                raise UnpackError(msg("intake.too_large", files=limit_files, mb=limit_bytes >> 20))
            into.mkdir(parents=True, exist_ok=True)
            written = 0
            for member in members:
                name = _safe_name(member.filename)
                if name is None or stat.S_ISLNK(member.external_attr >> 16):
                    continue  # a path leaving the folder, or a link: never written
                target = into.joinpath(*name.parts)
                if member.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                written += _copy(zipped, member, target, limit_bytes - written)
                if written > limit_bytes:
                    raise UnpackError(msg("intake.too_large", files=limit_files, mb=limit_bytes >> 20))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, ValueError) as exc:
        raise UnpackError(msg("intake.bad_zip", reason=str(exc) or type(exc).__name__)) from None
    except OSError as exc:
        raise UnpackError(msg("intake.bad_zip", reason=exc.strerror or str(exc))) from None
    if not bulk and depth < NESTED:
        for inner in sorted(into.rglob("*.zip")):
            if inner.is_file() and not inner.is_symlink():
                unpack(inner, inner.with_suffix(""), depth=depth + 1)
                inner.unlink()


def _safe_name(name: str) -> PurePosixPath | None:
    path = PurePosixPath(name.replace("\\", "/"))
    parts = [p for p in path.parts if p not in ("", ".")]
    if path.is_absolute() or ".." in parts or not parts or parts[0].startswith("__MACOSX"):
        return None
    return PurePosixPath(*parts)


def _copy(zipped: zipfile.ZipFile, member: zipfile.ZipInfo, target: Path, room: int) -> int:
    """Bytes written, stopping one past ``room``: a zip's declared sizes can lie."""
    written = 0
    with zipped.open(member) as source:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as sink:
            while chunk := source.read(1 << 20):
                written += len(chunk)
                if written > room:
                    return written
                sink.write(chunk)
    return written

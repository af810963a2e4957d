"""Report files written safely: atomically, never through a link, with the
user's umask; a failure is kept in words for the terminal summary."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

import pytest

from ..i18n import msg

# option -> why its last write failed; shown at the end of the terminal summary
REPORT_FAILURES = pytest.StashKey[dict[str, str]]()


class ReportWriteError(Exception):
    """A report file could not be written; the message says why, in words."""


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` (see ``write_text_atomic``)."""
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as UTF-8 (see ``write_bytes_atomic``)."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename, so
    a reader (or a grader killed half way) never sees half a file.

    Everything happens relative to one open descriptor of the directory, so
    swapping the directory for a symlink mid-write cannot redirect it; a
    symlink at ``path`` is replaced, never followed, and a directory there is
    left alone. The file gets mode 0o666 less the umask, like any other file
    the user creates (TAs read these reports). Raises ``ReportWriteError``."""
    path = Path(path)
    directory = path.parent
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise ReportWriteError(_reason(exc, directory)) from None
    try:
        _write_in(dir_fd, path.name, data)
    except OSError as exc:
        raise ReportWriteError(_reason(exc, directory)) from None
    finally:
        os.close(dir_fd)


def _write_in(dir_fd: int, name: str, data: bytes) -> None:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    tmp = f".{name}.{secrets.token_hex(8)}.tmp"  # O_EXCL: never an existing file or link
    fd = os.open(tmp, flags, 0o666, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        # rename(2) replaces a symlink rather than following it, and refuses
        # (EISDIR) to replace a directory that appeared since the check above.
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def _reason(exc: OSError, directory: Path) -> str:
    if isinstance(exc, IsADirectoryError):
        return msg("report.reason.is_dir")
    if isinstance(exc, FileNotFoundError):
        return msg("report.reason.no_dir", directory=directory)
    if isinstance(exc, NotADirectoryError):
        return msg("report.reason.not_dir", directory=directory)
    if isinstance(exc, PermissionError):
        return msg("report.reason.denied")
    return exc.strerror or str(exc)

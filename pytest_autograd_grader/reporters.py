"""What a graded session writes: the terminal table, the JSON report and
Gradescope's results.json."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from .messages import msg
from .scoring import Gradebook

BAR_WIDTH = 20
# option -> why its last write failed; shown at the end of the terminal summary
REPORT_FAILURES = pytest.StashKey[dict[str, str]]()


class ReportWriteError(Exception):
    """A report file could not be written; the message says why, in words."""


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file and a
    rename, so a reader (or a grader killed half way) never sees half a file.

    Everything happens relative to one open descriptor of the directory, so
    swapping the directory for a symlink mid-write cannot redirect it; a
    symlink at ``path`` is replaced, never followed, and a directory there is
    left alone. The file gets mode 0o666 less the umask, like any other file
    the user creates (TAs read these reports). Raises ``ReportWriteError``."""
    path = Path(path)
    text = json.dumps(data, indent=2) + "\n"
    directory = path.parent
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise ReportWriteError(_reason(exc, directory)) from None
    try:
        _write_in(dir_fd, path.name, text)
    except OSError as exc:
        raise ReportWriteError(_reason(exc, directory)) from None
    finally:
        os.close(dir_fd)


def _write_in(dir_fd: int, name: str, text: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    tmp = f".{name}.{secrets.token_hex(8)}.tmp"  # O_EXCL: never an existing file or link
    fd = os.open(tmp, flags, 0o666, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
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


def _bar(score: float, max_score: float) -> str:
    filled = round(BAR_WIDTH * score / max_score) if max_score else 0
    return "#" * filled + "." * (BAR_WIDTH - filled)


def _points(x: float) -> str:
    return f"{x:g}"


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _left(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def table_lines(gradebook: Gradebook) -> list[str]:
    """One row per concept, then the total."""
    rows = []
    for total in gradebook.concept_totals():
        percent = 100.0 * total.score / total.max_score if total.max_score else 0.0
        rows.append((f"{total.title} ({total.id})", f"{_points(total.score)}/{_points(total.max_score)}",
                     msg("summary.passed", passed=total.passed, checks=total.checks), _bar(total.score, total.max_score),
                     f"{percent:5.1f}%"))
    width = max([_width(r[0]) for r in rows] + [_width(msg("summary.total"))])
    score_width = max([len(r[1]) for r in rows] + [1])
    passed_width = max([_width(r[2]) for r in rows] + [13])
    lines = [f"{_left(name, width)}  {score:>{score_width}}  {_left(passed, passed_width)} {bar} {pct}"
             for name, score, passed, bar, pct in rows]
    total = f"{_points(gradebook.score)}/{_points(gradebook.max_score)}"
    lines.append(f"{_left(msg('summary.total'), width)}  {total:>{score_width}}  {'':<{passed_width}} "
                 f"{_bar(gradebook.score, gradebook.max_score)} {gradebook.percent:5.1f}%")
    return lines


def isolation_lines(gradebook: Gradebook) -> list[str]:
    """How student code was fenced off, and what that mode does not protect."""
    return [msg("report.isolation", mode=gradebook.isolation)] + [
        msg("header.missing", what=what) for what in gradebook.isolation_missing]


def gradescope_results(gradebook: Gradebook) -> dict[str, Any]:
    """Gradescope's results.json: one test per graded check, the concept in tags."""
    tests = []
    for number, check in enumerate(gradebook.graded(), start=1):
        tests.append({
            "name": check.id,
            "number": str(number),
            "score": check.score,
            "max_score": check.max_score,
            "status": "passed" if check.status == "passed" else "failed",
            "output": check.feedback,
            "output_format": "text",
            "tags": [check.concept] if check.concept else [],
            "visibility": "after_published" if check.hidden else "visible",
            "extra_data": {"grader_status": check.status, "device": check.device},
        })
    return {
        "score": gradebook.score,
        "execution_time": gradebook.duration_s,
        "output": "\n".join(table_lines(gradebook) + isolation_lines(gradebook)),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"percent": gradebook.percent, "seed": gradebook.seed, "complete": gradebook.complete},
    }

"""A student's zip unpacked the way the sandbox stages a submission: every
name taken as data (``write.py``), no link, zips inside unpacked in turn
(``NESTED`` levels at most) within the one budget of that student, and the
folders a zip merely wraps its contents in stripped (``myhw/``,
``repo-main/``), so that the modules are where ``find_modules`` looks."""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

from ...i18n import msg
from .export import JUNK, READ_ERRORS, Entry, Export, read_zip
from .write import Budget, OverBudget, UnpackError, clean_parts, folder_in, private_dir, reason, write_new


def expand(archive: Path, dest: Path, budget: Budget, level: int = 1) -> list[str]:
    """Unpack ``archive`` so that its contents (less wrapping folders) are
    the new folder ``dest``; the problems with single entries, for the
    instructor. Raises UnpackError where the zip cannot be read, nests
    too deep or spends the budget: nothing of it is then left."""
    if level > budget.depth + 1:
        raise OverBudget(msg("intake.too_deep", levels=budget.depth))
    scratch = free(dest.parent, f".unpack-{level}")
    try:
        problems = _unpack(archive, scratch, budget, level)
        os.rename(_innermost(scratch), dest)
    except OSError as exc:
        raise UnpackError(msg("intake.bad_zip", reason=reason(exc))) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return problems


def _unpack(archive: Path, into: Path, budget: Budget, level: int) -> list[str]:
    # the student's whole budget bounds what the zip may even declare
    export = read_zip(archive, Budget(budget.files, budget.size))
    private_dir(into)
    problems: list[str] = []
    inner: list[Path] = []
    try:
        for entry in export.entries:
            written = _write(export, entry, into, budget, problems)
            if written is not None and written.suffix.lower() == ".zip":
                inner.append(written)
    finally:
        export.close()
    for path in inner:
        try:
            problems += expand(path, free(path.parent, path.stem), budget, level + 1)
            path.unlink()
        except OverBudget:
            raise
        except UnpackError as exc:  # a broken zip inside: the rest of the upload is still graded
            problems.append(msg("intake.student_zip", name="/".join(path.relative_to(into).parts), reason=str(exc)))
    return problems


def _write(export: Export, entry: Entry, into: Path, budget: Budget, problems: list[str]) -> Path | None:
    """Write one entry; a name that cannot be written costs only that entry."""
    name = "/".join(entry.parts)
    parts = clean_parts(name)
    if entry.kind == "link":
        problems.append(msg("intake.link", name=name))
        return None
    if parts is None:
        problems.append(msg("intake.bad_name", name=name))
        return None
    try:
        if entry.kind == "dir":
            folder_in(into, parts, budget)
            return None
        with export.open(entry) as source:
            return write_new(into, parts, source, budget)
    except FileExistsError:
        problems.append(msg("intake.twice", name=name))
    except OSError as exc:
        problems.append(msg("intake.unwritable", name=name, reason=reason(exc)))
    except READ_ERRORS as exc:
        problems.append(msg("intake.unwritable", name=name, reason=str(exc) or type(exc).__name__))
    return None


def _innermost(folder: Path) -> Path:
    """The folder inside ``folder`` that holds everything, however many
    single folders wrap it (``myhw/``, ``repo-main/``, ``hw/hw/``)."""
    while True:
        inside = [p for p in folder.iterdir() if p.name not in JUNK]
        if len(inside) != 1 or inside[0].is_symlink() or not inside[0].is_dir():
            return folder
        folder = inside[0]


def free(parent: Path, stem: str) -> Path:
    """``parent/stem``, or ``stem-2``, ``stem-3``... where that is taken."""
    for number in itertools.count(1):
        path = parent / (stem if number == 1 else f"{stem}-{number}")
        if not os.path.lexists(path):
            return path
    raise AssertionError  # unreachable: count() never ends

"""An export read as a list of entries whose names are data: nothing is
written by an export's own names (a name too long for the filesystem, or
one that leaves its folder, is then only a name that a format does not
claim, or that its student's ``place`` refuses with a reason)."""

from __future__ import annotations

import os
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ...boundary.layout import TOOL_FOLDERS
from ...i18n import msg
from ...sandbox.staging import MAX_BYTES, MAX_FILES
from .write import Budget, UnpackError

# what reading one member of a zip may raise (a bad CRC, a method zipfile lacks, a truncated stream)
READ_ERRORS = (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError, ValueError, RuntimeError)
# what an operating system adds to a zip or a folder: no one's upload
JUNK = {"__MACOSX", ".DS_Store", "Thumbs.db", "desktop.ini"}
BULK = 64  # a class's export may hold this many submissions' worth


@dataclass(frozen=True)
class Entry:
    parts: tuple[str, ...]  # its path in the export, one name per level, as the export spells it
    kind: str  # "file", "dir" or "link"
    size: int = 0  # as declared (a zip's may lie: writes count what they write)
    source: zipfile.ZipInfo | Path | None = None  # the zip's member, or the file on disk


class Export:
    """The entries of a zip, or of a folder (listed as they are asked for:
    a folder graded where it is is never walked)."""

    def __init__(
        self, root: Path | None = None, zipped: zipfile.ZipFile | None = None, entries: list[Entry] | None = None
    ):
        self.root, self.zipped, self.entries = root, zipped, entries or []
        self.budget: Budget | None = None  # the whole export's: every student's budget charges it too
        self.cache: dict[str, object] = {}  # what a format read of the export once (Gradescope's metadata)
        self._index: dict[str, Entry] | None = None

    def top(self) -> dict[str, str]:
        """Each first-level name and its kind (file, dir, link, other);
        hidden names and what tools keep (caches, .git) aside."""
        if self.root is not None:
            return _shallow(self.root)
        return _shallow_entries(self.entries)

    def children(self, name: str) -> dict[str, str]:
        """The names directly inside the first-level folder ``name``, and their kinds."""
        if self.root is not None:
            return _shallow(self.root / name)
        return _shallow_entries(
            [Entry(e.parts[1:], e.kind) for e in self.entries if e.parts[0] == name and len(e.parts) > 1]
        )

    def has(self, *parts: str) -> bool:
        if self.root is not None:
            return os.path.lexists(self.root.joinpath(*parts))
        return any(e.parts[: len(parts)] == parts for e in self.entries)

    def under(self, name: str) -> list[Entry]:
        """The entries below the first-level ``name``, their parts relative to it."""
        if self.root is not None:
            return _walk(self.root / name)
        return [
            Entry(e.parts[1:], e.kind, e.size, e.source)
            for e in self.entries
            if e.parts[0] == name and len(e.parts) > 1
        ]

    def entry(self, name: str) -> Entry:
        """The first-level ``name`` itself, as one entry."""
        if self.root is not None:
            path = self.root / name
            return Entry((name,), _kind(path), 0, path)
        if self._index is None:
            self._index = {e.parts[0]: e for e in self.entries if len(e.parts) == 1}
        return self._index[name]

    def open(self, entry: Entry) -> IO[bytes]:
        if isinstance(entry.source, zipfile.ZipInfo):
            assert self.zipped is not None  # a member is listed from its zip only
            return self.zipped.open(entry.source)
        assert entry.source is not None  # every entry listed says where it is
        fd = os.open(entry.source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))  # a link is never read through
        return os.fdopen(fd, "rb")

    def close(self) -> None:
        if self.zipped is not None:
            self.zipped.close()


def export_budget() -> Budget:
    """What a whole class's export may hold: ``BULK`` students' worth."""
    return Budget(files=MAX_FILES * BULK, size=MAX_BYTES * BULK)


def read_zip(archive: Path, budget: Budget | None = None) -> Export:
    """The zip's entries (the one folder it wraps everything in stripped:
    ``assignment_987_export/``), within ``budget`` as declared."""
    budget = budget or export_budget()
    try:
        zipped = zipfile.ZipFile(archive)
        members = zipped.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, ValueError) as exc:
        raise UnpackError(msg("intake.bad_zip", reason=str(exc) or type(exc).__name__)) from None
    except OSError as exc:
        raise UnpackError(msg("intake.bad_zip", reason=exc.strerror or str(exc))) from None
    if len(members) > budget.files or sum(m.file_size for m in members) > budget.size:
        zipped.close()
        raise UnpackError(msg("intake.too_large", files=budget.files, mb=budget.size >> 20))
    entries = []
    for member in members:
        parts = tuple(p for p in member.filename.split("/") if p not in ("", "."))
        if member.filename.startswith("/") and parts:
            parts = ("/" + parts[0], *parts[1:])  # kept absolute, for clean_parts to refuse
        if not parts or parts[0] in JUNK or parts[-1] in JUNK:
            continue
        link = stat.S_ISLNK(member.external_attr >> 16)
        kind = "link" if link else "dir" if member.is_dir() else "file"
        entries.append(Entry(parts, kind, member.file_size, member))
    return Export(zipped=zipped, entries=_unwrapped(entries))


def _unwrapped(entries: list[Entry]) -> list[Entry]:
    tops = {e.parts[0] for e in entries}
    deeper = [e for e in entries if len(e.parts) > 1]
    if len(tops) == 1 and deeper and all(e.kind == "dir" for e in entries if len(e.parts) == 1):
        return [Entry(e.parts[1:], e.kind, e.size, e.source) for e in deeper]
    return entries


def _listed(name: str) -> bool:
    return name not in JUNK and name not in TOOL_FOLDERS and not name.startswith(".")


def _shallow(folder: Path) -> dict[str, str]:
    try:
        return {p.name: _kind(p) for p in sorted(folder.iterdir()) if _listed(p.name)}
    except OSError:
        return {}


def _shallow_entries(entries: list[Entry]) -> dict[str, str]:
    kinds: dict[str, str] = {}
    for entry in entries:
        kind = entry.kind if len(entry.parts) == 1 else "dir"
        if _listed(entry.parts[0]) and kinds.get(entry.parts[0]) in (None, "dir"):
            kinds[entry.parts[0]] = kind
    return dict(sorted(kinds.items()))


def _kind(path: Path) -> str:
    """What ``path`` itself is: a link, a folder, a regular file, or other (a pipe, a device: never opened)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "other"
    return "link" if stat.S_ISLNK(mode) else "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def _walk(folder: Path) -> list[Entry]:
    """Every file, folder and link under ``folder``; links are listed, never followed."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    found = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        here = Path(root)
        relative = here.relative_to(folder).parts
        for name in sorted(dirs):
            found.append(Entry((*relative, name), _kind(here / name), 0, here / name))
        dirs[:] = sorted(d for d in dirs if not (here / d).is_symlink() and d not in JUNK and d not in TOOL_FOLDERS)
        for name in sorted(files):
            if name not in JUNK:
                path = here / name
                found.append(Entry((*relative, name), _kind(path), 0, path))
    return found

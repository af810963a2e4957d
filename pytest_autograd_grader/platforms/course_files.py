"""What the platform set-ups share: the copy of an instructor's checks
directory (the same rules for Gradescope's zip and GitHub Classroom's checks
repository), reproducible zips, and the listing of what was written.

Messages are the set-up's own: each function takes the catalogue prefix of
its command (``bundle`` for gradescope-bundle, ``github_classroom``), whose
keys ``.not_dir``, ``.no_tests``, ``.symlink``, ``.ini_written``,
``.ini_ignored`` and ``.output_inside`` say the same thing in that
command's words.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..boundary.layout import TOOL_FOLDERS, is_check_file
from ..i18n import msg
from . import SetupError

SKIP_SUFFIXES = (".pyc", ".pyo")
# pytest settings that -c checks/pytest.ini would silently ignore
OTHER_CONFIGS = (
    ("pyproject.toml", "[tool.pytest.ini_options]"),
    ("tox.ini", "[pytest]"),
    ("setup.cfg", "[tool:pytest]"),
)
# -c checks/pytest.ini needs a file; [pytest] makes it the config
MINIMAL_INI = b"[pytest]\n"
SCRIPT_MODE = 0o755
FILE_MODE = 0o644
# fixed timestamps: the same files give the same zip
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


@dataclass
class CheckFiles:
    """A checks directory as a set-up ships it: relative POSIX path ->
    content, with ``pytest.ini`` added when it had none."""

    files: dict[str, bytes] = field(default_factory=dict)
    added: set[str] = field(default_factory=set)  # written by the set-up, not the instructor's
    warnings: list[str] = field(default_factory=list)


def read_checks(checks: Path, prefix: str) -> CheckFiles:
    """The files of ``checks``: regular files only, no caches or VCS data;
    a symbolic link is left out with a warning (on the platform it would
    point nowhere, or somewhere the instructor did not mean to ship).
    Raises SetupError when ``checks`` is no directory of check files."""
    if not checks.is_dir():
        raise SetupError(msg(f"{prefix}.not_dir", path=str(checks)))
    found = CheckFiles()
    for root, dirs, names in os.walk(checks, followlinks=False):
        here = Path(root)
        dirs[:] = _folders_to_walk(here, dirs, found, prefix)
        for name in sorted(names):
            _read_file(checks, here / name, found, prefix)
    if not any(is_check_file(name.rsplit("/", 1)[-1]) for name in found.files):
        raise SetupError(msg(f"{prefix}.no_tests", path=str(checks)))
    if "pytest.ini" not in found.files:
        _add_minimal_ini(checks, found, prefix)
    return found


def _folders_to_walk(here: Path, dirs: list[str], found: CheckFiles, prefix: str) -> list[str]:
    """The folders under ``here`` to read: no caches or VCS data, and no
    symbolic link (left out with a warning)."""
    kept = []
    for name in sorted(dirs):
        if name in TOOL_FOLDERS:
            continue
        if (here / name).is_symlink():
            found.warnings.append(msg(f"{prefix}.symlink", path=here / name))
        else:
            kept.append(name)
    return kept


def _read_file(checks: Path, path: Path, found: CheckFiles, prefix: str) -> None:
    """Keep ``path`` if it is a regular file to ship; a symbolic link is
    left out with a warning, a cache file, socket or fifo silently."""
    if path.name.endswith(SKIP_SUFFIXES):
        return
    if path.is_symlink():
        found.warnings.append(msg(f"{prefix}.symlink", path=path))
        return
    if path.is_file():  # not sockets, fifos
        found.files[path.relative_to(checks).as_posix()] = path.read_bytes()


def _add_minimal_ini(checks: Path, found: CheckFiles, prefix: str) -> None:
    """A ``pytest.ini`` for checks without one, with a warning, and another
    for each configuration file whose pytest settings it now hides."""
    found.files["pytest.ini"] = MINIMAL_INI
    found.added.add("pytest.ini")
    found.warnings.append(msg(f"{prefix}.ini_written", path=checks))
    for name, section in OTHER_CONFIGS:
        if section.encode() in found.files.get(name, b""):
            found.warnings.append(msg(f"{prefix}.ini_ignored", file=checks / name))


def manifest_of_files(files: dict[str, bytes], prefix: str) -> dict:
    """The manifest of the checks as a bundle will hold ``files`` (name ->
    bytes), listed from a copy in a temporary folder so that a failure
    writes nothing; raises ManifestError as ``build_manifest`` does."""
    from .manifest import build_manifest

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        root = Path(tmp) / "checks"
        for name, data in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        return build_manifest(root)


def refuse_inside(output: Path, checks: Path, prefix: str) -> None:
    """SetupError when ``output`` is ``checks`` or lies inside it (the next
    run would ship the last one's output as a check file)."""
    if checks.is_dir() and overlaps(output, checks, inner_only=True):
        raise SetupError(msg(f"{prefix}.output_inside", output=str(output), path=str(checks)))


def overlaps(path: Path, other: Path, inner_only: bool = False) -> bool:
    """Whether ``path`` is ``other`` or lies inside it (or, unless
    ``inner_only``, holds it)."""
    path, other = path.expanduser().resolve(), other.expanduser().resolve()
    return path == other or other in path.parents or (not inner_only and path in other.parents)


def zip_bytes(files: dict[str, tuple[bytes, int]]) -> bytes:
    """A zip of ``files`` (name -> (content, mode)) with Unix modes, so unzip
    and pip apply them, and fixed timestamps and order, so the same files
    give the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, (data, mode) in files.items():
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.create_system = 3  # Unix: unzip applies the mode bits
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


def listing(files: dict[str, tuple[bytes, int]]) -> list[str]:
    """One line per file, as ``ls -l`` would show mode and size."""
    return [
        f"  {stat.filemode(stat.S_IFREG | mode)}  {size(len(data)):>9}  {name}"
        for name, (data, mode) in sorted(files.items())
    ]


def size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"

"""The wheel of this grader as it is installed here, for the set-ups to
carry: Gradescope's setup.sh and GitHub Classroom's workflow install it from
the files they ship, since the grader is not on the package index.

Built from the installed package directory and the installed distribution's
metadata, without network and without the source tree, so it works however
the grader was installed (from a wheel, or editable with ``pip install -e
.``). The format is the binary distribution format (PEP 427): the package's
files, never ``__pycache__`` or bytecode, and a ``.dist-info`` with METADATA,
WHEEL, entry_points.txt (the pytest11 plugin and the ``autograd-grader``
script), licenses/LICENSE and RECORD. Fixed timestamps and sorted names make the same
installation give the same bytes.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from .. import __version__
from ..boundary.layout import TOOL_FOLDERS
from ..i18n import msg
from . import SetupError
from .course_files import FILE_MODE, SCRIPT_MODE, zip_bytes

DISTRIBUTION = "pytest-autograd-grader"
TAG = "py3-none-any"
# Metadata-Version 2.1 holds every field below and is read by every pip a
# platform image may have (Ubuntu 22.04's is 22.0)
METADATA_VERSION = "2.1"
METADATA_FIELDS = ("Name", "Version", "Summary", "Requires-Python", "Provides-Extra", "Requires-Dist")
# a Python package's files: bytecode, editor and OS leftovers are not
SKIP_SUFFIXES = (".pyc", ".pyo", "~")


@dataclass(frozen=True)
class Wheel:
    name: str  # the file name, pytest_autograd_grader-<version>-py3-none-any.whl
    data: bytes


def grader_wheel() -> Wheel:
    """The wheel of the grader installed in this Python; SetupError (in
    words) when it is not installed or its metadata is not this package's."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise SetupError(msg("wheel.not_installed", python=sys.executable)) from None
    if dist.version != __version__:
        raise SetupError(
            msg("wheel.version_mismatch", installed=dist.version, version=__version__, path=str(package_dir()))
        )
    # the file name's escaping: runs of -_. in the name as one _, - in the version as _
    stem = f"{re.sub(r'[-_.]+', '_', dist.metadata['Name']).lower()}-{dist.version.replace('-', '_')}"
    files: dict[str, tuple[bytes, int]] = {}
    root = package_dir()
    for path in package_files(root):
        executable = os.stat(path).st_mode & 0o111
        files[path.relative_to(root.parent).as_posix()] = (path.read_bytes(), SCRIPT_MODE if executable else FILE_MODE)
    info = f"{stem}.dist-info"
    license_text = _license(dist)
    if license_text is not None:  # MIT asks that every copy carries it
        files[f"{info}/licenses/LICENSE"] = (license_text, FILE_MODE)
    files[f"{info}/METADATA"] = (_metadata(dist).encode(), FILE_MODE)
    files[f"{info}/WHEEL"] = (_wheel_file().encode(), FILE_MODE)
    files[f"{info}/entry_points.txt"] = (_entry_points(dist).encode(), FILE_MODE)
    files[f"{info}/RECORD"] = (_record(files, f"{info}/RECORD").encode(), FILE_MODE)
    return Wheel(f"{stem}-{TAG}.whl", zip_bytes(files))


def build_wheel(dest_dir: Path) -> Path:
    """Write the grader's wheel into ``dest_dir``; its path."""
    wheel = grader_wheel()
    path = Path(dest_dir) / wheel.name
    path.write_bytes(wheel.data)
    return path


def package_dir() -> Path:
    """The directory the grader is imported from."""
    return Path(__file__).resolve().parent.parent


def package_files(root: Path) -> list[Path]:
    """Every file of the package under ``root`` (modules and package data),
    sorted; no bytecode, caches or hidden files."""
    found = []
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in TOOL_FOLDERS and not d.startswith("."))
        found += [
            Path(here) / name
            for name in sorted(names)
            if not name.startswith(".") and not name.endswith(SKIP_SUFFIXES) and Path(here, name).is_file()
        ]
    # curriculum/ is a link to exercises/ in a source checkout, which
    # os.walk does not enter; the engine's given module is read from there
    curriculum = root / "curriculum"
    if curriculum.is_symlink() and curriculum.is_dir():
        found += sorted(path for path in curriculum.glob("*.py") if path.is_file())
    return sorted(found)


def _license(dist: metadata.Distribution) -> bytes | None:
    """The license text: from the installed metadata (an install from a
    wheel has it in its dist-info), else the LICENSE of the source checkout
    the package is imported from (an editable install's metadata lacks it)."""
    text = dist.read_text("licenses/LICENSE")
    if text is not None:
        return text.encode()
    checkout = package_dir().parent
    # a LICENSE in site-packages would be another project's: only a checkout's counts
    if (checkout / "pyproject.toml").is_file() and (checkout / "LICENSE").is_file():
        return (checkout / "LICENSE").read_bytes()
    return None


def _metadata(dist: metadata.Distribution) -> str:
    lines = [f"Metadata-Version: {METADATA_VERSION}"]
    for name in METADATA_FIELDS:
        lines += [f"{name}: {' '.join(value.split())}" for value in dist.metadata.get_all(name) or []]
    return "\n".join(lines) + "\n"


def _wheel_file() -> str:
    return (
        f"Wheel-Version: 1.0\nGenerator: pytest-autograd-grader {__version__} (platforms/wheel.py)\n"
        f"Root-Is-Purelib: true\nTag: {TAG}\n"
    )


def _entry_points(dist: metadata.Distribution) -> str:
    groups: dict[str, list[str]] = {}
    for entry in dist.entry_points:
        groups.setdefault(entry.group, []).append(f"{entry.name} = {entry.value}")
    return "\n".join(f"[{group}]\n" + "\n".join(sorted(entries)) + "\n" for group, entries in sorted(groups.items()))


def _record(files: dict[str, tuple[bytes, int]], record: str) -> str:
    """RECORD: each file with its sha256 (urlsafe base64, no padding) and
    size; RECORD's own line has neither."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for name, (data, _) in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([name, f"sha256={digest}", len(data)])
    writer.writerow([record, "", ""])
    return out.getvalue()

"""Where a submission's modules are, in every layout students hand them in:
a repository (its ``exercises/``), a flat upload, a zipped folder; and
whether a folder holds check files at all.

The standard library only: ``gradescope-bundle`` copies this file into the
autograder's zip, where it must work even if the grader failed to install;
the class runner uses it too, so both read a submission the same way.
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path


def _plain_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def has_modules(path: Path) -> bool:
    try:
        return any(p.suffix == ".py" and p.is_file() and not p.is_symlink() for p in path.iterdir())
    except OSError:
        return False


def find_modules(submission: Path) -> Path:
    """Where the student's modules are: exercises/ of a repository upload;
    the upload itself when it holds .py files (a flat upload); the one
    folder that holds them (a zipped folder, or a zipped repository with
    exercises/ inside); else the upload itself (the grader then says which
    module it could not find). Symbolic links are never followed: a link
    could point the grader at its own checks."""
    exercises = submission / "exercises"
    if _plain_dir(exercises):
        return exercises
    if has_modules(submission):
        return submission
    try:
        folders = sorted(p for p in submission.iterdir()
                         if _plain_dir(p) and not p.name.startswith((".", "__")))
    except OSError:
        return submission
    holding = [folder for folder in folders if has_modules(folder)]
    if len(holding) == 1:
        return holding[0]
    repositories = [folder / "exercises" for folder in folders if _plain_dir(folder / "exercises")]
    if not holding and len(repositories) == 1:
        return repositories[0]
    return submission


def is_check_file(name: str) -> bool:
    """pytest's default ``python_files``: test_*.py and *_test.py."""
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def has_checks(folder: Path) -> bool:
    """Whether pytest could find a check file under ``folder`` (its own
    ``pytest.ini`` may name other files, which is then taken on trust)."""
    try:
        ini = configparser.ConfigParser(interpolation=None)
        ini.read(folder / "pytest.ini")
        if ini.has_option("pytest", "python_files"):
            return True
    except (configparser.Error, UnicodeDecodeError):
        pass  # pytest itself will say what is wrong with the file
    for _, directories, files in os.walk(folder):
        directories[:] = [d for d in directories if not d.startswith((".", "__"))]
        if any(is_check_file(name) for name in files):
            return True
    return False

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


# folders that tools write beside a student's or an instructor's files
# (version control, caches, virtual environments): never their work, so
# never staged for a student's code, shipped in a bundle, hashed or listed
TOOL_FOLDERS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".ipynb_checkpoints",
    }
)

# what a student's module may be: a Python file, or a notebook (notebooks.py)
MODULE_SUFFIXES = (".py", ".ipynb")


def has_modules(path: Path) -> bool:
    try:
        return any(p.suffix in MODULE_SUFFIXES and p.is_file() and not p.is_symlink() for p in path.iterdir())
    except OSError:
        return False


def module_path(directory: Path, module: str) -> Path:
    """The file the module ``module`` is read from: ``module.py``, else
    ``module.ipynb`` (a notebook), else ``module.py`` (to say it is missing).
    Where both are there the Python file is graded (the report says so)."""
    python = directory / f"{module}.py"
    if not python.is_file():
        notebook = directory / f"{module}.ipynb"
        if notebook.is_file() and not notebook.is_symlink():
            return notebook
    return python


def find_modules(submission: Path) -> Path:
    """Where the student's modules are: exercises/ of a repository upload;
    the upload itself when it holds .py files or notebooks (a flat upload); the one
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
        folders = sorted(p for p in submission.iterdir() if _plain_dir(p) and not p.name.startswith((".", "__")))
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

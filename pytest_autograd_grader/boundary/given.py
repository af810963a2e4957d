"""The given modules: files of the curriculum that a student's module
imports but does not write (``engine_given.py``, the engine track's
plumbing). They are the grader's, as the checks are: whatever file of that
name a submission holds (an edited copy, a forged one), the student's
module imports the grader's copy."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path

# the curriculum the grader ships (curriculum/ is exercises/)
CURRICULUM = Path(__file__).resolve().parent.parent / "curriculum"
# module name -> its file in the curriculum
GIVEN = {"engine_given": CURRICULUM / "engine_given.py"}


class _GivenFinder(importlib.abc.MetaPathFinder):
    """Finds a given module in the grader's curriculum before any folder on
    sys.path (the student's among them) is searched; loads nothing until
    the student's code imports it."""

    def find_spec(self, name, path=None, target=None):
        file = GIVEN.get(name)
        if file is None or path is not None:
            return None
        return importlib.util.spec_from_file_location(name, file)


def install() -> None:
    """Put the finder first on sys.meta_path, and drop a given module that
    was imported from anywhere else (a student's module loaded before)."""
    if not any(isinstance(finder, _GivenFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _GivenFinder())
    for name, file in GIVEN.items():
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None) != str(file):
            del sys.modules[name]

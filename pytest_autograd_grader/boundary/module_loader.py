"""Loading the student's modules in the process that runs student code:
a ``.py`` file or a notebook's code cells, once each, with every way an
import can fail (missing file, syntax error, exception, a notebook's cell
that runs past its time) told as the stage it failed at (``StageError``).

``student.call`` loads through a ``Loader`` before it calls a function.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from ..protocol import Stage
from . import given, notebook_modules
from .encode import encode
from .layout import module_path
from .shortening import shorten


class Loader:
    """Loads student modules from one directory, once each per process."""

    def __init__(self, directory: str, unique_names: bool = False) -> None:
        self.directory = str(Path(directory).resolve())
        self.unique_names = unique_names
        self.modules: dict[str, ModuleType] = {}
        self.import_seconds = 0.0  # the grader's time for an import (a notebook stops itself just before)
        self.running_cell: int | None = None  # the notebook cell being run at the top level, while one is

    def in_student_file(self, filename: str) -> str:
        """``filename`` relative to the submission ("leaf.py", "lib/util.py"),
        or "" when it is not one of the student's files. Feedback names
        files this way: the grader's own paths (a staged copy, the student's
        folder name) mean nothing to the student."""
        try:
            path = os.path.abspath(filename)
        except Exception:
            return ""
        if not path.startswith(self.directory + os.sep):
            return ""
        return Path(os.path.relpath(path, self.directory)).as_posix()

    def load(self, module: str) -> ModuleType:
        if module in self.modules:
            return self.modules[module]
        path = module_path(Path(self.directory), module)
        if not path.is_file():
            raise StageError({"stage": Stage.MISSING, "module": module, "directory": self.directory})
        name = f"_grade_submission_{abs(hash(self.directory))}_{module}" if self.unique_names else module
        if self.directory not in sys.path:
            sys.path.insert(0, self.directory)
        given.install()  # the grader's given modules, never a file of the student's
        if path.suffix == notebook_modules.SUFFIX:
            mod = self._notebook(name, module, path)
        else:
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:  # never for a .py file; for mypy
                raise ImportError(f"no loader for {path.name}")
            loader = spec.loader
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            self._run(module, name, lambda: loader.exec_module(mod))
        self.modules[module] = mod
        return mod

    def _run(self, module: str, name: str, body: Callable[[], None]) -> None:
        try:
            body()
        except SyntaxError as exc:
            sys.modules.pop(name, None)
            # The error may sit in a module the student's module imports.
            raise StageError(
                {
                    "stage": Stage.SYNTAX,
                    "module": module,
                    "file": self.in_student_file(exc.filename or "") or Path(exc.filename or "").name,
                    "line": exc.lineno or 0,
                    "message": exc.msg or str(exc),
                    "code": shorten((exc.text or "").strip(), 200),
                }
            ) from None
        except _ImportTimeout as exc:
            sys.modules.pop(name, None)
            fields = encode(exc, self.in_student_file)
            cell = {"cell": self.running_cell} if self.running_cell is not None else {}
            raise StageError(
                {
                    "stage": Stage.IMPORT_TIMEOUT,
                    "module": module,
                    "seconds": self.import_seconds,
                    "file": fields.get("file", ""),
                    "line": fields.get("line", 0),
                    "code": fields.get("code", ""),
                    **cell,
                }
            ) from None
        except BaseException as exc:
            sys.modules.pop(name, None)
            # a notebook's cell that raised, though the line may be in a function an earlier cell defined
            cell = {"cell": self.running_cell} if self.running_cell is not None else {}
            raise StageError(
                {"stage": Stage.IMPORT, "module": module, "error": encode(exc, self.in_student_file), **cell}
            ) from None
        finally:
            self.running_cell = None

    def _notebook(self, name: str, module: str, path: Path) -> ModuleType:
        """A notebook's code cells run as a module (notebook_modules.py), with its
        lines registered so that tracebacks quote them; stopped just before
        the grader's own deadline, so the answer says which cell was running."""
        import linecache

        try:
            notebook = notebook_modules.read_notebook(path)
        except (notebook_modules.NotebookError, ImportError):
            raise StageError({"stage": Stage.NOTEBOOK, "module": module}) from None
        source = notebook.source
        filename = str(path)
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        mod = ModuleType(name)
        mod.__file__ = filename
        # a kernel gives every cell display(); a notebook that shows a value
        # at the top level should not fail to import for want of it
        mod.__dict__["display"] = _display
        sys.modules[name] = mod

        def run() -> None:
            with _stopped_after(self.import_seconds * 0.9 if self.import_seconds > 0.2 else 0.0):
                for number, tree in notebook_modules.cell_trees(notebook, filename):
                    self.running_cell = number
                    exec(compile(tree, filename, "exec"), mod.__dict__)

        self._run(module, name, run)
        return mod


def _display(*values: Any, **_options: Any) -> None:
    """IPython's display() outside a kernel: each value's text, printed."""
    for value in values:
        print(repr(value))


class _ImportTimeout(BaseException):
    """A notebook's top-level code ran past its time: raised where it was."""


@contextlib.contextmanager
def _stopped_after(seconds: float) -> Iterator[None]:
    """Raise _ImportTimeout in the running code after ``seconds`` (0: never).
    Student code may undo this; the grader's own deadline still holds."""
    import signal
    import threading

    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise _ImportTimeout()

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class StageError(Exception):
    """A module that could not be loaded: ``outcome`` is the answer that says so."""

    def __init__(self, outcome: dict[str, Any]) -> None:
        super().__init__(outcome.get("stage"))
        self.outcome = outcome

"""What a student's notebook defines in which cell, read by the grader from
the notebook itself (never from the worker), and the feedback that follows
from it: a name the grader did not run because its cell is tagged
``skip-grading`` (or opens with a cell magic that defines nothing), the cell
that failed while the notebook was loaded, and which of several definitions
of a function was graded.

Cells are numbered as ``notebooks.py`` numbers them: from the top of the
notebook, Markdown cells too, as a student counts them in Jupyter.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from ..i18n import msg
from .layout import module_path
from .notebook_modules import (
    SKIP_TAG,
    SUFFIX,
    NotebookError,
    NotebookModule,
    cell_trees,
    read_notebook,
    without_ipython,
)
from .sources import SOURCE_LIMIT

_NAME_ERROR = re.compile(r"name '([A-Za-z_][A-Za-z0-9_]{0,99})' is not defined")
_DEFINES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def notebook_of(directory: Path | None, module: str) -> tuple[NotebookModule, str] | None:
    """The module ``module`` of the submission ``directory`` stands for, and
    the notebook's file name, when it is handed in as a notebook the grader
    can read; else None."""
    if directory is None or not isinstance(module, str):
        return None
    try:
        path = module_path(Path(directory), module)
        if path.suffix != SUFFIX:
            return None
        return read_notebook(path), path.name
    except (NotebookError, ImportError, OSError, ValueError):
        return None


def _bound(body: list[ast.stmt]) -> dict[str, int]:
    """The names a cell's top-level statements bind, each at its first line."""
    names: dict[str, int] = {}
    for node in body:
        if isinstance(node, _DEFINES):
            names.setdefault(node.name, node.lineno)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.setdefault((alias.asname or alias.name).split(".")[0], node.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    names.setdefault(target.id, node.lineno)
    return names


@functools.lru_cache(maxsize=64)
def _left_out_names(module: NotebookModule) -> tuple[tuple[int, str, dict[str, int]], ...]:
    """For each cell left out whole: (its number, why, the names it binds)."""
    out = []
    for number, why, source in module.left_out:
        if len(source) > SOURCE_LIMIT:
            continue  # parsed by the grader in its own process: held to a .py file's limit
        try:  # its IPython lines (its cell magic too) neutralised, as the module's are
            body = ast.parse(without_ipython(source)).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # a %%bash cell, or code that does not parse: it defines nothing here
        out.append((number, why, _bound(body)))
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _graded_definitions(module: NotebookModule) -> dict[str, tuple[int, ...]]:
    """Each function or class the graded cells define, with the cells that
    define it, top to bottom."""
    cells: dict[str, list[int]] = {}
    if len(module.source) > SOURCE_LIMIT:
        return {}
    try:
        for number, tree in cell_trees(module):
            for node in tree.body:
                if isinstance(node, _DEFINES) and number not in cells.setdefault(node.name, []):
                    cells[node.name].append(number)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    return {name: tuple(numbers) for name, numbers in cells.items()}


def left_out_place(module: NotebookModule, name: str) -> tuple[int, int, str] | None:
    """(cell, line in it, why it was left out) of the last cell left out
    whole that binds ``name``, the one Jupyter would have run last."""
    found = [(number, names[name], why) for number, why, names in _left_out_names(module) if name in names]
    return found[-1] if found else None


def missing_hint(directory: Path | None, module: str, name: str) -> str | None:
    """Why ``name`` (a function the check needs, or a name its code looked
    up) is missing from the notebook the grader ran, when the reason is a
    cell the grader left out; None when it is not."""
    found = notebook_of(directory, module)
    if found is None or not isinstance(name, str):
        return None
    notebook, file = found
    place = left_out_place(notebook, name.split(".")[0])
    if place is None or name.split(".")[0] in _graded_definitions(notebook):
        return None
    cell, _, why = place
    if why == SKIP_TAG:
        return msg("notebook.in_skipped_cell", file=file, name=name.split(".")[0], cell=cell, tag=SKIP_TAG)
    return msg("notebook.in_magic_cell", file=file, name=name.split(".")[0], cell=cell, magic=why.split()[0])


def name_error_hint(directory: Path | None, module: str, message: str) -> str | None:
    """``missing_hint`` for the name a NameError's ``message`` names."""
    match = _NAME_ERROR.search(message) if isinstance(message, str) else None
    return missing_hint(directory, module, match.group(1)) if match else None


def load_failure_hint(directory: Path | None, module: str, cell: object) -> str | None:
    """What to do about the cell that raised while the notebook was loaded
    (the worker's word, ``cell``, is taken only for a graded cell's number)."""
    found = notebook_of(directory, module)
    if found is None or type(cell) is not int or cell not in {number for _, number, _ in found[0].cells}:
        return None
    return msg("notebook.cell_failed", file=found[1], cell=cell, tag=SKIP_TAG)


def slow_cell_hint(directory: Path | None, module: str, cell: object, line: object) -> str | None:
    """The cell to tag when a notebook's load ran out of time in a function
    an earlier cell defined: the one the grader was running (the worker's
    word, taken only for a graded cell), when it is not the line's own."""
    found = notebook_of(directory, module)
    if found is None or type(cell) is not int or cell not in {number for _, number, _ in found[0].cells}:
        return None
    place = found[0].place(line) if type(line) is int else None
    if place is not None and place[0] == cell:
        return None  # the message names that cell already
    return msg("notebook.cell_slow", file=found[1], cell=cell, tag=SKIP_TAG)


def redefinition_remark(directory: Path | None, module: str, function: str) -> str | None:
    """Which definition of ``function`` ("f", "MyExp.apply") the grader
    graded, when the notebook has more than one (graded or left out)."""
    found = notebook_of(directory, module)
    if found is None or not isinstance(function, str):
        return None
    notebook, file = found
    name = function.split(".")[0]
    cells = _graded_definitions(notebook).get(name, ())
    later = left_out_place(notebook, name)
    if cells and later is not None and later[0] > cells[-1] and later[2] == SKIP_TAG:
        return msg("notebook.graded_not_skipped", file=file, name=name, cell=cells[-1], skipped=later[0], tag=SKIP_TAG)
    if len(cells) > 1:
        earlier = ", ".join(map(str, cells[:-1]))
        key = "notebook.graded_definition" if len(cells) == 2 else "notebook.graded_definitions"
        return msg(key, file=file, name=name, cell=cells[-1], earlier=earlier)
    return None

"""A student's notebook read as the module it stands for: ``leaf.ipynb``
where a check asks for the module ``leaf``.

The module is the notebook's code cells in order. Cells tagged
``skip-grading`` are left out, and so are IPython-only lines (``%magic``,
``!shell``), each replaced by ``pass`` so every other line keeps its number.
A cell magic whose body Jupyter runs once as Python in the notebook's
namespace (``%%time``, ``%%capture out``, ``%%prun``) keeps its body; any
other (``%%bash``, ``%%writefile``, ``%%timeit``, whose body runs inside a
timing function and defines nothing) leaves its whole cell out. Where each line of the module came from
is kept, so feedback names "leaf.ipynb, cell 7, line 3" (cells counted from
the top of the notebook, Markdown cells too, as a student counts them).

The notebook file is read with the Jupyter project's own ``nbformat``. Both
sides use this: the worker builds the module it runs, the grader builds the
same one from the original file to turn a line of the module into a cell
and a line (it never takes that from the worker).

The grader reads the student's file in its own process, so what it costs is
bounded before any of it is parsed: the file's size, then the JSON values
and the depth of nesting counted on the text itself (json.loads makes an
object of every value: a few MB of ``{}`` are GBs of dicts, and nbformat's
validation walks every one of them several times). Outputs are dropped
before nbformat sees the notebook, and so is all metadata but the cells'
tags: the module needs only the cells' sources and tags.
"""

from __future__ import annotations

import functools
import io
import re
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .shortening import shorten

SKIP_TAG = "skip-grading"
# cell magics whose body IPython runs once, as a cell, in the notebook's own namespace
RUNS_BODY = frozenset({"time", "capture", "prun"})
SUFFIX = ".ipynb"
NOTEBOOK_LIMIT = 16 << 20  # bytes: a notebook saved with big outputs is still read; beyond this it is refused
# JSON values and nesting: a notebook of a thousand cells with their outputs
# (plots, long logs) holds some tens of thousands of values, nested less than
# twenty deep; parsed, these limits cost the grader some tens of MB at most
VALUES_LIMIT = 400_000
DEPTH_LIMIT = 64
CELLS_LIMIT = 5_000  # nbformat makes and validates an object per cell: 40,000 cells take seconds


class NotebookError(Exception):
    """The notebook cannot be read as a module; ``reason`` says why, and
    ``key`` and ``fields`` are the message that tells the student."""

    def __init__(self, reason: str, key: str, **fields):
        super().__init__(reason)
        self.key, self.fields = key, fields


@dataclass(frozen=True)
class NotebookModule:
    source: str
    # (first line of the cell in ``source``, the cell's number, its line count)
    cells: tuple[tuple[int, int, int], ...]
    magics: tuple[str, ...]  # the IPython-only lines left out, as written
    skipped: tuple[int, ...]  # numbers of the cells tagged skip-grading
    # every code cell left out whole: (its number, why: SKIP_TAG or its cell magic, its source)
    left_out: tuple[tuple[int, str, str], ...] = ()

    def place(self, line: int) -> tuple[int, int] | None:
        """(cell number, line in that cell) of a line of ``source``."""
        for first, number, count in self.cells:
            if first <= line < first + count:
                return number, line - first + 1
        return None


_HELP = re.compile(r"^\?{0,2}[A-Za-z_][\w.]*(\?{1,2})?$")  # torch.randn? and ??torch.randn: IPython's help


def _magic(line: str) -> bool:
    text = line.strip()
    if text.startswith(("%", "!")):
        return True
    if (text.startswith("?") or text.endswith("?")) and _HELP.match(text):
        return True
    # ``files = !ls`` and ``t = %timeit -o f()``: IPython's assignment forms
    head, sep, rest = text.partition("=")
    return (
        bool(sep) and head.strip().isidentifier() and rest.lstrip().startswith(("!", "%")) and not rest.startswith("=")
    )


def _passed(lines: list[str], numbers: set[int]) -> str:
    """The lines, each numbered in ``numbers`` replaced by ``pass`` at its indent."""
    return "\n".join(
        (line[: len(line) - len(line.lstrip())] + "pass") if number in numbers else line
        for number, line in enumerate(lines, 1)
    )


def without_ipython(code: str) -> str:
    """``code`` with every line IPython alone understands (a cell magic's
    too) replaced by ``pass``: a cell left out, read for what it defines."""
    lines = code.split("\n")
    return _passed(lines, {number for number, line in enumerate(lines, 1) if _magic(line)})


def cell_magic(code: str) -> tuple[str, int] | None:
    """The cell magic a cell opens with (``%%capture out``), after the blank
    lines IPython skips, and the number of its line; None for a plain cell."""
    for number, line in enumerate(code.split("\n"), 1):
        if line.strip():
            return (line.strip(), number) if line.lstrip().startswith("%%") else None
    return None


def _runs_as_python(magic: str) -> bool:
    return magic[2:].split(maxsplit=1)[0] in RUNS_BODY if magic[2:].strip() else False


def _strip_magics(code: str) -> tuple[str, list[str], str | None]:
    """``code`` with every IPython-only line replaced by ``pass`` (indented as
    it was); a line inside a string literal stays as it is. The third item is
    the cell magic that leaves the whole cell out, if one does."""
    lines = code.split("\n")
    kept = set()  # the lines of cell magics whose body runs: nothing to tell the student
    opened = cell_magic(code)
    while opened is not None:
        magic, number = opened
        if not _runs_as_python(magic):
            return "\n".join("" for _ in lines), [magic], magic
        kept.add(number)  # ``%%capture`` runs its body as a cell, which may open with ``%%time``
        opened = cell_magic("\n".join(lines[number:]))
        opened = (opened[0], opened[1] + number) if opened else None
    candidates = {number for number, line in enumerate(lines, 1) if _magic(line)} | kept
    if not candidates:
        return code, [], None
    try:
        inside: set[int] = set()
        for token in tokenize.generate_tokens(io.StringIO(_passed(lines, candidates)).readline):
            if token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                inside.update(range(token.start[0] + 1, token.end[0] + 1))
        candidates -= inside
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # the cell does not parse anyway: its syntax error is reported as it is
    shown = [lines[number - 1].strip() for number in sorted(candidates - kept)]
    return _passed(lines, candidates), shown, None


# a JSON string, escapes included (skipped: what is in it is no structure),
# else a comma or a bracket; a string is a value or a key, so at most a few
# come between two of the tokens counted
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|([,\[\]{}])')
_LIMITS = {"values": VALUES_LIMIT, "depth": DEPTH_LIMIT, "cells": CELLS_LIMIT}


def _measure(text: str) -> None:
    """NotebookError unless ``text`` holds at most VALUES_LIMIT JSON values
    nested at most DEPTH_LIMIT deep, counted without parsing it, in one pass
    that stops at the first limit: outside strings, every value but the
    first of a container follows a comma, and every container opens with a
    bracket (so a container may count twice: the count errs on the safe side)."""
    values = depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group(1)
        if token is None:
            continue
        if token in "]}":
            depth -= 1
            continue
        values += 1
        depth += token != ","
        if values >= VALUES_LIMIT:
            raise NotebookError("too many values", "student.notebook_too_complex", **_LIMITS)
        if depth > DEPTH_LIMIT:
            raise NotebookError("nested too deep", "student.notebook_too_complex", **_LIMITS)


def _sources_only(notebook: dict) -> dict:
    """``notebook`` with only what the module is made of: each cell's type,
    source and tags (formats 1 to 3 keep their cells in worksheets). Outputs,
    attachments and other metadata are never graded, and validating them is
    most of what reading a notebook costs."""

    def listed(value) -> list:
        return value if isinstance(value, list) else []

    cells = listed(notebook.get("cells"))
    for sheet in listed(notebook.get("worksheets")):
        cells = cells + (listed(sheet.get("cells")) if isinstance(sheet, dict) else [])
    if len(cells) > CELLS_LIMIT:
        raise NotebookError("too many cells", "student.notebook_too_complex", **_LIMITS)
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        if "outputs" in cell:
            cell["outputs"] = []
        cell.pop("attachments", None)
        metadata = cell.get("metadata")
        if isinstance(metadata, dict):
            cell["metadata"] = {"tags": metadata["tags"]} if "tags" in metadata else {}
    if isinstance(notebook.get("metadata"), dict):
        notebook["metadata"] = {}
    return notebook


def module_of(text: str) -> NotebookModule:
    """The module a notebook's JSON ``text`` stands for; NotebookError when
    it is not a notebook nbformat can read, or holds more than a student's
    notebook needs (VALUES_LIMIT, DEPTH_LIMIT, CELLS_LIMIT)."""
    # first: without nbformat the notebook is not measured (ImportError, told as such)
    import nbformat
    import nbformat.reader

    _measure(text)
    data, major = _notebook_json(text, nbformat.reader)
    return _module_from(_as_version_4(data, major, nbformat))


def _first_line(exc: BaseException) -> str:
    return shorten((str(exc).strip().splitlines() or [type(exc).__name__])[0], 300)


def _notebook_json(text: str, reader: Any) -> tuple[Any, int]:
    """The notebook's JSON and its format's major version (``reader``: nbformat.reader)."""
    try:
        data = reader.parse_json(text)
        major = reader.get_version(data)[0]
    except reader.NotJSONError as exc:
        raise NotebookError(_first_line(exc), "student.notebook_not_json") from None
    except Exception as exc:  # JSON, but not a notebook's (a list, a number, no version)
        raise NotebookError(_first_line(exc), "student.notebook_unreadable") from None
    return data, major


def _as_version_4(data: Any, major: int, nbformat: Any) -> Any:
    """The notebook read by nbformat, its sources only, in format 4."""
    import json

    text = json.dumps(_sources_only(data))
    try:
        # formats 1 to 3 are converted, as Jupyter converts them when it opens one
        return nbformat.reads(text, as_version=4)
    except Exception as exc:  # nbformat raises validation and version errors of several kinds
        if major != 4:
            raise NotebookError(_first_line(exc), "student.notebook_old_format", version=major) from None
        raise NotebookError(_first_line(exc), "student.notebook_unreadable") from None


def _module_from(notebook: Any) -> NotebookModule:
    """The code cells joined into one module, the IPython-only lines left
    out, and where each cell's lines went."""
    parts: list[str] = []
    cells = []
    magics: list[str] = []
    skipped = []
    whole = []
    line = 1
    for number, cell in enumerate(notebook.cells, 1):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source") or ""
        if isinstance(source, list):  # nbformat joins these; a hand-edited file may not
            source = "".join(source)
        tags = cell.get("metadata", {}).get("tags") or []
        if SKIP_TAG in tags:
            skipped.append(number)
            whole.append((number, SKIP_TAG, source))
            continue
        code, left_out, magic = _strip_magics(source.rstrip("\n"))
        magics += left_out
        if magic is not None:
            whole.append((number, magic, source))
        count = code.count("\n") + 1
        parts.append(code)
        cells.append((line, number, count))
        line += count
    return NotebookModule("\n".join(parts) + "\n", tuple(cells), tuple(magics), tuple(skipped), tuple(whole))


def cell_trees(module: NotebookModule, filename: str = "<notebook>"):
    """Each code cell parsed on its own, as a kernel runs it (a cell may
    open with its own ``from __future__`` import), its lines numbered as
    lines of the module: (cell number, ast.Module). A SyntaxError carries
    the module's line number and that line's text."""
    import ast

    lines = module.source.split("\n")
    for first, number, count in module.cells:
        try:
            tree = ast.parse("\n".join(lines[first - 1 : first - 1 + count]), filename)
        except SyntaxError as exc:
            exc.lineno = (exc.lineno or 1) + first - 1
            # Python would quote the line from the file on disk: the notebook's JSON
            exc.text = lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else ""
            raise
        ast.increment_lineno(tree, first - 1)
        yield number, tree


@functools.lru_cache(maxsize=64)
def _read(path: str, mtime: float, size: int) -> NotebookModule | tuple:
    """The module, or why there is none (the arguments of a NotebookError):
    a notebook refused is refused once, not again for each failed check."""
    with open(path, "rb") as handle:
        data = handle.read(NOTEBOOK_LIMIT + 1)  # the file may have grown since it was measured
    if len(data) > NOTEBOOK_LIMIT:
        return "too large", "student.notebook_too_large", {"mb": NOTEBOOK_LIMIT >> 20}
    try:
        return module_of(data.decode("utf-8"))
    except UnicodeDecodeError:
        return "not UTF-8", "student.notebook_not_json", {}
    except NotebookError as exc:
        return str(exc), exc.key, exc.fields


def read_notebook(path: Path) -> NotebookModule:
    """The module ``path`` (a regular file, never a link) stands for,
    cached while the file is unchanged; NotebookError when it cannot be."""
    try:
        info = path.lstat()
    except OSError as exc:
        raise NotebookError(str(exc), "student.notebook_unreadable") from None
    if not stat.S_ISREG(info.st_mode):
        raise NotebookError("not a regular file", "student.notebook_unreadable")
    if info.st_size > NOTEBOOK_LIMIT:
        raise NotebookError("too large", "student.notebook_too_large", mb=NOTEBOOK_LIMIT >> 20)
    read = _read(str(path), info.st_mtime, info.st_size)
    if isinstance(read, tuple):
        reason, key, fields = read
        raise NotebookError(reason, key, **fields)
    return read


def cell_of(directory: Path | None, file: str, line: int | None) -> tuple[int, int] | None:
    """(cell, line in the cell) for a line of the module the notebook
    ``file`` (relative to the submission ``directory``, never outside it)
    stands for, read by the grader from the notebook itself; None when
    ``file`` is not a notebook, or nbformat is missing, or the line is not
    one of its cells (or no submission folder is known)."""
    if (
        directory is None
        or not isinstance(file, str)
        or not file.endswith(SUFFIX)
        or type(line) is not int
        or line <= 0
    ):
        return None
    try:
        path = (directory / file).resolve()
        if not path.is_relative_to(directory.resolve()):
            return None
        return read_notebook(path).place(line)
    except (NotebookError, ImportError, OSError, ValueError, RuntimeError):
        return None


def notes(directory: Path) -> list[str]:
    """What the grader tells once about the notebooks of a submission: the
    IPython-only lines and skip-grading cells left out, and a module handed
    in both as a .py file and a notebook (the .py file is graded)."""
    from ..i18n import msg
    from .layout import module_path
    from .untrusted import shown

    def said(text: str) -> str:
        # the student's file names and lines, shown where a terminal, a GitHub
        # log or a reader meets them: escapes for what could drive them, one line
        return shown(text, limit=2000).replace("\n", "\\n").replace("\t", " ")

    out: list[str] = []
    try:
        found = sorted(p for p in directory.iterdir() if p.suffix == SUFFIX and p.is_file() and not p.is_symlink())
    except OSError:
        return out
    for path in found:
        if module_path(directory, path.stem) != path:  # the .py file is graded
            out.append(said(msg("notebook.both", module=path.stem)))
            continue
        try:
            module = read_notebook(path)
        except (NotebookError, ImportError):
            continue  # each check that needs it says why it cannot be read
        if module.magics:
            listed = ", ".join(shorten(line, 60) for line in module.magics[:5]) + (
                ", \u2026" if len(module.magics) > 5 else ""
            )
            out.append(said(msg("notebook.magics", file=path.name, lines=listed)))
        if module.skipped:
            out.append(said(msg("notebook.skipped", file=path.name, cells=", ".join(map(str, module.skipped)))))
    return out

"""Line numbers in the student's files, read by the grader (never by
importing them): where a function is defined, for the report's place.
"""

from __future__ import annotations

import ast
import functools
import stat
from dataclasses import dataclass
from pathlib import Path

SOURCE_LIMIT = 1 << 20  # bytes of a student file the grader parses for a line number
SHARED_LIMIT = 1 << 16  # bytes of a file whose parse is kept for files of the same text


@dataclass(frozen=True)
class _Source:
    """What the grader reads from a student's file, as text: never run."""

    lines: dict[str, int]  # "name" and "Class.method" -> line, at the top level
    empty: bool  # nothing but comments and a docstring: not attempted
    spans: tuple = ()  # (first line, last line, "name" or "Class.method") of every function


@functools.lru_cache(maxsize=256)
def _parse(path: str, mtime: float, size: int) -> _Source | None:
    from .notebook_modules import SUFFIX, NotebookError, cell_trees, read_notebook

    try:
        if not path.endswith(SUFFIX):
            text = Path(path).read_bytes()
            return _parse_python(text) if len(text) <= SHARED_LIMIT else _parse_python.__wrapped__(text)
        # a notebook's lines are those of the module it stands for, its cells parsed one by one; its
        # code is held to a .py file's limit (the notebook's own allows for outputs)
        module = read_notebook(Path(path))
        if len(module.source) > SOURCE_LIMIT:
            return None
        body = [node for _, tree in cell_trees(module) for node in tree.body]
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError, NotebookError, ImportError):
        return None
    return _read_body(body)


@functools.lru_cache(maxsize=64)
def _parse_python(text: bytes) -> _Source | None:
    """By content: a class hands in many files as the course gave them
    (the topics a student left untouched), each parsed once."""
    try:
        return _read_body(ast.parse(text).body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _read_body(body: list) -> _Source:
    lines: dict[str, int] = {}
    spans = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            lines[node.name] = node.lineno
            if isinstance(node, ast.ClassDef):
                for inner in node.body:
                    if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        lines[f"{node.name}.{inner.name}"] = inner.lineno
                        spans.append((inner.lineno, inner.end_lineno or inner.lineno, f"{node.name}.{inner.name}"))
            else:
                spans.append((node.lineno, node.end_lineno or node.lineno, node.name))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    lines.setdefault(target.id, node.lineno)
    docstring = body[:1] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else []
    return _Source(lines, len(body) == len(docstring), tuple(spans))


def read_source(path: Path) -> _Source | None:
    """The student's file ``path`` parsed (cached while it is unchanged);
    None for a link, a FIFO that would block, a file too big to bother, or
    one that does not parse."""
    try:
        info = path.lstat()
    except OSError:
        return None
    from .notebook_modules import NOTEBOOK_LIMIT, SUFFIX

    limit = NOTEBOOK_LIMIT if path.name.endswith(SUFFIX) else SOURCE_LIMIT  # a notebook carries its outputs
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        return None
    return _parse(str(path), info.st_mtime, info.st_size)


def definition_line(path: Path, function: str) -> int | None:
    """The line where ``function`` ("f", "MyExp.apply") is defined in the
    student's file ``path``: for an attribute of a class its method when the
    class defines it (``MyExp.forward`` stands for ``MyExp.apply``), else
    the class."""
    source = read_source(path)
    if source is None:
        return None
    lines = source.lines
    parts = function.split(".")
    if len(parts) > 1 and parts[1] == "apply":
        return lines.get(f"{parts[0]}.forward") or lines.get(parts[0])
    return lines.get(".".join(parts[:2])) or lines.get(parts[0])


def function_at(directory: Path, file: str, line: int) -> str | None:
    """The function or method ("Tensor.backward") of the student's ``file``
    (relative to the submission ``directory``, never outside it) that holds
    ``line``; None when there is none or the file cannot be read."""
    try:
        path = (directory / file).resolve()
        if not path.is_relative_to(directory.resolve()):
            return None
    except (OSError, ValueError, RuntimeError):
        return None
    source = read_source(path)
    if source is None:
        return None
    return next((name for first, last, name in source.spans if first <= line <= last), None)

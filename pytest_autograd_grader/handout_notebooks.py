"""``autograd-grader notebooks EXERCISES -o DIR``: one notebook per topic,
written from the stub modules, for courses that hand exercises out as
notebooks.

Each notebook holds the module's docstring as Markdown, then, in the
module's order, each function's or class's docstring as Markdown and its
stub as a code cell (the statements between them, imports and constants,
as code cells too), and a last cell, tagged ``skip-grading``, that grades
the notebook from inside it with ``notebook.check``. Handed in, the notebook
is graded as the module it stands for (``boundary/notebook_modules.py``).
"""

from __future__ import annotations

import argparse
import ast
import inspect
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .boundary.layout import is_check_file
from .boundary.notebook_modules import SKIP_TAG
from .i18n import msg

if TYPE_CHECKING:
    from nbformat import NotebookNode

CHECK_CELL = """from pytest_autograd_grader import notebook

notebook.check("{topic}")"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("exercises", help="the folder of the stub modules and their checks (test_<topic>.py)")
    parser.add_argument("-o", "--out", required=True, help="the folder to write <topic>.ipynb into")
    parser.add_argument("--force", action="store_true", help="overwrite notebooks that are already there")


def _docstring_node(node: ast.AST) -> ast.Expr | None:
    body = getattr(node, "body", None)
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[0]
    return None


def _first_line(node: ast.stmt) -> int:
    """Where the statement starts, counted from 0: its first decorator's line."""
    decorators = getattr(node, "decorator_list", None)
    return (decorators[0].lineno if decorators else node.lineno) - 1


def _without_docstring(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    """The definition's source with its docstring taken out (it is the
    Markdown cell above), unless the docstring is all the body holds."""
    first = _first_line(node)
    text = lines[first : node.end_lineno]
    doc = _docstring_node(node)
    if doc is not None and len(node.body) > 1:
        del text[doc.lineno - 1 - first : (doc.end_lineno or doc.lineno) - first]
    return "".join(text).rstrip()


def cells_of(source: str, topic: str) -> list:
    """The cells of the notebook written from the stub module ``source``."""
    from nbformat.v4 import new_code_cell, new_markdown_cell

    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    # the docstring's first line is the module's title ("Leaf tensors.")
    head, _, rest = (ast.get_docstring(tree) or topic.replace("_", " ").capitalize()).partition("\n")
    cells = [new_markdown_cell(f"# {head.strip().rstrip('.')}\n\n{rest.strip()}".strip())]
    pending: list[str] = []  # statements between definitions: one code cell
    module_doc = _docstring_node(tree)
    previous_end = module_doc.end_lineno if module_doc is not None else 0

    def flush() -> None:
        text = "".join(pending).strip("\n")
        if text.strip():
            cells.append(new_code_cell(text))
        pending.clear()

    for node in tree.body[1:] if module_doc is not None else tree.body:
        start = _first_line(node)
        gap = lines[previous_end:start]  # comments and blank lines before the statement
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            flush()
            doc = ast.get_docstring(node)
            if doc:
                cells.append(new_markdown_cell(f"## `{node.name}`\n\n{inspect.cleandoc(doc)}"))
            comments = "".join(gap).strip("\n")
            cells.append(new_code_cell((comments + "\n" if comments.strip() else "") + _without_docstring(lines, node)))
        else:
            pending.extend(gap + lines[start : node.end_lineno])
        previous_end = node.end_lineno
    flush()
    cells.append(new_code_cell(CHECK_CELL.format(topic=topic), metadata={"tags": [SKIP_TAG]}))
    return cells


def notebook_of(source: str, topic: str) -> NotebookNode:
    import nbformat
    from nbformat.v4 import new_notebook

    notebook = new_notebook(
        cells=cells_of(source, topic),
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
    )
    nbformat.validate(notebook)
    return notebook


def topics_of(exercises: Path) -> list[str]:
    """The topics that have both a checks file and a stub module."""
    return sorted(
        p.stem.removeprefix("test_")
        for p in exercises.glob("test_*.py")
        if is_check_file(p.name) and (exercises / f"{p.stem.removeprefix('test_')}.py").is_file()
    )


def run(args: argparse.Namespace) -> int:
    try:
        import nbformat
    except ImportError:
        print(msg("notebooks.needs_nbformat"), file=sys.stderr)
        return 2
    exercises, out = Path(args.exercises), Path(args.out)
    if not exercises.is_dir():
        print(msg("notebooks.not_dir", path=str(exercises)), file=sys.stderr)
        return 2
    topics = topics_of(exercises)
    if not topics:
        print(msg("notebooks.no_topics", path=str(exercises)), file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    for topic in topics:
        target = out / f"{topic}.ipynb"
        if target.exists() and not args.force:
            print(msg("notebooks.exists", path=str(target)), file=sys.stderr)
            continue
        try:
            notebook = notebook_of((exercises / f"{topic}.py").read_text(encoding="utf-8"), topic)
        except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
            print(msg("notebooks.unreadable", path=str(exercises / f"{topic}.py"), reason=str(exc)), file=sys.stderr)
            continue
        nbformat.write(notebook, target)
        written += 1
    print(msg("notebooks.written", count=written, out=str(out)))
    return 0 if written or all((out / f"{t}.ipynb").exists() for t in topics) else 1

"""The feedback for a problem on the student's side of the call (a missing
module, an import error, a raise, a hang, a crash), from the outcome the
worker reported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..i18n import msg
from ..outcomes import StudentFailure
from .decode import decode
from .layout import module_path
from .notebook_cells import load_failure_hint, missing_hint, name_error_hint, slow_cell_hint
from .notebooks import NotebookError, cell_of, read_notebook
from .records import ErrorRecord, Limits
from .shortening import shorten
from .sources import function_at
from .untrusted import quoted
from .upload_names import rename_hint


def _placed(key: str, directory: Path | None, file: str, line: Any, **fields: Any) -> str:
    """Message ``key`` at ``line`` of ``file``; where ``file`` is a notebook,
    message ``key``_cell at the cell and the line in it (read by the grader)."""
    cell = cell_of(directory, file, line)
    if cell is not None:
        return msg(f"{key}_cell", file=file, cell=cell[0], line=cell[1], **fields)
    return msg(key, file=file, line=line, **fields)


def _where(error: dict | ErrorRecord, directory: Path | None) -> str:
    if isinstance(error, ErrorRecord) and error.file:
        return _placed("student.where", directory, quoted(error.file), error.line, code=quoted(error.code))
    return ""


def module_file(directory: Path | None, module: str) -> str:
    """The name of the file the module is read from: leaf.py, or leaf.ipynb."""
    return module_path(directory, module).name if directory is not None else f"{module}.py"


def notebook_problem(path: Path) -> str | None:
    """Why the notebook ``path`` cannot be graded, read by the grader itself
    (the worker's word is not taken); None when it reads fine."""
    try:
        read_notebook(path)
    except ImportError:
        return msg("student.notebook_needs_nbformat", file=path.name)
    except NotebookError as exc:
        return msg(exc.key, file=path.name, reason=shorten(str(exc), 300), **exc.fields)
    return None


def failure_from(outcome: dict, show_output: bool = True, limits: Limits | None = None,
                 explain: Callable[[str], str | None] | None = None,
                 directory: Path | None = None) -> StudentFailure:
    """The feedback for a student-side problem reported by ``student.call``.

    ``outcome`` came from student code: a field of the wrong type or a
    missing one may raise anything here (``Submission`` turns that into a
    failed check); an error record is decoded under ``limits``. ``explain``
    names the likely mistake behind an error the student's code raised (the
    checks' diagnosis, handed down so that the boundary need not know it);
    ``directory`` (the submission) lets an unwritten part be named by its
    function when a grader function drove the module."""
    limits = limits if limits is not None else Limits()
    stage = outcome.get("stage")
    # the worker's word: each text of it quoted where it may span lines
    module = quoted(outcome.get("module", "?"))
    function = quoted(outcome.get("function", "?"))
    status, error_type, message = "failed", "", ""
    if stage == "missing":
        text = msg("student.module_missing", module=module)
        hint = rename_hint(directory, str(outcome.get("module", "")))  # leaf (1).py, a second download
        text += "\n" + hint if hint else ""
    elif stage == "empty":
        # a notebook whose every definition sits in a skip-grading cell looks empty to the grader
        text = missing_hint(directory, module, function) or \
            msg("student.empty", module=module, file=module_file(directory, module), function=function)
    elif stage == "notebook":
        path = module_path(directory, module) if directory is not None else None
        text = (notebook_problem(path) if path is not None else None) or \
            msg("student.notebook_unreadable", file=f"{module}.ipynb", reason="?")
    elif stage == "import_timeout":
        status = "timeout"
        file = module_file(directory, module)
        if outcome.get("earlier") is True:
            text = msg("student.import_timeout_earlier", module=module, file=file, seconds=outcome.get("seconds", 0))
        else:
            # a notebook stops itself just before the deadline: the cell it was running
            text = _placed("student.import_timeout", directory, file, outcome.get("line"), module=module,
                           seconds=outcome.get("seconds", 0), code=quoted(shorten(str(outcome.get("code") or ""), 200)))
            hint = slow_cell_hint(directory, module, outcome.get("cell"), outcome.get("line"))
            text += "\n" + hint if hint else ""
    elif stage == "syntax":
        # the file may be one the student's module imports
        file = outcome.get("file") or module_file(directory, module)
        if type(file) is not str:
            raise TypeError("a file name must be a string")
        file = quoted(shorten(file, 300))
        text = _placed("student.syntax_error", directory, file, outcome.get("line"), module=module,
                       message=quoted(outcome.get("message")), code=quoted(outcome.get("code", ""), block=True))
    elif stage == "import":
        error = decode(outcome["error"], limits)
        text = msg("student.import_error", module=module, file=module_file(directory, module), type=quoted(error.type),
                   message=quoted(error.message), where=_where(error, directory))
        error_type, message = error.type, error.message
        # in a notebook: the name a cell left out defines, else the cell that raised and what to do about it
        hint = (name_error_hint(directory, module, error.message) if error.type == "NameError" else None) or \
            load_failure_hint(directory, module, outcome.get("cell"))
        text += "\n" + hint if hint else ""
    elif stage == "no_function":
        text = missing_hint(directory, module, function) or \
            msg("student.no_function", module=module, file=module_file(directory, module), function=function)
    elif stage == "raised":
        error = decode(outcome["error"], limits)
        error_type, message = error.type, error.message
        if error.type == "NotImplementedError" and outcome.get("op") == "run" and error.line:
            # a grader function drove the module: name the student's unwritten part by its function
            name = function_at(directory, error.file, error.line) if directory is not None and error.file else None
            key = "student.not_implemented_in" if name else "student.not_implemented_at"
            text = _placed(key, directory, quoted(error.file), error.line, module=module, function=name,
                           code=quoted(error.code))
        elif error.type == "NotImplementedError":
            # in a notebook, the cell and line of the stub's raise: a notebook has no line numbers to look up
            cell = cell_of(directory, error.file, error.line) if error.file else None
            text = msg("student.not_implemented_in_cell", module=module, function=function, file=quoted(error.file),
                       cell=cell[0], line=cell[1]) if cell else \
                msg("student.not_implemented", module=module, function=function)
        else:
            text = msg("student.raised", module=module, function=function, type=quoted(error.type),
                       message=quoted(error.message), where=_where(error, directory))
            hint = name_error_hint(directory, module, error.message) if error.type == "NameError" else None
            hint = hint or (explain(error.message) if explain is not None else None)
            if hint:
                text += "\n" + hint
    elif stage == "exit":
        text = msg("student.exit", module=module, function=function, code=quoted(outcome.get("code")))
    elif stage == "interrupt":
        text = msg("student.interrupt", module=module, function=function)
    elif stage == "memory":
        text = msg("student.memory", module=module, function=function, limit=quoted(outcome.get("limit", "?")))
    elif stage == "too_large":  # the sandbox refused to read the answer at all
        text = msg("student.answer_too_large", module=module, function=function,
                   size=_megabytes(outcome["size"]), limit=_megabytes(outcome["limit"]))
    elif stage == "request":
        # the worker says it could not make the grader's own arguments; its
        # word is not proof, so the check stays the student's (README:
        # nothing from student code makes a check an error)
        key = "sandbox.request" if outcome.get("cuda") is True else "sandbox.request_plain"
        text = msg(key, module=module, function=function, reason=quoted(shorten(str(outcome.get("reason", "?")), 600)))
    elif stage == "unstageable":  # the sandbox could not copy the submission
        text = str(outcome["reason"])
    elif stage == "timeout":
        status = "timeout"
        text = msg("student.timeout", module=module, function=function, seconds=outcome.get("seconds", 0))
    elif stage == "crashed":
        status = "crashed"
        text = msg("student.crashed", module=module, function=function, how=quoted(outcome.get("how", "unknown cause")))
    else:
        status = "crashed"
        text = msg("student.crashed", module=module, function=function, how=f"unexpected answer {stage!r}")
    output = outcome.get("output") or ""
    if show_output and output.strip():
        text += msg("student.output", output=quoted(output.rstrip(), block=True))
    return StudentFailure(text, status=status, error_type=error_type, message=message)


def _megabytes(size: Any) -> float:
    if type(size) not in (int, float):
        raise TypeError("a size must be a number")
    return size / (1 << 20)

"""The feedback for a problem on the student's side of the call (a missing
module, an import error, a raise, a hang, a crash), from the outcome the
worker reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..i18n import msg
from ..outcomes import StudentFailure
from ..protocol import Op, Stage, Status, unknown
from .decode import decode
from .layout import module_path
from .notebook_cells import load_failure_hint, missing_hint, name_error_hint, slow_cell_hint
from .notebook_modules import NotebookError, cell_of, read_notebook
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


@dataclass(frozen=True)
class _Call:
    """What every stage's handler reads besides the outcome itself."""

    module: str  # the worker's word, quoted
    function: str
    directory: Path | None
    limits: Limits
    explain: Callable[[str], str | None] | None


@dataclass
class _Said:
    """A handler's verdict: the feedback, the status and the error raised."""

    text: str
    status: Status = Status.FAILED
    error_type: str = ""
    message: str = ""


def _with_hint(text: str, hint: str | None) -> str:
    return text + "\n" + hint if hint else text


def _missing(outcome: dict, call: _Call) -> _Said:
    text = msg("student.module_missing", module=call.module)
    # leaf (1).py, a second download
    return _Said(_with_hint(text, rename_hint(call.directory, str(outcome.get("module", "")))))


def _empty(outcome: dict, call: _Call) -> _Said:
    # a notebook whose every definition sits in a skip-grading cell looks empty to the grader
    module, directory = call.module, call.directory
    return _Said(
        missing_hint(directory, module, call.function)
        or msg("student.empty", module=module, file=module_file(directory, module), function=call.function)
    )


def _notebook(outcome: dict, call: _Call) -> _Said:
    path = module_path(call.directory, call.module) if call.directory is not None else None
    return _Said(
        (notebook_problem(path) if path is not None else None)
        or msg("student.notebook_unreadable", file=f"{call.module}.ipynb", reason="?")
    )


def _import_timeout(outcome: dict, call: _Call) -> _Said:
    module, directory = call.module, call.directory
    file = module_file(directory, module)
    if outcome.get("earlier") is True:
        text = msg("student.import_timeout_earlier", module=module, file=file, seconds=outcome.get("seconds", 0))
        return _Said(text, Status.TIMEOUT)
    # a notebook stops itself just before the deadline: the cell it was running
    text = _placed(
        "student.import_timeout",
        directory,
        file,
        outcome.get("line"),
        module=module,
        seconds=outcome.get("seconds", 0),
        code=quoted(shorten(str(outcome.get("code") or ""), 200)),
    )
    hint = slow_cell_hint(directory, module, outcome.get("cell"), outcome.get("line"))
    return _Said(_with_hint(text, hint), Status.TIMEOUT)


def _syntax(outcome: dict, call: _Call) -> _Said:
    # the file may be one the student's module imports
    file = outcome.get("file") or module_file(call.directory, call.module)
    if type(file) is not str:
        raise TypeError("a file name must be a string")
    file = quoted(shorten(file, 300))
    return _Said(
        _placed(
            "student.syntax_error",
            call.directory,
            file,
            outcome.get("line"),
            module=call.module,
            message=quoted(outcome.get("message")),
            code=quoted(outcome.get("code", ""), block=True),
        )
    )


def _import(outcome: dict, call: _Call) -> _Said:
    module, directory = call.module, call.directory
    error = decode(outcome["error"], call.limits)
    text = msg(
        "student.import_error",
        module=module,
        file=module_file(directory, module),
        type=quoted(error.type),
        message=quoted(error.message),
        where=_where(error, directory),
    )
    # in a notebook: the name a cell left out defines, else the cell that raised and what to do about it
    hint = (
        name_error_hint(directory, module, error.message) if error.type == "NameError" else None
    ) or load_failure_hint(directory, module, outcome.get("cell"))
    return _Said(_with_hint(text, hint), error_type=error.type, message=error.message)


def _no_function(outcome: dict, call: _Call) -> _Said:
    module, directory = call.module, call.directory
    return _Said(
        missing_hint(directory, module, call.function)
        or msg("student.no_function", module=module, file=module_file(directory, module), function=call.function)
    )


def _raised(outcome: dict, call: _Call) -> _Said:
    module, function, directory = call.module, call.function, call.directory
    error = decode(outcome["error"], call.limits)
    said = _Said("", error_type=error.type, message=error.message)
    if error.type == "NotImplementedError" and outcome.get("op") == Op.RUN and error.line:
        # a grader function drove the module: name the student's unwritten part by its function
        name = function_at(directory, error.file, error.line) if directory is not None and error.file else None
        key = "student.not_implemented_in" if name else "student.not_implemented_at"
        said.text = _placed(
            key, directory, quoted(error.file), error.line, module=module, function=name, code=quoted(error.code)
        )
    elif error.type == "NotImplementedError":
        # in a notebook, the cell and line of the stub's raise: a notebook has no line numbers to look up
        cell = cell_of(directory, error.file, error.line) if error.file else None
        said.text = (
            msg(
                "student.not_implemented_in_cell",
                module=module,
                function=function,
                file=quoted(error.file),
                cell=cell[0],
                line=cell[1],
            )
            if cell
            else msg("student.not_implemented", module=module, function=function)
        )
    else:
        said.text = msg(
            "student.raised",
            module=module,
            function=function,
            type=quoted(error.type),
            message=quoted(error.message),
            where=_where(error, directory),
        )
        hint = name_error_hint(directory, module, error.message) if error.type == "NameError" else None
        said.text = _with_hint(said.text, hint or (call.explain(error.message) if call.explain is not None else None))
    return said


def _exit(outcome: dict, call: _Call) -> _Said:
    return _Said(msg("student.exit", module=call.module, function=call.function, code=quoted(outcome.get("code"))))


def _interrupt(outcome: dict, call: _Call) -> _Said:
    return _Said(msg("student.interrupt", module=call.module, function=call.function))


def _memory(outcome: dict, call: _Call) -> _Said:
    return _Said(
        msg("student.memory", module=call.module, function=call.function, limit=quoted(outcome.get("limit", "?")))
    )


def _too_large(outcome: dict, call: _Call) -> _Said:
    # the sandbox refused to read the answer at all
    return _Said(
        msg(
            "student.answer_too_large",
            module=call.module,
            function=call.function,
            size=_megabytes(outcome["size"]),
            limit=_megabytes(outcome["limit"]),
        )
    )


def _request(outcome: dict, call: _Call) -> _Said:
    # the worker says it could not make the grader's own arguments; its
    # word is not proof, so the check stays the student's (README:
    # nothing from student code makes a check an error)
    key = "sandbox.request" if outcome.get("cuda") is True else "sandbox.request_plain"
    return _Said(
        msg(
            key,
            module=call.module,
            function=call.function,
            reason=quoted(shorten(str(outcome.get("reason", "?")), 600)),
        )
    )


def _unstageable(outcome: dict, call: _Call) -> _Said:
    # the sandbox could not copy the submission
    return _Said(str(outcome["reason"]))


def _timeout(outcome: dict, call: _Call) -> _Said:
    return _Said(
        msg("student.timeout", module=call.module, function=call.function, seconds=outcome.get("seconds", 0)),
        Status.TIMEOUT,
    )


def _crashed(outcome: dict, call: _Call) -> _Said:
    return _Said(
        msg(
            "student.crashed",
            module=call.module,
            function=call.function,
            how=quoted(outcome.get("how", "unknown cause")),
        ),
        Status.CRASHED,
    )


# every stage but ok (an answer, not a failure) has its handler (a test holds them equal)
HANDLERS: dict[Stage, Callable[[dict, _Call], _Said]] = {
    Stage.MISSING: _missing,
    Stage.EMPTY: _empty,
    Stage.NOTEBOOK: _notebook,
    Stage.IMPORT_TIMEOUT: _import_timeout,
    Stage.SYNTAX: _syntax,
    Stage.IMPORT: _import,
    Stage.NO_FUNCTION: _no_function,
    Stage.RAISED: _raised,
    Stage.EXIT: _exit,
    Stage.INTERRUPT: _interrupt,
    Stage.MEMORY: _memory,
    Stage.TOO_LARGE: _too_large,
    Stage.REQUEST: _request,
    Stage.UNSTAGEABLE: _unstageable,
    Stage.TIMEOUT: _timeout,
    Stage.CRASHED: _crashed,
}


def failure_from(
    outcome: dict,
    show_output: bool = True,
    limits: Limits | None = None,
    explain: Callable[[str], str | None] | None = None,
    directory: Path | None = None,
) -> StudentFailure:
    """The feedback for a student-side problem reported by ``student.call``.

    ``outcome`` came from student code: a field of the wrong type or a
    missing one may raise anything here (``Submission`` turns that into a
    failed check); an error record is decoded under ``limits``. ``explain``
    names the likely mistake behind an error the student's code raised (the
    checks' diagnosis, handed down so that the boundary need not know it);
    ``directory`` (the submission) lets an unwritten part be named by its
    function when a grader function drove the module."""
    # the worker's word: each text of it quoted where it may span lines
    call = _Call(
        quoted(outcome.get("module", "?")),
        quoted(outcome.get("function", "?")),
        directory,
        limits if limits is not None else Limits(),
        explain,
    )
    stage = Stage.of(outcome.get("stage"))
    handler = HANDLERS.get(stage) if stage is not None else None
    if handler is not None:
        said = handler(outcome, call)
    else:
        # a word the grader does not know (a hostile worker may send
        # anything): the generic crash, which tells it nothing
        unknown("stage", outcome.get("stage"))
        said = _Said(
            msg(
                "student.crashed",
                module=call.module,
                function=call.function,
                how=f"unexpected answer {outcome.get('stage')!r}",
            ),
            Status.CRASHED,
        )
    output = outcome.get("output") or ""
    if show_output and output.strip():
        said.text += msg("student.output", output=quoted(output.rstrip(), block=True))
    return StudentFailure(said.text, status=said.status, error_type=said.error_type, message=said.message)


def _megabytes(size: Any) -> float:
    if type(size) not in (int, float):
        raise TypeError("a size must be a number")
    return size / (1 << 20)

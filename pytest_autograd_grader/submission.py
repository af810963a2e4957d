"""The grader's side of the boundary: the proxy checks use to call student
functions, and the executors that carry the calls.

A proxy call sends plain data, gets plain data back and turns every
student-side problem (missing file, syntax error, exception, hang, crash)
into a ``StudentFailure`` whose feedback says what happened.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Protocol

from .diagnose import diagnose_error
from .messages import msg
from .outcomes import CheckError, StudentFailure
from .records import BoundaryError, ErrorRecord, decode, dumps, encode_argument, loads


class Executor(Protocol):
    """Carries one request to student code and returns its answer as bytes
    (see ``student.call``); a hang or crash is answered with a ``timeout`` or
    ``crashed`` outcome, never an exception."""

    def run(self, directory: str, module: str, function: str, payload: bytes, op: str, timeout: float) -> bytes: ...

    def close(self) -> None: ...


class InlineExecutor:
    """UNSAFE: runs student code inside the pytest process. For exercise
    authors who want pdb in a check, and for plain runs without ``--grade``."""

    def __init__(self) -> None:
        self.loaders: dict[str, Any] = {}

    def run(self, directory: str, module: str, function: str, payload: bytes, op: str, timeout: float) -> bytes:
        import torch

        from .student import Loader, call

        loader = self.loaders.get(directory)
        if loader is None:
            loader = self.loaders[directory] = Loader(directory, unique_names=True)
        # Student code starts with gradients on, as in a worker process, even
        # when the grader calls it from a no_grad region or a backward pass
        # (autograd.gradcheck calls the student's vjp inside one).
        with torch.enable_grad():
            return call(loader, module, function, payload, op)

    def close(self) -> None:
        self.loaders.clear()


class Budget:
    """The wall-clock time one check may spend in student code, shared by
    all proxy calls the check makes (``--grade-timeout``)."""

    def __init__(self, seconds: float):
        self.total = float(seconds)
        self.used = 0.0

    def left(self) -> float:
        return self.total - self.used

    def spend(self, seconds: float) -> None:
        self.used += max(0.0, seconds)


def _where(error: dict | ErrorRecord) -> str:
    if isinstance(error, ErrorRecord) and error.file:
        return msg("student.where", file=Path(error.file).name, line=error.line, code=error.code)
    return ""


def failure_from(outcome: dict, show_output: bool = True) -> StudentFailure:
    """The feedback for a student-side problem reported by ``student.call``."""
    stage = outcome.get("stage")
    module = outcome.get("module", "?")
    function = outcome.get("function", "?")
    status, error_type, message = "failed", "", ""
    if stage == "missing":
        text = msg("student.module_missing", module=module, directory=outcome.get("directory", "?"))
    elif stage == "syntax":
        # the file may be one the student's module imports
        file = Path(outcome.get("file") or f"{module}.py").name
        text = msg("student.syntax_error", module=module, file=file, line=outcome.get("line"),
                   message=outcome.get("message"), code=outcome.get("code", ""))
    elif stage == "import":
        error = decode(outcome["error"])
        text = msg("student.import_error", module=module, type=error.type, message=error.message, where=_where(error))
        error_type, message = error.type, error.message
    elif stage == "no_function":
        text = msg("student.no_function", module=module, function=function)
    elif stage == "raised":
        error = decode(outcome["error"])
        error_type, message = error.type, error.message
        if error.type == "NotImplementedError":
            text = msg("student.not_implemented", module=module, function=function)
        else:
            text = msg("student.raised", module=module, function=function, type=error.type,
                       message=error.message, where=_where(error))
            hint = diagnose_error(error.message)
            if hint:
                text += "\n" + hint
    elif stage == "exit":
        text = msg("student.exit", module=module, function=function, code=outcome.get("code"))
    elif stage == "interrupt":
        text = msg("student.interrupt", module=module, function=function)
    elif stage == "memory":
        text = msg("student.memory", module=module, function=function, limit=outcome.get("limit", "?"))
    elif stage == "timeout":
        status = "timeout"
        text = msg("student.timeout", module=module, function=function, seconds=outcome.get("seconds", 0))
    elif stage == "crashed":
        status = "crashed"
        text = msg("student.crashed", module=module, function=function, how=outcome.get("how", "unknown cause"))
    else:
        status = "crashed"
        text = msg("student.crashed", module=module, function=function, how=f"unexpected answer {stage!r}")
    output = outcome.get("output") or ""
    if show_output and output.strip():
        text += msg("student.output", output=output.rstrip())
    return StudentFailure(text, status=status, error_type=error_type, message=message)


class Submission:
    """``submission("leaf")``: one student module, reachable only by calls."""

    def __init__(self, executor: Executor, directory: Path, module: str, timeout: "float | Budget"):
        self._executor = executor
        self._directory = str(directory)
        self._module = module
        # A Budget is shared by every call of one check; a number limits each call.
        self._budget = timeout if isinstance(timeout, Budget) else None
        self._timeout = timeout.total if isinstance(timeout, Budget) else timeout

    def __getattr__(self, name: str) -> "StudentFunction":
        if name.startswith("__"):
            raise AttributeError(name)
        return StudentFunction(self, name)

    def __repr__(self) -> str:
        return f"<submission {self._module} from {self._directory}>"

    def _request(self, path: str, op: str, args: tuple, kwargs: dict, grad_outputs=None) -> dict:
        try:
            request = {"args": encode_argument(tuple(args)), "kwargs": encode_argument(dict(kwargs))}
            if grad_outputs is not None:
                request["grad_outputs"] = encode_argument(tuple(grad_outputs))
        except BoundaryError as exc:
            raise CheckError(str(exc)) from None
        payload = dumps(request)
        budget = self._budget
        if budget is not None and budget.left() <= 0:
            return {"stage": "timeout", "seconds": budget.total, "module": self._module, "function": path}
        started = time.monotonic()
        answer = self._executor.run(self._directory, self._module, path, payload, op,
                                    budget.left() if budget is not None else self._timeout)
        if budget is not None:
            # time in student code only (the executor's own start-up excluded)
            spent = getattr(self._executor, "last_run_seconds", None)
            budget.spend(spent if isinstance(spent, float) else time.monotonic() - started)
        outcome = loads(answer)
        if type(outcome) is not dict or "stage" not in outcome:
            raise StudentFailure(msg("student.crashed", module=self._module, function=path, how="unreadable answer"),
                                 status="crashed")
        outcome.setdefault("module", self._module)
        outcome.setdefault("function", path)
        if budget is not None and outcome.get("stage") == "timeout":
            outcome["seconds"] = budget.total
        return outcome


class StudentFunction:
    """A function (or class attribute, e.g. ``MyExp.apply``) in a student
    module; calling it returns records, never live objects."""

    def __init__(self, submission: Submission, path: str):
        self._submission = submission
        self._path = path

    def __getattr__(self, name: str) -> "StudentFunction":
        if name.startswith("__"):
            raise AttributeError(name)
        return StudentFunction(self._submission, f"{self._path}.{name}")

    def __repr__(self) -> str:
        return f"<student function {self._submission._module}.{self._path}>"

    @property
    def qualname(self) -> str:
        return f"{self._submission._module}.{self._path}"

    def _value(self, outcome: dict):
        try:
            return decode(outcome["value"])
        except BoundaryError as exc:
            raise StudentFailure(msg("student.unsupported_return", module=self._submission._module,
                                     function=self._path, type=str(exc))) from None

    def __call__(self, *args, **kwargs):
        outcome = self._submission._request(self._path, "call", args, kwargs)
        if outcome["stage"] != "ok":
            raise failure_from(outcome)
        return self._value(outcome)

    def capture(self, *args, **kwargs):
        """Like calling, but an exception the student's code raises comes back
        as an ``ErrorRecord`` instead of failing the check."""
        outcome = self._submission._request(self._path, "call", args, kwargs)
        if outcome["stage"] == "raised":
            error = decode(outcome["error"])
            if error.type != "NotImplementedError":
                return error
            # an untouched stub still says "not implemented yet"
        if outcome["stage"] != "ok":
            raise failure_from(outcome)
        return self._value(outcome)

    def vjp(self, inputs: tuple, grad_outputs: tuple):
        """Run the function on ``inputs`` and backpropagate ``grad_outputs``
        through the student's own graph; return (output records, gradients)."""
        outcome = self._submission._request(self._path, "vjp", tuple(inputs), {}, grad_outputs=grad_outputs)
        if outcome["stage"] != "ok":
            raise failure_from(outcome)
        return self._value(outcome)

"""The grader's side of the boundary: the proxy checks use to call student
functions, and the executors that carry the calls.

A proxy call sends plain data, gets plain data back and turns every
student-side problem (missing file, syntax error, exception, hang, crash)
into a ``StudentFailure`` whose feedback says what happened
(``failures.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from ..i18n import msg
from ..outcomes import CheckError, GradeFailure, StudentFailure
from ..protocol import Op, Stage, Status
from . import tracing
from .arguments import encode_request
from .call_places import CallPlaces
from .decode import decode
from .failures import failure_from
from .layout import module_path
from .records import BoundaryError, Limits
from .sources import read_source
from .tracing import Trace
from .wire import dumps, loads


class Executor(Protocol):
    """Carries one request to student code and returns its answer as bytes
    (see ``student.call``); a hang or crash is answered with a ``timeout`` or
    ``crashed`` outcome, never an exception."""

    def run(
        self,
        directory: str,
        module: str,
        function: str,
        payload: bytes,
        op: str,
        timeout: float,
        numpy_only: bool = False,
    ) -> bytes: ...

    def close(self) -> None: ...


class InlineExecutor:
    """UNSAFE: runs student code inside the pytest process. For exercise
    authors who want pdb in a check, and for plain runs without ``--grade``."""

    def __init__(self) -> None:
        self.loaders: dict[str, Any] = {}

    def start(self) -> None:
        """Nothing to start ahead: the student's code runs in this process."""

    def run(
        self,
        directory: str,
        module: str,
        function: str,
        payload: bytes,
        op: str,
        timeout: float,
        numpy_only: bool = False,
    ) -> bytes:
        import torch

        from .module_loader import Loader
        from .student import call

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


def _reason(exc: BaseException) -> str:
    """Why an answer could not be read, without a word of the answer: a
    BoundaryError under Limits says only what the grader measured, and of
    anything else only the (built-in) exception type is told, and the
    protocol's own (a ProtocolWarning made an error by the grader's tests)."""
    if isinstance(exc, BoundaryError):
        return str(exc)
    name = type(exc).__name__ if type(exc).__module__ in ("builtins", Stage.__module__) else "error"
    return msg("limit.malformed", problem=name)


def _holds_cuda(tree: Any) -> bool:
    if type(tree) is dict:
        if tree.get("$") == "tensor":
            return str(tree.get("device", "")).startswith("cuda")
        return any(_holds_cuda(value) for value in tree.values())
    return type(tree) in (list, tuple) and any(_holds_cuda(value) for value in tree)


class Submission:
    """``submission("leaf")``: one student module, reachable only by calls.

    Every answer is read under ``limits`` (default ``Limits()``); an answer
    that breaks them or cannot be read fails the check, never errors it. The
    time spent reading counts in the check's ``Budget``. ``on_value`` is
    called with every value handed back to the check."""

    # the options are keywords, each a listener or limit of the check that
    # fixtures.py passes by name: a bundle of them would only be unpacked again
    def __init__(  # noqa: PLR0913  (keyword options)
        self,
        executor: Executor,
        directory: Path,
        module: str,
        timeout: float | Budget,
        *,
        limits: Limits | None = None,
        on_value: Callable[[Any], None] | None = None,
        on_trace: Callable[[Trace], None] | None = None,
        numpy_only: bool = False,
        on_place: Callable[..., None] | None = None,
        explain: Callable[[str], str | None] | None = None,
        on_remark: Callable[[str], None] | None = None,
    ) -> None:
        self._executor = executor
        self._directory = str(directory)
        self._module = module
        # A Budget is shared by every call of one check; a number limits each call.
        self._budget = timeout if isinstance(timeout, Budget) else None
        self._timeout = timeout.total if isinstance(timeout, Budget) else timeout
        self._limits = limits if limits is not None else Limits()
        self._on_value = on_value
        self._on_trace = on_trace
        self._numpy_only = numpy_only  # run in a worker that cannot import torch (sandbox only)
        # where in the student's files each call went, told to on_place (and which definition was graded, to on_remark)
        self._places = CallPlaces(Path(self._directory), module, on_place, on_remark) if on_place is not None else None
        self._explain = explain  # an error's likely mistake, for its feedback (checking.diagnose)

    def __getattr__(self, name: str) -> StudentFunction:
        if name.startswith("__"):
            raise AttributeError(name)
        return StudentFunction(self, name)

    def __repr__(self) -> str:
        return f"<submission {self._module} from {self._directory}>"

    @property
    def module(self) -> str:
        """The name of the student's module this proxy loads ("engine")."""
        return self._module

    def run(self, function: Callable[..., Any], *args: Any) -> Any:
        """``function(module, *args)`` in the worker, where ``module`` is this
        student module: ``function`` must be importable there by its module
        and name (a function of the grader's package, say the engine track's
        program interpreter). Returns plain data, as any call does."""
        name = getattr(function, "__name__", None) or getattr(function, "qualname", "run")
        if type(name) is not str:
            name = "run"
        outcome = self._request(name, Op.RUN, (function, *args), {})
        outcome["op"] = Op.RUN
        return StudentFunction(self, outcome["function"])._answer(outcome)

    def _request(
        self,
        path: str,
        op: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        grad_outputs: Iterable[Any] | None = None,
    ) -> dict[str, Any]:
        # what cannot be handed to the worker is refused here, as the check's
        # mistake (CheckValueError), naming the argument
        named = f"{self._module}.{'run()' if op == Op.RUN else path}"
        request = encode_request(
            tuple(args),
            dict(kwargs),
            None if grad_outputs is None else tuple(grad_outputs),
            function=named,
            numpy_only=self._numpy_only,
            run=op == Op.RUN,
        )
        payload = dumps(request)
        budget = self._budget
        if budget is not None and budget.left() <= 0:
            return {"stage": Stage.TIMEOUT, "seconds": budget.total, "module": self._module, "function": path}
        started = time.monotonic()
        timeout = budget.left() if budget is not None else self._timeout
        answer = self._executor.run(
            self._directory,
            self._module,
            path,
            payload,
            op,
            timeout,
            **({"numpy_only": True} if self._numpy_only else {}),
        )
        if budget is not None:
            # time in student code only (the executor's own start-up excluded)
            spent = getattr(self._executor, "last_run_seconds", None)
            budget.spend(spent if isinstance(spent, float) else time.monotonic() - started)
        outcome = self._read(path, lambda: loads(answer, self._limits))
        if type(outcome) is not dict or type(outcome.get("stage")) is not str:
            raise self._unreadable(path, BoundaryError(msg("limit.malformed", problem="outcome")))
        # The grader knows what it called and where (a sandbox may run a copy
        # of the submission elsewhere); the answer's own names are not needed.
        outcome["module"], outcome["function"] = self._module, path
        if outcome["stage"] == Stage.NO_FUNCTION:
            # a module with nothing in it was not attempted (the grader reads
            # that from the file itself)
            source = read_source(module_path(Path(self._directory), self._module))
            if source is not None and source.empty:
                outcome["stage"] = Stage.EMPTY
        if outcome["stage"] == Stage.REQUEST:
            # the CUDA advice only where the grader sent CUDA tensors
            outcome["cuda"] = _holds_cuda(request)
        if (
            budget is not None
            and outcome["stage"] in (Stage.TIMEOUT, Stage.IMPORT_TIMEOUT)
            and outcome.get("earlier") is not True
        ):
            outcome["seconds"] = budget.total
        return outcome

    def _read(self, path: str, read: Callable[[], Any]) -> Any:
        """Run ``read`` (loading or decoding an answer): its time counts in the
        budget, and any failure but a GradeFailure fails the check."""
        started = time.monotonic()
        try:
            return read()
        except GradeFailure:
            raise
        except Exception as exc:
            raise self._unreadable(path, exc) from None
        finally:
            if self._budget is not None:
                self._budget.spend(time.monotonic() - started)

    def _unreadable(self, path: str, exc: BaseException) -> StudentFailure:
        if isinstance(exc, BoundaryError) and exc.cap == "max_bytes":
            text = msg(
                "student.answer_too_large",
                module=self._module,
                function=path,
                size=exc.measured / (1 << 20),
                limit=exc.limit / (1 << 20),
            )
        else:
            text = msg("student.unreadable", module=self._module, function=path, reason=_reason(exc))
        return StudentFailure(text, status=Status.FAILED)

    def _handed_back(self, value: Any) -> Any:
        if self._on_value is not None:
            self._on_value(value)
        return value


class Submissions:
    """The ``submission`` fixture: ``submission("leaf")`` returns the proxy
    of a student module; ``submission.trace`` is the autograd trace of the
    check's most recent student call (``tracing.Trace``), ``traces`` all of
    them in order."""

    def __init__(self, load: Callable[..., Submission], on_tampered: Callable[[str], None] | None = None):
        self._load = load
        self._traces: list[Trace] = []
        self._on_tampered = on_tampered

    def __call__(self, module: str, *, numpy_only: bool = False) -> Submission:
        """``numpy_only=True``: the module runs where torch cannot be
        imported (a student's own autograd engine must not delegate to
        torch.autograd); arguments and answers are then plain data and numpy
        arrays. ``--grade-inline`` cannot enforce it."""
        return self._load(module, on_trace=self._traces.append, numpy_only=numpy_only)

    @property
    def trace(self) -> Trace:
        """The latest call's trace. One the student's code changed the
        recording of tells nothing: the check gets an empty trace and
        ``on_tampered`` hears why (the check's instruction is then broken);
        without ``on_tampered`` reading it fails the check."""
        return self._untampered(self._traces[-1]) if self._traces else Trace()

    @property
    def traces(self) -> list[Trace]:
        return [self._untampered(trace) for trace in self._traces]

    def _untampered(self, trace: Trace) -> Trace:
        if not trace.tampered:
            return trace
        text = msg("trace.tampered", how=", ".join(msg(f"trace.tampered.{how}") for how in trace.tampered))
        if self._on_tampered is None:
            raise GradeFailure(text)
        self._on_tampered(text)
        return Trace()


class StudentFunction:
    """A function (or class attribute, e.g. ``MyExp.apply``) in a student
    module; calling it returns records, never live objects."""

    def __init__(self, submission: Submission, path: str):
        self._submission = submission
        self._path = path

    def __getattr__(self, name: str) -> StudentFunction:
        if name.startswith("__"):
            raise AttributeError(name)
        return StudentFunction(self._submission, f"{self._path}.{name}")

    def __repr__(self) -> str:
        return f"<student function {self._submission._module}.{self._path}>"

    @property
    def qualname(self) -> str:
        return f"{self._submission._module}.{self._path}"

    def _answer(self, outcome: dict[str, Any], capture: bool = False) -> Any:
        """The decoded value of an answer, or the failure it reports; with
        ``capture`` an exception the student's code raised is the value."""
        submission = self._submission
        limits = submission._limits

        def read() -> Any:
            if submission._places is not None:
                submission._places.note(outcome, limits)
            trace = None
            if outcome["stage"] in (Stage.OK, Stage.RAISED):
                trace = tracing.read(outcome.get("trace"))
                if submission._on_trace is not None:
                    submission._on_trace(trace)
            if capture and outcome["stage"] == Stage.RAISED:
                error = decode(outcome["error"], limits, trace)
                if error.type != "NotImplementedError":
                    return error
                # an untouched stub still says "not implemented yet"
            if outcome["stage"] != Stage.OK:
                raise failure_from(
                    outcome, limits=limits, explain=submission._explain, directory=Path(submission._directory)
                )
            return decode(outcome["value"], limits, trace)

        return submission._handed_back(submission._read(self._path, read))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._answer(self._submission._request(self._path, Op.CALL, args, kwargs))

    def capture(self, *args: Any, **kwargs: Any) -> Any:
        """Like calling, but an exception the student's code raises comes back
        as an ``ErrorRecord`` instead of failing the check."""
        return self._answer(self._submission._request(self._path, Op.CALL, args, kwargs), capture=True)

    def answers_ahead(self, calls: list[tuple[Any, ...]], vjp: bool = False) -> list[Any] | None:
        """What the function returns for each argument tuple of ``calls``
        (with ``vjp``: what ``vjp`` returns for each (inputs, grad_outputs)
        of ``calls``), asked in one request instead of one each: for calls
        a check is about to make anyway and whose arguments it knows
        beforehand (gradcheck's finite differences and Jacobian rows).
        None when any of them fails, or when the check's calls do not share
        one time budget (a hang would then cost its timeout twice): the
        check makes each call itself, and the failure is told as it always
        was."""
        from .student import call_each, vjp_each

        if self._submission._budget is None:
            return None
        try:
            answers = self._submission.run(vjp_each if vjp else call_each, self._path, [tuple(call) for call in calls])
        except (GradeFailure, CheckError):
            return None
        return answers if type(answers) is list and len(answers) == len(calls) else None

    def vjp(self, inputs: tuple[Any, ...], grad_outputs: tuple[Any, ...]) -> Any:
        """Run the function on ``inputs`` and backpropagate ``grad_outputs``
        through the student's own graph; return (output records, gradients)."""
        outcome = self._submission._request(self._path, Op.VJP, tuple(inputs), {}, grad_outputs=grad_outputs)
        return self._answer(outcome)

"""The student's side of the boundary: call one function of a student
module (loaded by ``module_loader.Loader``), and answer with plain data only.

This runs wherever student code runs (a sandbox worker, or the pytest
process in the unsafe inline mode) and never decides a verdict.
"""

from __future__ import annotations

import contextlib
import errno
import io
import sys
from typing import Any

from ..protocol import Op, Stage
from . import helpers, tracing, wire
from .encode import encode
from .module_loader import Loader, StageError
from .shortening import ELLIPSIS, cut_point, shorten
from .wire import loads

OUTPUT_LIMIT = 4000


class _CappedText(io.TextIOBase):
    """Keeps the first OUTPUT_LIMIT characters of what student code prints."""

    def __init__(self, limit: int = OUTPUT_LIMIT):
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        text = str(text)
        room = self.limit - self.size
        if room > 0:
            self.parts.append(text[:room])
            self.size += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def getvalue(self) -> str:
        text = "".join(self.parts)
        if not self.dropped:
            return text
        # the cut fell where the room ended, perhaps inside a word: back to the last boundary
        kept, closers = cut_point(text, len(text))
        dropped = self.dropped + len(text) - kept
        return text[:kept] + ELLIPSIS + closers + f"\n... ({dropped} more characters not shown)"


def _resolve(obj: Any, path: str):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def call_each(module: Any, function: str, calls: list) -> list:
    """``function`` of the student's ``module`` called once for each
    argument tuple of ``calls``, in order: what it returns each time (the
    ``run`` op, which a worker imports from here; see
    ``StudentFunction.answers_ahead``)."""
    target = _resolve(module, function)
    return [target(*args) for args in calls]


def vjp_each(module: Any, function: str, calls: list) -> list:
    """``call_each`` for the ``vjp`` op: each of ``calls`` is (inputs,
    output gradients), and each answer what a ``vjp`` request answers."""
    target = _resolve(module, function)
    return [_vjp(target, args, grad_outputs, None) for args, grad_outputs in calls]


def materialize(tree: Any) -> Any:
    """Turn argument trees into live objects for student code: tensors become
    fresh leaves, function references are imported."""
    if type(tree) is not dict:
        return tree
    tag = tree.get("$")
    if tag == "tensor":
        return tree["data"].clone().requires_grad_(tree["requires_grad"])
    if tag == "list":
        return [materialize(x) for x in tree["items"]]
    if tag == "tuple":
        return tuple(materialize(x) for x in tree["items"])
    if tag == "dict":
        return {k: materialize(v) for k, v in zip(tree["keys"], tree["values"])}
    if tag == "ndarray":
        data = tree["data"]
        array = data if type(data).__module__ == "numpy" else data.numpy()  # a torch worker reads a tensor
        array = array.copy()
        return array[()] if tree.get("scalar") else array
    if tag == "function":
        return helpers.rebuild(tree, materialize)
    raise ValueError(f"cannot pass {tag!r} to student code")


@contextlib.contextmanager
def _traced(rec):
    """Record the student's torch calls into ``rec``; whatever the student's
    code did to torch's mode stack, it is as it was before afterwards."""
    if rec is None:
        yield
        return
    import torch

    depth = torch._C._len_torch_function_stack()
    runs = tracing.engine_runs()
    rec.__enter__()
    try:
        yield
    finally:
        rec.engine_runs = tracing.engine_runs() - runs
        try:
            rec.left_stack = not (
                torch._C._len_torch_function_stack() > depth and torch._C._get_function_stack_at(depth) is rec
            )
        except BaseException:
            rec.left_stack = True
        try:
            rec.__exit__(None, None, None)
        except BaseException:
            pass
        while torch._C._len_torch_function_stack() > depth:
            torch._C._pop_torch_function_stack()


def _vjp(fn, args, grad_outputs, rec):
    """Run fn on leaves, then backpropagate grad_outputs through the student's
    own graph (their custom backward included); return outputs and grads."""
    import torch

    with _traced(rec):
        out = fn(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    inputs = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    pairs = [(o, g) for o, g in zip(outs, grad_outputs) if isinstance(o, torch.Tensor) and o.requires_grad]
    grads = (
        torch.autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True)
        if pairs
        else [None] * len(inputs)
    )
    return out, tuple(grads)


def _out_of_memory(exc: BaseException) -> bool:
    """torch's allocators report an exhausted memory limit as RuntimeError."""
    if isinstance(exc, MemoryError):
        return True
    if type(exc) is OSError and exc.errno in (errno.ENOMEM, errno.ENOSPC):
        # a mapping past the address-space limit, a memory file or SysV
        # segment (refused), or a full /tmp or /dev/shm (sandbox/memory.py)
        return True
    if not isinstance(exc, RuntimeError) or type(exc).__module__.split(".")[0] not in ("builtins", "torch"):
        return False
    try:
        text = str(exc)
    except BaseException:
        return False
    return "can't allocate memory" in text or "out of memory" in text.lower()


class _CallTrace:
    """The recorder of one call, once made, and what the answer takes of it."""

    def __init__(self) -> None:
        self.rec: Any = None

    def fields(self, value: Any = None) -> dict:
        return {"trace": self.rec.plain(value)} if self.rec is not None else {}

    def raised_at(self) -> Any:
        # the link from an error to the traced torch call that raised it:
        # this call's own facts, handed to encode (nothing kept between calls)
        return self.rec.facts.raised_at if self.rec is not None else None


def call(
    loader: Loader,
    module: str,
    function: str,
    payload: bytes,
    op: str = Op.CALL,
    *,
    capture: bool = True,
    memory_limit: int | None = None,
) -> bytes:
    """Run one request; the answer is always bytes of plain data.

    ``op`` is ``call`` (a function), ``vjp`` (a function, then backward of
    given output gradients through it) or ``run`` (the first argument, a
    function the worker can import, called with the module and the rest). With ``capture`` what student code
    prints is kept in the answer's ``output``; a sandbox worker passes False
    and lets the grader read its stdout/stderr pipe instead (which also sees
    output written at the C level, and survives a crash). ``memory_limit``
    (MB) is reported with a ``memory`` outcome.

    The answer is made with ``wire.dumps`` as it stands when the answer is
    made: student code can patch it in this process anyway, and the grader
    trusts none of the bytes it gets back (``records.Limits``).
    """
    output = _CappedText()
    traced = _CallTrace()
    try:
        return _answer(loader, module, function, payload, op, capture, output, traced)
    except StageError as exc:
        return wire.dumps({**exc.outcome, "output": output.getvalue()})
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, (int, str, type(None))) else repr(exc.code)
        return wire.dumps(
            {"stage": Stage.EXIT, "module": module, "function": function, "code": code, "output": output.getvalue()}
        )
    except KeyboardInterrupt:
        return wire.dumps(
            {"stage": Stage.INTERRUPT, "module": module, "function": function, "output": output.getvalue()}
        )
    except BaseException as exc:
        if _out_of_memory(exc):
            return wire.dumps(
                {
                    "stage": Stage.MEMORY,
                    "module": module,
                    "function": function,
                    "limit": memory_limit if memory_limit is not None else "?",
                    "output": output.getvalue(),
                }
            )
        return wire.dumps(
            {
                "stage": Stage.RAISED,
                "module": module,
                "function": function,
                "error": encode(exc, loader.in_student_file, raised_at=traced.raised_at()),
                "output": output.getvalue(),
                **traced.fields(),
            }
        )


def _answer(
    loader: Loader,
    module: str,
    function: str,
    payload: bytes,
    op: str,
    capture: bool,
    output: _CappedText,
    traced: _CallTrace,
) -> bytes:
    """``call``'s steps: load the module, read the request, find the
    function, run it traced; what the student's code raises is ``call``'s."""
    mod = loader.load(module)
    if op == Op.LOAD:
        # the sandbox imports a module on its own first, so an import that
        # never ends is told apart from a function that never ends
        return wire.dumps({"stage": Stage.OK, "value": None, "output": output.getvalue()})
    try:
        args, kwargs, grad_outputs = _arguments(payload, op)
    except Exception as exc:
        # the grader's own arguments cannot be made here (CUDA that will
        # not start in the sandbox, say): not the student's doing
        cause = exc.__context__ or exc
        return wire.dumps(
            {
                "stage": Stage.REQUEST,
                "reason": shorten(f"{type(cause).__name__}: {cause}", 600),
                "output": output.getvalue(),
            }
        )
    if op == Op.RUN:
        # a grader function that drives the student's module (the engine
        # track's program interpreter): the module is its first argument
        target, args = args[0], (mod, *args[1:])
    else:
        try:
            target = _resolve(mod, function)
        except AttributeError:
            return wire.dumps({"stage": Stage.NO_FUNCTION, "module": module, "function": function})
    # a numpy-only worker (the engine track) has no torch to trace
    rec = traced.rec = tracing.recorder() if "torch" in sys.modules else None
    if rec is not None:
        rec.watch(args)
    with (
        contextlib.redirect_stdout(output) if capture else contextlib.nullcontext(),
        contextlib.redirect_stderr(output) if capture else contextlib.nullcontext(),
    ):
        value = _vjp(target, args, grad_outputs, rec) if op == Op.VJP else _run_traced(target, args, kwargs, rec)
    return wire.dumps(
        {
            "stage": Stage.OK,
            "value": encode(value, loader.in_student_file, raised_at=traced.raised_at()),
            "output": output.getvalue(),
            **traced.fields(value),
        }
    )


def _arguments(payload: bytes, op: str) -> tuple[Any, Any, Any]:
    """The request's arguments, keyword arguments and (``vjp``) output gradients."""
    # a numpy-only worker never loads torch: its arrays are read as arrays
    request = loads(payload, arrays="torch" not in sys.modules)
    args = materialize(request["args"])
    kwargs = materialize(request["kwargs"])
    grad_outputs = materialize(request["grad_outputs"]) if op == Op.VJP else None
    return args, kwargs, grad_outputs


def _run_traced(target: Any, args: Any, kwargs: Any, rec: Any) -> Any:
    with _traced(rec):
        return target(*args, **kwargs)

"""The student's side of the boundary: load a student module, call one of its
functions, and answer with plain data only.

This runs wherever student code runs (a sandbox worker, or the pytest
process in the unsafe inline mode) and never decides a verdict.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import importlib.util
import io
import os
import sys
from pathlib import Path
from typing import Any

from ..protocol import Op, Stage
from . import given, helpers, notebook_modules, tracing, wire
from .encode import encode
from .layout import module_path
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


class Loader:
    """Loads student modules from one directory, once each per process."""

    def __init__(self, directory: str, unique_names: bool = False):
        self.directory = str(Path(directory).resolve())
        self.unique_names = unique_names
        self.modules: dict[str, Any] = {}
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

    def load(self, module: str):
        if module in self.modules:
            return self.modules[module]
        path = module_path(Path(self.directory), module)
        if not path.is_file():
            raise _StageError({"stage": Stage.MISSING, "module": module, "directory": self.directory})
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

    def _run(self, module: str, name: str, body) -> None:
        try:
            body()
        except SyntaxError as exc:
            sys.modules.pop(name, None)
            # The error may sit in a module the student's module imports.
            raise _StageError({"stage": Stage.SYNTAX, "module": module,
                               "file": self.in_student_file(exc.filename or "") or Path(exc.filename or "").name,
                               "line": exc.lineno or 0,
                               "message": exc.msg or str(exc), "code": shorten((exc.text or "").strip(), 200)}) from None
        except _ImportTimeout as exc:
            sys.modules.pop(name, None)
            fields = encode(exc, self.in_student_file)
            cell = {"cell": self.running_cell} if self.running_cell is not None else {}
            raise _StageError({"stage": Stage.IMPORT_TIMEOUT, "module": module, "seconds": self.import_seconds,
                               "file": fields.get("file", ""), "line": fields.get("line", 0),
                               "code": fields.get("code", ""), **cell}) from None
        except BaseException as exc:
            sys.modules.pop(name, None)
            # a notebook's cell that raised, though the line may be in a function an earlier cell defined
            cell = {"cell": self.running_cell} if self.running_cell is not None else {}
            raise _StageError({"stage": Stage.IMPORT, "module": module,
                               "error": encode(exc, self.in_student_file), **cell}) from None
        finally:
            self.running_cell = None

    def _notebook(self, name: str, module: str, path: Path):
        """A notebook's code cells run as a module (notebook_modules.py), with its
        lines registered so that tracebacks quote them; stopped just before
        the grader's own deadline, so the answer says which cell was running."""
        import linecache
        import types

        try:
            notebook = notebook_modules.read_notebook(path)
        except (notebook_modules.NotebookError, ImportError):
            raise _StageError({"stage": Stage.NOTEBOOK, "module": module}) from None
        source = notebook.source
        filename = str(path)
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        mod = types.ModuleType(name)
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


def _display(*values, **_options) -> None:
    """IPython's display() outside a kernel: each value's text, printed."""
    for value in values:
        print(repr(value))


class _ImportTimeout(BaseException):
    """A notebook's top-level code ran past its time: raised where it was."""


@contextlib.contextmanager
def _stopped_after(seconds: float):
    """Raise _ImportTimeout in the running code after ``seconds`` (0: never).
    Student code may undo this; the grader's own deadline still holds."""
    import signal
    import threading

    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise _ImportTimeout()

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _StageError(Exception):
    def __init__(self, outcome: dict):
        super().__init__(outcome.get("stage"))
        self.outcome = outcome


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
            rec.left_stack = not (torch._C._len_torch_function_stack() > depth
                                  and torch._C._get_function_stack_at(depth) is rec)
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
    grads = torch.autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True) if pairs else [None] * len(inputs)
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


def call(loader: Loader, module: str, function: str, payload: bytes, op: str = Op.CALL, *,
         capture: bool = True, memory_limit: int | None = None) -> bytes:
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
    except _StageError as exc:
        return wire.dumps({**exc.outcome, "output": output.getvalue()})
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, (int, str, type(None))) else repr(exc.code)
        return wire.dumps({"stage": Stage.EXIT, "module": module, "function": function, "code": code, "output": output.getvalue()})
    except KeyboardInterrupt:
        return wire.dumps({"stage": Stage.INTERRUPT, "module": module, "function": function, "output": output.getvalue()})
    except BaseException as exc:
        if _out_of_memory(exc):
            return wire.dumps({"stage": Stage.MEMORY, "module": module, "function": function,
                          "limit": memory_limit if memory_limit is not None else "?", "output": output.getvalue()})
        return wire.dumps({"stage": Stage.RAISED, "module": module, "function": function,
                              "error": encode(exc, loader.in_student_file, raised_at=traced.raised_at()),
                           "output": output.getvalue(), **traced.fields()})


def _answer(loader: Loader, module: str, function: str, payload: bytes, op: str, capture: bool,
            output: _CappedText, traced: _CallTrace) -> bytes:
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
        return wire.dumps({"stage": Stage.REQUEST, "reason": shorten(f"{type(cause).__name__}: {cause}", 600),
                           "output": output.getvalue()})
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
    with (contextlib.redirect_stdout(output) if capture else contextlib.nullcontext()), \
            (contextlib.redirect_stderr(output) if capture else contextlib.nullcontext()):
        value = _vjp(target, args, grad_outputs, rec) if op == Op.VJP else _run_traced(target, args, kwargs, rec)
    return wire.dumps({"stage": Stage.OK, "value": encode(value, loader.in_student_file, raised_at=traced.raised_at()),
                       "output": output.getvalue(), **traced.fields(value)})


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

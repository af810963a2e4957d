"""Turning what the student's code returned or raised into a tree of plain
values (either side of the boundary): tensors become plain tensors, errors
become the fields the grader reads, anything else a short description.
"""

from __future__ import annotations

import dis
import importlib.util
import inspect
import os
import sys
import types
from typing import Any

from .records import MAX_DEPTH, MAX_ITEMS, PRIMITIVES, REPR_LIMIT, STUDENT_PREFIX, FunctionRef
from .shortening import shorten

# -- encoding (either side) ----------------------------------------------


def _plain_tensor(t):
    import torch

    # as_subclass drops any subclass. No copy: every tree made here is
    # written by wire.dumps at once, which copies the bytes.
    return torch.Tensor.as_subclass(t.detach(), torch.Tensor)


def _short_repr(obj: object) -> str:
    try:
        text = repr(obj)
    except BaseException as exc:  # a student's __repr__ may raise anything
        text = f"<repr failed: {type(exc).__name__}>"
    if not isinstance(text, str):
        text = "<repr returned a non-string>"
    return shorten(text, REPR_LIMIT)


def _torch_dir() -> str:
    spec = importlib.util.find_spec("torch")
    origin = spec.origin if spec is not None else None
    return os.path.dirname(os.path.abspath(origin)) if origin else ""


# Found once, when the grader's modules are imported (in a sandbox worker:
# before any student code runs), so patching torch.__file__ changes nothing.
_TORCH_DIR = _torch_dir()
_RAISES = {"RAISE_VARARGS", "RERAISE"}
# Where a generator or coroutine frame stands while suspended or not yet
# started: an exception seen there was thrown in with .throw(), not raised by
# C code the frame called (3.10: YIELD_VALUE, -2 before the start; 3.11-3.12:
# RETURN_GENERATOR, YIELD_VALUE; 3.13: POP_TOP before the start, RESUME).
_SUSPENDED = {
    "YIELD_VALUE",
    "YIELD_FROM",
    "GEN_START",
    "RETURN_GENERATOR",
    "RESUME",
    "SEND",
    "CLEANUP_THROW",
    "POP_TOP",
}
_GENERATOR_FLAGS = (
    inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE | inspect.CO_ASYNC_GENERATOR
)


def _opname(code: types.CodeType, offset: int) -> str:
    raw = code.co_code  # 3.11+: without specialisations, so dis's names apply
    return dis.opname[raw[offset]] if 0 <= offset < len(raw) else ""


def in_torch(frame: types.FrameType) -> bool:
    """Code of torch's installed package, running in a torch module. compile()
    can give any code torch's file name; its module's globals are harder to
    fake (that takes writing into torch's own modules)."""
    filename = frame.f_code.co_filename
    if not _TORCH_DIR or not os.path.abspath(filename).startswith(_TORCH_DIR + os.sep):
        return False
    name = frame.f_globals.get("__name__")
    module = sys.modules.get(name) if type(name) is str and name.split(".")[0] == "torch" else None
    return module is not None and getattr(module, "__dict__", None) is frame.f_globals


def _torch_check_helper(frame: types.FrameType) -> bool:
    """torch._check, torch._check_with, ...: they raise the message their
    caller gave them, so the caller is the one that speaks."""
    return (
        frame.f_code.co_name.startswith("_check")
        and os.path.basename(frame.f_code.co_filename) == "__init__.py"
        and frame.f_globals.get("__name__") == "torch"
        and in_torch(frame)
    )


def raised_by(exc: BaseException) -> str:
    """Who raised ``exc``: "library" (torch, or C code), "student" (any other
    Python code: the submission, exec/eval strings, a generator's throw) or
    "nobody" (never raised), read from where it was raised, never from the
    source text (``raise(E(...))`` or ``exec("raise ...")`` read like anything).

    The deepest traceback entry says where: stopped at a raise instruction,
    the Python code of that frame raised it; stopped anywhere else, C code
    that frame called did (torch's kernels, the autograd engine).

    This is a claim made inside the student's own process, and C code can be
    made to raise any message (``torch._assert_async(t, TEXT)``, ctypes):
    "library" says no more than that no Python ``raise`` of the student's
    made it. ``expect_error`` also wants the torch call that raised the
    very exception object in the call's trace (``raised_at``), of a kind
    that raises that error given what the trace recorded.
    """
    tb = exc.__traceback__
    if tb is None:
        return "nobody"
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    deepest = entries[-1]
    frame = deepest.tb_frame
    op = _opname(frame.f_code, deepest.tb_lasti)
    if op not in _RAISES:
        if frame.f_code.co_flags & _GENERATOR_FLAGS and (op in _SUSPENDED or deepest.tb_lasti < 0):
            return "student"  # thrown into a generator or coroutine
        return "library"
    frames = [entry.tb_frame for entry in entries]
    while len(frames) > 1 and _torch_check_helper(frames[-1]):
        frames.pop()
    return "library" if in_torch(frames[-1]) else "student"


def _raised_at(exc: BaseException, link) -> int:
    """``link`` (``call_facts.Facts.raised_at`` of the call that was traced):
    the index of the traced torch call that raised ``exc``; -1 for none."""
    try:
        return link(exc) if link is not None else -1
    except Exception:
        return -1


def error_fields(exc: BaseException, in_student_file=None, raised_at=None) -> dict:
    """Type, message, the last frame inside the student's files, who raised
    it, and which traced torch call did (``raised_at``, -1 for none): asked
    of ``raised_at``, the facts of the traced call (``Facts.raised_at``),
    passed in, never kept here, so no call or session reads another's."""
    import linecache
    import traceback

    file, line, code = "", 0, ""
    tb = exc.__traceback__
    if in_student_file is not None and tb is not None:
        for frame in traceback.extract_tb(tb):
            # a str is the file's name relative to the submission
            where = in_student_file(frame.filename)
            if where:
                file, line = where if isinstance(where, str) else frame.filename, frame.lineno or 0
                code = (frame.line or linecache.getline(frame.filename, line)).strip()
    try:
        message = str(exc)
    except BaseException:
        message = "<message could not be read>"
    try:
        who = raised_by(exc)
    except Exception:  # a traceback that cannot be read proves nothing
        who = "student"
    return {
        "$": "error",
        "type": type(exc).__name__,
        "message": shorten(message, 2000),
        "file": file,
        "line": line,
        "code": shorten(code, 200),
        "raised_by": who,
        "raised_at": _raised_at(exc, raised_at),
    }


def encode(
    obj: Any, in_student_file: Any = None, _depth: int = 0, _budget: list | None = None, *, raised_at: Any = None
) -> Any:
    """Turn any object into a tree ``dumps`` can write. torch is not
    imported here: a numpy-only worker has none, and then nothing can be a
    torch tensor. ``raised_at``: the traced call's ``Facts.raised_at``,
    which links each error to the torch call that raised it."""
    torch = sys.modules.get("torch")

    budget = _budget if _budget is not None else [MAX_ITEMS]
    budget[0] -= 1
    # values nested MAX_DEPTH deep are cut, so Limits().max_depth holds for any answer
    if budget[0] < 0 or _depth >= MAX_DEPTH:
        return _too_large(obj)
    kind = type(obj)
    if kind in PRIMITIVES:
        return obj
    if kind is types.FunctionType or kind is types.BuiltinFunctionType or kind is FunctionRef:
        return _function_tree(obj)
    if torch is not None and isinstance(obj, torch.Tensor):
        return _tensor_tree(obj, torch)
    if isinstance(obj, BaseException):
        return error_fields(obj, in_student_file, raised_at)
    if kind in (list, tuple) or kind is dict:
        tree = _container_tree(obj, in_student_file, _depth, budget, raised_at)
        if tree is not None:
            return tree
    value = _as_builtin(obj)
    return value if value is not _NOT_BUILTIN else _described(obj)


def _function_tree(obj: Any) -> dict:
    if type(obj) is FunctionRef:
        return {"$": "function", "module": obj.module, "qualname": obj.qualname, "file": obj.file}
    qualname = getattr(obj, "__qualname__", "")
    return {
        "$": "function",
        "module": getattr(obj, "__module__", "") or "",
        "qualname": qualname,
        "file": getattr(getattr(obj, "__code__", None), "co_filename", ""),
    }


def _tensor_tree(obj: Any, torch: Any) -> dict:
    if type(obj) is torch.Tensor:  # reading .grad of a leaf or a retained tensor never warns
        grad = obj.grad if obj.is_leaf or obj.retains_grad else None
    else:
        with _no_warnings():  # a subclass's .grad may warn (under "error", raise)
            grad = obj.grad if obj.is_leaf or obj.retains_grad else None
    return {
        "$": "tensor",
        "data": _plain_tensor(obj),
        "grad": None if grad is None else _plain_tensor(grad),
        "requires_grad": bool(obj.requires_grad),
        "is_leaf": bool(obj.is_leaf),
        "grad_fn": None if obj.grad_fn is None else type(obj.grad_fn).__name__,
        "retains_grad": bool(obj.retains_grad),
        "dtype": str(obj.dtype).removeprefix("torch."),
        "device": str(obj.device),
        "shape": [int(s) for s in obj.shape],
    }


def _container_tree(obj: Any, in_student_file: Any, depth: int, budget: list, raised_at: Any) -> dict | None:
    """A list, tuple or dict, its items encoded; None for a dict with a key
    that is neither a str nor an int (then described as an object)."""
    kind = type(obj)
    if kind in (list, tuple):
        return {"$": kind.__name__, "items": _encode_all(obj, in_student_file, depth + 1, budget, raised_at)}
    keys = list(obj.keys())
    if not all(type(k) in (str, int) for k in keys):
        return None
    values = _encode_all([obj[k] for k in keys], in_student_file, depth + 1, budget, raised_at)
    return {"$": "dict", "keys": keys[: len(values)], "values": values}


_NOT_BUILTIN = object()


def _as_builtin(obj: Any) -> Any:
    """A bool, int, float or str of another type (a numpy scalar, an int
    subclass) as the builtin value: the value kept, the type lost."""
    if isinstance(obj, (bool, int, float, str)):
        for base in (bool, int, float, str):
            if isinstance(obj, base):
                try:
                    return base(obj)
                except Exception:
                    break
    return _NOT_BUILTIN


def _described(obj: Any) -> Any:
    """A numpy number or array of numbers as itself; anything else by its type and a short repr."""
    kind = type(obj)
    module = STUDENT_PREFIX.sub("", str(kind.__module__))
    if module == "numpy" and hasattr(obj, "dtype") and hasattr(obj, "shape"):
        import numpy

        if isinstance(obj, numpy.generic) and obj.dtype.kind in "biuf":
            return obj.item()
        if isinstance(obj, numpy.ndarray) and obj.dtype.kind in "biuf":
            return {"$": "ndarray", "data": numpy.array(obj, copy=True)}
    return {
        "$": "object",
        "type": f"{module}.{kind.__qualname__}" if module != "builtins" else kind.__qualname__,
        "repr": STUDENT_PREFIX.sub("", _short_repr(obj)),
    }


def _too_large(obj: Any) -> dict:
    return {"$": "object", "type": type(obj).__name__, "repr": "<too large or too deeply nested>"}


def _encode_all(values, in_student_file, depth: int, budget: list, raised_at=None) -> list:
    """Encode items until the budget runs out, then one marker for the rest:
    a list of millions is not turned into millions of markers."""
    out = []
    for value in values:
        if budget[0] <= 0:
            out.append(_too_large(value))
            break
        out.append(encode(value, in_student_file, depth, budget, raised_at=raised_at))
    return out


class _no_warnings:
    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)

"""The plain data that crosses between student code and the grader.

Student objects are turned into a tree of builtins and plain tensors
(``encode``), written as JSON plus raw tensor bytes (``dumps``) and read back
by ``loads``, which runs no code and can only produce builtins and plain
tensors (no pickle, not even torch's weights-only one). ``decode`` then
enforces exact types, so a tensor subclass, an object with a lying ``__eq__``
or a ``__torch_function__`` override can never reach a comparison: at most its
type name and repr do.
"""

from __future__ import annotations

import dis
import gc
import importlib.util
import inspect
import json
import os
import re
import struct
import sys
import types
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 32
MAX_ITEMS = 100_000
REPR_LIMIT = 200
PRIMITIVES = (bool, int, float, str, type(None))
# student.Loader's unique module names; feedback shows the student's own name
_STUDENT_PREFIX = re.compile(r"_grade_submission_\d+_")


@dataclass(frozen=True)
class Limits:
    """What one answer from student code may hold. The grader refuses more
    before it spends time or memory on it (``loads`` and ``decode``)."""

    max_bytes: int = 8 << 20  # the whole answer, checked before anything is parsed
    max_header: int = 4 << 20  # its JSON part: json.loads of 4 MiB takes at most ~0.2 s
    max_items: int = MAX_ITEMS  # values (containers, scalars, tensors) in the answer
    max_depth: int = MAX_DEPTH  # nesting of lists, tuples and dicts in the answer
    max_string: int = 100_000  # characters of one string or dict key
    max_dims: int = 16  # dimensions of one tensor
    # dtypes the grader's comparisons handle; float8, quantized or bit types are refused
    dtypes: tuple[str, ...] = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                               "float32", "float64", "complex64", "complex128")


class BoundaryError(Exception):
    """Data that may not cross the boundary (check author's or forged).

    Refusals under ``Limits`` name the cap (``cap``, a ``Limits`` field or a
    problem's id), what was measured and the limit, and never repeat text
    that came from student code."""

    def __init__(self, text: str, cap: str = "", measured: Any = None, limit: Any = None):
        super().__init__(text)
        self.cap = cap
        self.measured = measured
        self.limit = limit


def _refuse(cap: str, measured: Any = None, limit: Any = None, **fields: Any) -> BoundaryError:
    from .messages import msg

    return BoundaryError(msg(f"limit.{cap}", measured=measured, limit=limit, **fields), cap, measured, limit)


def _number(n: int) -> str:
    """A number from the answer, shown whole only when it is short."""
    text = str(n)
    return text if len(text) <= 20 else f"a {len(text)}-digit number"


@dataclass(frozen=True)
class TensorRecord:
    """A student's tensor as the grader sees it."""

    data: Any  # a plain torch.Tensor, detached
    grad: Any  # a plain torch.Tensor or None
    requires_grad: bool
    is_leaf: bool
    grad_fn: str | None
    retains_grad: bool
    dtype: str
    device: str
    shape: tuple[int, ...]

    def __repr__(self) -> str:
        return (f"TensorRecord(shape={self.shape}, dtype={self.dtype}, device={self.device}, "
                f"requires_grad={self.requires_grad}, is_leaf={self.is_leaf}, grad_fn={self.grad_fn}, "
                f"grad={'None' if self.grad is None else 'tensor'})")


@dataclass(frozen=True)
class ErrorRecord:
    """An exception, raised by or returned from student code."""

    type: str
    message: str
    file: str = ""
    line: int = 0
    code: str = ""
    # Who raised it (see ``raised_by``): "library" (torch, or C code),
    # "student" (Python code outside torch: the submission, exec/eval strings)
    # or "nobody" (an exception object that was created but never raised).
    raised_by: str = "library"


@dataclass(frozen=True)
class ObjectRecord:
    """Anything else a student returned: only its type and a short repr."""

    type: str
    repr: str


@dataclass(frozen=True)
class FunctionRef:
    """A module-level function passed to student code by qualified name."""

    module: str
    qualname: str
    file: str = ""


# -- encoding (either side) ----------------------------------------------

def _plain_tensor(t):
    import torch

    # as_subclass drops any subclass; clone so the bytes are ours.
    return torch.Tensor.as_subclass(t.detach(), torch.Tensor).clone()


def _short_repr(obj: object) -> str:
    try:
        text = repr(obj)
    except BaseException as exc:  # a student's __repr__ may raise anything
        text = f"<repr failed: {type(exc).__name__}>"
    if not isinstance(text, str):
        text = "<repr returned a non-string>"
    return text if len(text) <= REPR_LIMIT else text[: REPR_LIMIT - 3] + "..."


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
_SUSPENDED = {"YIELD_VALUE", "YIELD_FROM", "GEN_START", "RETURN_GENERATOR", "RESUME", "SEND", "CLEANUP_THROW",
              "POP_TOP"}
_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE | \
    inspect.CO_ASYNC_GENERATOR


def _opname(code: types.CodeType, offset: int) -> str:
    raw = code.co_code  # 3.11+: without specialisations, so dis's names apply
    return dis.opname[raw[offset]] if 0 <= offset < len(raw) else ""


def _in_torch(frame: types.FrameType) -> bool:
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
    return frame.f_code.co_name.startswith("_check") and \
        os.path.basename(frame.f_code.co_filename) == "__init__.py" and frame.f_globals.get("__name__") == "torch" \
        and _in_torch(frame)


def raised_by(exc: BaseException) -> str:
    """Who raised ``exc``: "library" (torch, or C code), "student" (any other
    Python code: the submission, exec/eval strings, a generator's throw) or
    "nobody" (never raised), read from where it was raised, never from the
    source text (``raise(E(...))`` or ``exec("raise ...")`` read like anything).

    The deepest traceback entry says where: stopped at a raise instruction,
    the Python code of that frame raised it; stopped anywhere else, C code
    that frame called did (torch's kernels, the autograd engine).

    This is a claim made inside the student's own process: code that rewrites
    the grader's or torch's modules there, mutates a real error's args, or
    hands over a real error's traceback can still forge it. It stops errors
    made up by student code, which is what expect_error needs.
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
    return "library" if _in_torch(frames[-1]) else "student"


def error_fields(exc: BaseException, in_student_file=None) -> dict:
    """Type, message, the last frame inside the student's files, and who raised it."""
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
    return {"$": "error", "type": type(exc).__name__, "message": message[:2000], "file": file, "line": line,
            "code": code[:200], "raised_by": who}


def encode(obj: Any, in_student_file=None, _depth: int = 0, _budget: list | None = None) -> Any:
    """Turn any object into a tree ``dumps`` can write. torch is not
    imported here: a numpy-only worker has none, and then nothing can be a
    torch tensor."""
    torch = sys.modules.get("torch")

    budget = _budget if _budget is not None else [MAX_ITEMS]
    budget[0] -= 1
    # values nested MAX_DEPTH deep are cut, so Limits().max_depth holds for any answer
    if budget[0] < 0 or _depth >= MAX_DEPTH:
        return _too_large(obj)
    kind = type(obj)
    if kind in PRIMITIVES:
        return obj
    if kind is types.FunctionType or kind is types.BuiltinFunctionType:
        qualname = getattr(obj, "__qualname__", "")
        return {"$": "function", "module": getattr(obj, "__module__", "") or "", "qualname": qualname,
                "file": getattr(getattr(obj, "__code__", None), "co_filename", ""), "source": _source(obj)}
    if kind is FunctionRef:
        return {"$": "function", "module": obj.module, "qualname": obj.qualname, "file": obj.file}
    if torch is not None and isinstance(obj, torch.Tensor):
        with _no_warnings():
            grad = obj.grad if obj.is_leaf or obj.retains_grad else None
        return {
            "$": "tensor", "data": _plain_tensor(obj), "grad": None if grad is None else _plain_tensor(grad),
            "requires_grad": bool(obj.requires_grad), "is_leaf": bool(obj.is_leaf),
            "grad_fn": None if obj.grad_fn is None else type(obj.grad_fn).__name__,
            "retains_grad": bool(obj.retains_grad), "dtype": str(obj.dtype).removeprefix("torch."),
            "device": str(obj.device), "shape": [int(s) for s in obj.shape],
        }
    if isinstance(obj, BaseException):
        return error_fields(obj, in_student_file)
    if kind in (list, tuple):
        return {"$": kind.__name__, "items": _encode_all(obj, in_student_file, _depth + 1, budget)}
    if kind is dict:
        keys = list(obj.keys())
        if all(type(k) in (str, int) for k in keys):
            values = _encode_all([obj[k] for k in keys], in_student_file, _depth + 1, budget)
            return {"$": "dict", "keys": keys[:len(values)], "values": values}
    if isinstance(obj, (bool, int, float, str)):
        # e.g. numpy scalars or an int subclass: keep the value, lose the type
        for base in (bool, int, float, str):
            if isinstance(obj, base):
                try:
                    return base(obj)
                except Exception:
                    break
    module = _STUDENT_PREFIX.sub("", str(type(obj).__module__))
    if module == "numpy" and hasattr(obj, "dtype") and hasattr(obj, "shape"):
        import numpy

        if isinstance(obj, numpy.generic) and obj.dtype.kind in "biuf":
            return obj.item()
        if isinstance(obj, numpy.ndarray) and obj.dtype.kind in "biuf":
            return {"$": "ndarray", "data": numpy.array(obj, copy=True)}
    return {"$": "object", "type": f"{module}.{kind.__qualname__}" if module != "builtins" else kind.__qualname__,
            "repr": _STUDENT_PREFIX.sub("", _short_repr(obj))}


def _too_large(obj: Any) -> dict:
    return {"$": "object", "type": type(obj).__name__, "repr": "<too large or too deeply nested>"}


def _encode_all(values, in_student_file, depth: int, budget: list) -> list:
    """Encode items until the budget runs out, then one marker for the rest:
    a list of millions is not turned into millions of markers."""
    out = []
    for value in values:
        if budget[0] <= 0:
            out.append(_too_large(value))
            break
        out.append(encode(value, in_student_file, depth, budget))
    return out


def _source(function) -> str:
    """A plain function's own source, so a worker that cannot see the file it
    was defined in (a checks file, hidden from the sandbox) can rebuild it."""
    import inspect
    import textwrap

    if type(function) is not types.FunctionType:
        return ""
    try:
        return textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return ""


class _no_warnings:
    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


# The wire format: a 4-byte length, a JSON header holding the tree (tensors
# replaced by {"$tensor": i}) and each tensor's dtype, shape, device and byte
# count, then the tensors' raw bytes. Reading it runs no code (json.loads and
# torch.frombuffer) and can only ever produce builtins and plain tensors; it
# is also ~10x faster than torch.save/torch.load for small calls.
_LENGTH = struct.Struct("!I")
_TENSOR = "$tensor"


def _tensor_bytes(t) -> tuple[list, bytes]:
    import torch

    t = t.detach()
    dtype = str(t.dtype).removeprefix("torch.")
    if t.device.type == "meta":
        return [dtype, list(t.shape), "meta", 0], b""
    t = t.cpu()
    if t.layout != torch.strided:
        t = t.to_dense()
    t = t.resolve_conj().resolve_neg().contiguous()
    raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return [dtype, list(t.shape), str(t.device if t.device.type != "cpu" else "cpu"), len(raw)], raw


def _array_bytes(a) -> tuple[list, bytes]:
    """A numpy array in the tensor wire format (``loads`` reads it as a
    tensor), without torch."""
    import numpy

    a = numpy.ascontiguousarray(a)
    raw = a.tobytes()
    return [a.dtype.name, list(a.shape), "cpu", len(raw)], raw


def dumps(tree: Any) -> bytes:
    # torch and numpy only if already imported: a numpy-only worker has no torch
    torch, numpy = sys.modules.get("torch"), sys.modules.get("numpy")

    metas: list = []
    chunks: list[bytes] = []

    def walk(obj):
        if numpy is not None and type(obj) is numpy.ndarray:
            meta, raw = _array_bytes(obj)
            metas.append(meta)
            chunks.append(raw)
            return {_TENSOR: len(metas) - 1}
        if torch is not None and isinstance(obj, torch.Tensor):
            device = str(obj.device)
            meta, raw = _tensor_bytes(obj)
            meta[2] = device
            metas.append(meta)
            chunks.append(raw)
            return {_TENSOR: len(metas) - 1}
        if type(obj) is dict:
            return {str(k): walk(v) for k, v in obj.items()}
        if type(obj) in (list, tuple):
            return [walk(v) for v in obj]
        return obj

    header = json.dumps({"tree": walk(tree), "tensors": metas}).encode()
    return _LENGTH.pack(len(header)) + header + b"".join(chunks)


def loads(payload: bytes, limits: Limits | None = None) -> Any:
    """Read ``dumps`` bytes back into builtins and plain tensors.

    With ``limits`` (an answer from student code) everything the bytes claim
    is checked against them before it costs time or memory: the size before
    parsing, then the header, each tensor's dtype, device, shape and byte
    count, and the tree's values, nesting and texts; a refusal is a
    ``BoundaryError`` that repeats nothing the bytes said. Without (the
    grader's own requests) it reads as it always did."""
    try:
        return _loads(payload, limits)
    except BoundaryError:
        raise
    except RecursionError:  # json.loads on brackets nested ~1000 deep
        if limits is None:
            raise BoundaryError("data from student code was refused: nested too deeply") from None
        raise _refuse("max_depth", _json_depth(limits) + 1, _json_depth(limits)) from None
    except Exception as exc:
        if limits is None:
            raise BoundaryError(f"data from student code was refused: {type(exc).__name__}: {exc}") from None
        raise _refuse("malformed", problem=type(exc).__name__) from None


def _json_depth(limits: Limits) -> int:
    # A record nested d containers deep sits about 2d + 3 JSON levels down
    # (each record is a dict holding a list of records).
    return 2 * limits.max_depth + 8


class _Meter:
    """Counts the values of one answer and checks nesting and texts."""

    def __init__(self, limits: Limits, max_depth: int):
        self.limits = limits
        self.max_depth = max_depth
        self.items = 0

    def item(self) -> None:
        self.items += 1
        if self.items > self.limits.max_items:
            raise _refuse("max_items", self.items, self.limits.max_items)

    def deeper(self, depth: int) -> None:
        """Called before recursing into a container's items, at their depth."""
        if depth > self.max_depth:
            raise _refuse("max_depth", depth, self.max_depth)

    def text(self, value: str) -> None:
        if len(value) > self.limits.max_string:
            raise _refuse("max_string", len(value), self.limits.max_string)


def _parse_json(raw: bytes) -> Any:
    # json.loads makes one object per value; with torch's large heap loaded,
    # the collector's passes would cost up to 10x the parse itself.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return json.loads(raw)
    finally:
        if enabled:
            gc.enable()


def _loads(payload: bytes, limits: Limits | None) -> Any:
    if limits is not None:
        if type(payload) in (bytearray, memoryview):
            payload = bytes(payload)
        if type(payload) is not bytes:
            raise _refuse("malformed", problem=type(payload).__name__)
        if len(payload) > limits.max_bytes:
            raise _refuse("max_bytes", len(payload), limits.max_bytes)
        if len(payload) < _LENGTH.size:
            raise _refuse("malformed", problem="length")
    (length,) = _LENGTH.unpack_from(payload)
    if limits is not None:
        if length > limits.max_header:
            raise _refuse("max_header", length, limits.max_header)
        if _LENGTH.size + length > len(payload):
            raise _refuse("header_length", length, len(payload) - _LENGTH.size)
    header = _parse_json(payload[_LENGTH.size:_LENGTH.size + length])
    offset = _LENGTH.size + length
    if limits is not None:
        if type(header) is not dict or set(header) != {"tree", "tensors"} or type(header["tensors"]) is not list:
            raise _refuse("malformed", problem="header")
        if len(header["tensors"]) > limits.max_items:
            raise _refuse("max_items", len(header["tensors"]), limits.max_items)
    tensors = []
    for entry in header["tensors"]:
        tensor, offset = (_read_tensor(entry, payload, offset) if limits is None
                          else _read_checked_tensor(entry, payload, offset, limits))
        tensors.append(tensor)
    if limits is not None and offset != len(payload):
        raise _refuse("trailing", len(payload) - offset)
    if limits is None:
        return _walk(header["tree"], tensors)
    return _walk_checked(header["tree"], tensors, _Meter(limits, _json_depth(limits)), 0)


def _read_tensor(entry, payload: bytes, offset: int):
    """A tensor of the grader's own request (no limits)."""
    import math

    import torch

    dtype_name, shape, device, nbytes = entry
    dtype = getattr(torch, str(dtype_name), None)
    if not isinstance(dtype, torch.dtype):
        raise BoundaryError(f"unknown dtype {dtype_name!r}")
    shape = [int(n) for n in shape]
    device = torch.device(str(device))
    if device.type == "meta":
        return torch.empty(shape, dtype=dtype, device="meta"), offset
    if nbytes != math.prod(shape) * dtype.itemsize or offset + nbytes > len(payload):
        raise BoundaryError("a tensor's bytes do not match its shape")
    return _tensor_from(payload, offset, nbytes, dtype, shape, device), offset + nbytes


_DEVICE = re.compile(r"cpu|cuda(:[0-9]{1,4})?")


def _read_checked_tensor(entry, payload: bytes, offset: int, limits: Limits):
    """A tensor of an answer: every field is checked before anything is allocated."""
    import math

    import torch

    if type(entry) is not list or len(entry) != 4:
        raise _refuse("malformed", problem="tensor table")
    dtype_name, shape, device, nbytes = entry
    if type(dtype_name) is not str or dtype_name not in limits.dtypes:
        raise _refuse("dtype", dtypes=", ".join(limits.dtypes))
    if type(device) is not str or not _DEVICE.fullmatch(device):
        raise _refuse("device")  # meta tensors too: they hold no values to compare
    if type(shape) is not list or any(type(n) is not int for n in shape) or type(nbytes) is not int:
        raise _refuse("malformed", problem="tensor table")
    if len(shape) > limits.max_dims:
        raise _refuse("max_dims", len(shape), limits.max_dims)
    for n in shape:
        if not 0 <= n <= limits.max_bytes:
            raise _refuse("dim_size", _number(n), limits.max_bytes)
    dtype = getattr(torch, dtype_name)
    needed = math.prod(shape) * dtype.itemsize
    if nbytes != needed:
        raise _refuse("tensor_bytes", _number(nbytes), needed=_number(needed))
    if offset + nbytes > len(payload):
        raise _refuse("tensor_past_end", nbytes, len(payload) - offset)
    return _tensor_from(payload, offset, nbytes, dtype, shape, torch.device(device)), offset + nbytes


def _tensor_from(payload: bytes, offset: int, nbytes: int, dtype, shape: list, device):
    import torch

    raw = bytearray(payload[offset:offset + nbytes])
    flat = torch.frombuffer(raw, dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
    tensor = flat.view(dtype).reshape(shape)
    return tensor if device.type == "cpu" else tensor.to(device)


def _walk(obj, tensors: list):
    if type(obj) is dict:
        if _TENSOR in obj:
            return tensors[int(obj[_TENSOR])]
        return {k: _walk(v, tensors) for k, v in obj.items()}
    if type(obj) is list:
        return [_walk(v, tensors) for v in obj]
    return obj


def _walk_checked(obj, tensors: list, meter: _Meter, depth: int):
    meter.item()
    kind = type(obj)
    if kind is str:
        meter.text(obj)
    elif kind is dict:
        if _TENSOR in obj:
            index = obj[_TENSOR]
            if len(obj) != 1 or type(index) is not int or not 0 <= index < len(tensors):
                raise _refuse("malformed", problem="tensor reference")
            return tensors[index]
        meter.deeper(depth + 1)
        for key in obj:
            meter.text(key)
        return {k: _walk_checked(v, tensors, meter, depth + 1) for k, v in obj.items()}
    elif kind is list:
        meter.deeper(depth + 1)
        return [_walk_checked(v, tensors, meter, depth + 1) for v in obj]
    return obj


# -- decoding on the grader's side -----------------------------------------

def _exact_tensor(value, field: str, limits: Limits | None = None):
    import torch

    if value is None and field == "grad":
        return None
    if type(value) is not torch.Tensor:
        raise _refuse("field_type", field=field, type=type(value).__name__)
    if limits is not None:
        if value.device.type not in ("cpu", "cuda"):
            raise _refuse("device")
        if str(value.dtype).removeprefix("torch.") not in limits.dtypes:
            raise _refuse("dtype", dtypes=", ".join(limits.dtypes))
        if value.dim() > limits.max_dims:
            raise _refuse("max_dims", value.dim(), limits.max_dims)
    return value


def _expect(value, kinds, field: str):
    if type(value) not in kinds:
        raise _refuse("field_type", field=field, type=type(value).__name__)
    return value


def decode(tree: Any, limits: Limits | None = None) -> Any:
    """Rebuild records from the plain tree, accepting exact types only.

    With ``limits`` the tree is also measured (values, nesting, texts,
    tensors' devices and dtypes) and a record of the wrong form is refused
    with a ``BoundaryError``, whatever went wrong, never another exception."""
    if limits is None:
        return _decode(tree, None, None, 0)
    try:
        return _decode(tree, limits, _Meter(limits, limits.max_depth), 0)
    except BoundaryError:
        raise
    except RecursionError:
        raise _refuse("max_depth", limits.max_depth + 1, limits.max_depth) from None
    except Exception as exc:  # a missing field, a field of the wrong type
        raise _refuse("malformed", problem=type(exc).__name__) from None


def _text(value, field: str, limits: Limits | None, meter: _Meter | None) -> str:
    if limits is None:
        return str(value)  # as it always was for trees the grader made
    meter.text(_expect(value, (str,), field))
    return value


def _decode(tree: Any, limits: Limits | None, meter: _Meter | None, depth: int) -> Any:
    if meter is not None:
        meter.item()
    kind = type(tree)
    if kind in PRIMITIVES:
        if kind is str and meter is not None:
            meter.text(tree)
        return tree
    if kind is not dict or "$" not in tree:
        raise _refuse("not_record", type=kind.__name__)
    tag = tree["$"]
    if tag == "tensor":
        data = _exact_tensor(tree["data"], "data", limits)
        grad_fn = _expect(tree["grad_fn"], (str, type(None)), "grad_fn")
        if grad_fn is not None and meter is not None:
            meter.text(grad_fn)
        return TensorRecord(
            data=data, grad=_exact_tensor(tree["grad"], "grad", limits),
            requires_grad=_expect(tree["requires_grad"], (bool,), "requires_grad"),
            is_leaf=_expect(tree["is_leaf"], (bool,), "is_leaf"),
            grad_fn=grad_fn,
            retains_grad=_expect(tree["retains_grad"], (bool,), "retains_grad"),
            dtype=str(data.dtype).removeprefix("torch."), device=str(data.device),
            shape=tuple(int(s) for s in data.shape),
        )
    if tag in ("list", "tuple"):
        raw = _expect(tree["items"], (list,), "items")
        if meter is not None:
            meter.deeper(depth + 1)
        items = [_decode(x, limits, meter, depth + 1) for x in raw]
        return items if tag == "list" else tuple(items)
    if tag == "dict":
        keys = _expect(tree["keys"], (list,), "keys")
        values = _expect(tree["values"], (list,), "values")
        if meter is not None:
            meter.deeper(depth + 1)
            if len(keys) != len(values):
                raise _refuse("dict_keys", len(keys), len(values))
            for key in keys:
                if type(key) is str:
                    meter.text(key)
        return {(_expect(k, (str, int), "key")): _decode(v, limits, meter, depth + 1) for k, v in zip(keys, values)}
    if tag == "error":
        raised_by = tree.get("raised_by", "nobody")
        if limits is not None:
            line = _expect(tree["line"], (int,), "line")
            if raised_by not in ("library", "student", "nobody"):
                raise _refuse("malformed", problem="raised_by")
        else:
            line = int(tree["line"])
        return ErrorRecord(type=_text(tree["type"], "type", limits, meter),
                           message=_text(tree["message"], "message", limits, meter),
                           file=_text(tree["file"], "file", limits, meter), line=line,
                           code=_text(tree["code"], "code", limits, meter), raised_by=str(raised_by))
    if tag == "ndarray":
        return _exact_tensor(tree["data"], "data", limits).numpy()
    if tag == "object":
        return ObjectRecord(type=_text(tree["type"], "type", limits, meter),
                            repr=_text(tree["repr"], "repr", limits, meter))
    if tag == "function":
        # A function the student returned: its name only, nothing to call.
        qualname = _text(tree["qualname"], "qualname", limits, meter)
        return ObjectRecord(type="function", repr=f"<function {qualname[:REPR_LIMIT]}>")
    raise _refuse("unknown_record")


def encode_argument(obj: Any) -> Any:
    """Arguments the grader passes to student code: refuse what cannot cross."""
    import torch

    from .messages import msg

    kind = type(obj)
    if kind in PRIMITIVES:
        return obj
    if isinstance(obj, torch.Tensor):
        return encode(obj)
    if kind in (list, tuple):
        return {"$": kind.__name__, "items": [encode_argument(x) for x in obj]}
    if kind is dict:
        return {"$": "dict", "keys": list(obj), "values": [encode_argument(v) for v in obj.values()]}
    if kind in (types.FunctionType, types.BuiltinFunctionType, FunctionRef):
        qualname = getattr(obj, "qualname", None) or getattr(obj, "__qualname__", "")
        if "<lambda>" in qualname or "<locals>" in qualname:
            raise BoundaryError(msg("student.lambda", name=qualname))
        return encode(obj)
    if type(obj).__module__ == "numpy":
        return encode(obj)
    raise BoundaryError(msg("student.bad_argument", type=kind.__name__))

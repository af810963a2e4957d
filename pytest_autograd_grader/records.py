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

import json
import re
import struct
import types
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 32
MAX_ITEMS = 100_000
REPR_LIMIT = 200
PRIMITIVES = (bool, int, float, str, type(None))
# student.Loader's unique module names; feedback shows the student's own name
_STUDENT_PREFIX = re.compile(r"_grade_submission_\d+_")


class BoundaryError(Exception):
    """Data that may not cross the boundary (check author's or forged)."""


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
    # Who raised it: "library" (torch or other code outside the submission),
    # "student" (a raise statement in the submission) or "nobody" (an
    # exception object that was created but never raised).
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


def error_fields(exc: BaseException, in_student_file=None) -> dict:
    """Type, message and the last frame inside the student's files."""
    import linecache
    import traceback

    file, line, code = "", 0, ""
    tb = exc.__traceback__
    raised_by = "nobody" if tb is None else "library"
    if in_student_file is not None and tb is not None:
        frames = traceback.extract_tb(tb)
        for frame in frames:
            if in_student_file(frame.filename):
                file, line = frame.filename, frame.lineno or 0
                code = (frame.line or linecache.getline(frame.filename, line)).strip()
        deepest = frames[-1] if frames else None
        if deepest is not None and in_student_file(deepest.filename) and \
                (deepest.line or "").lstrip().startswith("raise "):
            raised_by = "student"
    try:
        message = str(exc)
    except BaseException:
        message = "<message could not be read>"
    return {"$": "error", "type": type(exc).__name__, "message": message[:2000], "file": file, "line": line,
            "code": code[:200], "raised_by": raised_by}


def encode(obj: Any, in_student_file=None, _depth: int = 0, _budget: list | None = None) -> Any:
    """Turn any object into a tree the weights-only loader accepts."""
    import torch

    budget = _budget if _budget is not None else [MAX_ITEMS]
    budget[0] -= 1
    if budget[0] < 0 or _depth > MAX_DEPTH:
        return {"$": "object", "type": type(obj).__name__, "repr": "<too large or too deeply nested>"}
    kind = type(obj)
    if kind in PRIMITIVES:
        return obj
    if kind is types.FunctionType or kind is types.BuiltinFunctionType:
        qualname = getattr(obj, "__qualname__", "")
        return {"$": "function", "module": getattr(obj, "__module__", "") or "", "qualname": qualname,
                "file": getattr(getattr(obj, "__code__", None), "co_filename", "")}
    if kind is FunctionRef:
        return {"$": "function", "module": obj.module, "qualname": obj.qualname, "file": obj.file}
    if isinstance(obj, torch.Tensor):
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
        return {"$": kind.__name__, "items": [encode(x, in_student_file, _depth + 1, budget) for x in obj]}
    if kind is dict:
        keys = list(obj.keys())
        if all(type(k) in (str, int) for k in keys):
            return {"$": "dict", "keys": keys, "values": [encode(obj[k], in_student_file, _depth + 1, budget) for k in keys]}
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
            return {"$": "ndarray", "data": torch.from_numpy(numpy.array(obj, copy=True))}
    return {"$": "object", "type": f"{module}.{kind.__qualname__}" if module != "builtins" else kind.__qualname__,
            "repr": _STUDENT_PREFIX.sub("", _short_repr(obj))}


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


def dumps(tree: Any) -> bytes:
    import torch

    metas: list = []
    chunks: list[bytes] = []

    def walk(obj):
        if isinstance(obj, torch.Tensor):
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


def loads(payload: bytes) -> Any:
    try:
        return _loads(payload)
    except BoundaryError:
        raise
    except Exception as exc:
        raise BoundaryError(f"data from student code was refused: {type(exc).__name__}: {exc}") from None


def _loads(payload: bytes) -> Any:
    import math

    import torch

    (length,) = _LENGTH.unpack_from(payload)
    header = json.loads(payload[_LENGTH.size:_LENGTH.size + length])
    offset = _LENGTH.size + length
    tensors = []
    for dtype_name, shape, device, nbytes in header["tensors"]:
        dtype = getattr(torch, str(dtype_name), None)
        if not isinstance(dtype, torch.dtype):
            raise BoundaryError(f"unknown dtype {dtype_name!r}")
        shape = [int(n) for n in shape]
        device = torch.device(str(device))
        if device.type == "meta":
            tensors.append(torch.empty(shape, dtype=dtype, device="meta"))
            continue
        if nbytes != math.prod(shape) * dtype.itemsize or offset + nbytes > len(payload):
            raise BoundaryError("a tensor's bytes do not match its shape")
        raw = bytearray(payload[offset:offset + nbytes])
        offset += nbytes
        flat = torch.frombuffer(raw, dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
        tensor = flat.view(dtype).reshape(shape)
        tensors.append(tensor if device.type == "cpu" else tensor.to(device))

    def walk(obj):
        if type(obj) is dict:
            if _TENSOR in obj:
                return tensors[int(obj[_TENSOR])]
            return {k: walk(v) for k, v in obj.items()}
        if type(obj) is list:
            return [walk(v) for v in obj]
        return obj

    return walk(header["tree"])


# -- decoding on the grader's side -----------------------------------------

def _exact_tensor(value, field: str):
    import torch

    if value is None and field == "grad":
        return None
    if type(value) is not torch.Tensor:
        raise BoundaryError(f"{field} is a {type(value).__name__}, not a plain tensor")
    return value


def _expect(value, kinds, field: str):
    if type(value) not in kinds:
        raise BoundaryError(f"{field} has type {type(value).__name__}")
    return value


def decode(tree: Any) -> Any:
    """Rebuild records from the plain tree, accepting exact types only."""
    kind = type(tree)
    if kind in PRIMITIVES:
        return tree
    if kind is not dict or "$" not in tree:
        raise BoundaryError(f"unexpected {kind.__name__} in data from student code")
    tag = tree["$"]
    if tag == "tensor":
        data = _exact_tensor(tree["data"], "data")
        return TensorRecord(
            data=data, grad=_exact_tensor(tree["grad"], "grad"),
            requires_grad=_expect(tree["requires_grad"], (bool,), "requires_grad"),
            is_leaf=_expect(tree["is_leaf"], (bool,), "is_leaf"),
            grad_fn=_expect(tree["grad_fn"], (str, type(None)), "grad_fn"),
            retains_grad=_expect(tree["retains_grad"], (bool,), "retains_grad"),
            dtype=str(data.dtype).removeprefix("torch."), device=str(data.device),
            shape=tuple(int(s) for s in data.shape),
        )
    if tag in ("list", "tuple"):
        items = [decode(x) for x in _expect(tree["items"], (list,), "items")]
        return items if tag == "list" else tuple(items)
    if tag == "dict":
        keys = _expect(tree["keys"], (list,), "keys")
        values = _expect(tree["values"], (list,), "values")
        return {(_expect(k, (str, int), "key")): decode(v) for k, v in zip(keys, values)}
    if tag == "error":
        return ErrorRecord(type=str(tree["type"]), message=str(tree["message"]), file=str(tree["file"]),
                           line=int(tree["line"]), code=str(tree["code"]), raised_by=str(tree.get("raised_by", "nobody")))
    if tag == "ndarray":
        return _exact_tensor(tree["data"], "data").numpy()
    if tag == "object":
        return ObjectRecord(type=str(tree["type"]), repr=str(tree["repr"]))
    if tag == "function":
        # A function the student returned: its name only, nothing to call.
        return ObjectRecord(type="function", repr=f"<function {str(tree['qualname'])[:REPR_LIMIT]}>")
    raise BoundaryError(f"unknown record {tag!r} in data from student code")


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

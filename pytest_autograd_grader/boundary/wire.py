"""The bytes that cross the boundary: ``dumps`` on the student's side,
``loads`` on the grader's, under ``Limits`` that the student's answer
cannot widen.
"""

from __future__ import annotations

import gc
import json
import re
import struct
import sys
from typing import Any

from .records import BoundaryError, Limits, refuse, shown_number

# The wire format: a 4-byte length, a JSON header holding the tree (tensors
# replaced by {"$tensor": i}) and each tensor's dtype, shape, device and byte
# count, then the tensors' raw bytes. Reading it runs no code (json.loads and
# torch.frombuffer) and can only ever produce builtins and plain tensors; it
# is also ~10x faster than torch.save/torch.load for small calls.
_LENGTH = struct.Struct("!I")
_TENSOR = "$tensor"
_PLAIN = frozenset((str, int, float, bool, type(None)))  # what the tree holds most: passed as it is


# dtypes whose CPU tensors numpy can hold: their bytes come from one
# ``numpy().tobytes()`` (C order, whatever the strides), 3x quicker than
# the general path's five torch calls, byte for byte the same
_NUMPY_DTYPES = frozenset(
    ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool", "complex128", "complex64")
)


def _tensor_bytes(t) -> tuple[list, bytes]:
    import torch

    t = t.detach()
    dtype = str(t.dtype).removeprefix("torch.")
    kind = t.device.type
    if kind == "cpu" and dtype in _NUMPY_DTYPES and t.layout == torch.strided and not t.is_conj() and not t.is_neg():
        raw = t.numpy().tobytes()
        return [dtype, list(t.shape), "cpu", len(raw)], raw
    if kind == "meta":
        return [dtype, list(t.shape), "meta", 0], b""
    t = t.cpu()
    if t.layout != torch.strided:
        t = t.to_dense()
    t = t.resolve_conj().resolve_neg().contiguous()
    raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return [dtype, list(t.shape), str(t.device if t.device.type != "cpu" else "cpu"), len(raw)], raw


def _array_bytes(a) -> tuple[list, bytes]:
    """A numpy array in the tensor wire format (``loads`` reads it as a
    tensor, or with ``arrays`` as an array), without torch."""
    import numpy

    # the format's bytes are the machine's own order (a big-endian array's
    # would be read as other numbers), and a 0-d array stays one
    # (ascontiguousarray would make it 1-d)
    a = numpy.asarray(a, dtype=a.dtype.newbyteorder("="), order="C")
    raw = a.tobytes()
    return [a.dtype.name, list(a.shape), "cpu", len(raw)], raw


def dumps(tree: Any) -> bytes:
    # torch and numpy only if already imported: a numpy-only worker has no torch
    torch, numpy = sys.modules.get("torch"), sys.modules.get("numpy")

    metas: list = []
    chunks: list[bytes] = []

    def walk(obj):
        kind = type(obj)
        if kind in _PLAIN:
            return obj
        if kind is dict:
            return {str(k): walk(v) for k, v in obj.items()}
        if kind is list or kind is tuple:
            return [walk(v) for v in obj]
        if numpy is not None and kind is numpy.ndarray:
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
        return obj

    header = json.dumps({"tree": walk(tree), "tensors": metas}).encode()
    return _LENGTH.pack(len(header)) + header + b"".join(chunks)


def loads(payload: bytes, limits: Limits | None = None, *, arrays: bool = False) -> Any:
    """Read ``dumps`` bytes back into builtins and plain tensors.

    With ``arrays`` (a request read where torch is not loaded: a numpy-only
    worker) every tensor is read as a numpy array instead, and torch is
    never imported.

    With ``limits`` (an answer from student code) everything the bytes claim
    is checked against them before it costs time or memory: the size before
    parsing, then the header, each tensor's dtype, device, shape and byte
    count, and the tree's values, nesting and texts; a refusal is a
    ``BoundaryError`` that repeats nothing the bytes said. Without (the
    grader's own requests) it reads as it always did."""
    try:
        return _loads(payload, limits, arrays)
    except BoundaryError:
        raise
    except RecursionError:  # json.loads on brackets nested ~1000 deep
        if limits is None:
            raise BoundaryError("data from student code was refused: nested too deeply") from None
        raise refuse("max_depth", _json_depth(limits) + 1, _json_depth(limits)) from None
    except Exception as exc:
        if limits is None:
            raise BoundaryError(f"data from student code was refused: {type(exc).__name__}: {exc}") from None
        raise refuse("malformed", problem=type(exc).__name__) from None


def _json_depth(limits: Limits) -> int:
    # A record nested d containers deep sits about 2d + 3 JSON levels down
    # (each record is a dict holding a list of records).
    return 2 * limits.max_depth + 8


class Meter:
    """Counts the values of one answer and checks nesting and texts."""

    def __init__(self, limits: Limits, max_depth: int):
        self.limits = limits
        self.max_depth = max_depth
        self.items = 0

    def item(self) -> None:
        self.items += 1
        if self.items > self.limits.max_items:
            raise refuse("max_items", self.items, self.limits.max_items)

    def deeper(self, depth: int) -> None:
        """Called before recursing into a container's items, at their depth."""
        if depth > self.max_depth:
            raise refuse("max_depth", depth, self.max_depth)

    def text(self, value: str) -> None:
        if len(value) > self.limits.max_string:
            raise refuse("max_string", len(value), self.limits.max_string)


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


def _loads(payload: bytes, limits: Limits | None, arrays: bool = False) -> Any:
    if limits is not None:
        payload = _checked_payload(payload, limits)
    (length,) = _LENGTH.unpack_from(payload)
    if limits is not None:
        _check_header_length(length, payload, limits)
    header = _parse_json(payload[_LENGTH.size : _LENGTH.size + length])
    offset = _LENGTH.size + length
    if limits is not None:
        _check_header(header, limits)
    tensors, offset = _read_tensors(header["tensors"], payload, offset, limits, arrays)
    if limits is not None and offset != len(payload):
        raise refuse("trailing", len(payload) - offset)
    if limits is None:
        return _walk(header["tree"], tensors)
    return _walk_checked(header["tree"], tensors, Meter(limits, _json_depth(limits)), 0)


def _checked_payload(payload: Any, limits: Limits) -> bytes:
    """The answer's bytes, measured before anything is parsed."""
    if type(payload) in (bytearray, memoryview):
        payload = bytes(payload)
    if type(payload) is not bytes:
        raise refuse("malformed", problem=type(payload).__name__)
    if len(payload) > limits.max_bytes:
        raise refuse("max_bytes", len(payload), limits.max_bytes)
    if len(payload) < _LENGTH.size:
        raise refuse("malformed", problem="length")
    return payload


def _check_header_length(length: int, payload: bytes, limits: Limits) -> None:
    if length > limits.max_header:
        raise refuse("max_header", length, limits.max_header)
    if _LENGTH.size + length > len(payload):
        raise refuse("header_length", length, len(payload) - _LENGTH.size)


def _check_header(header: Any, limits: Limits) -> None:
    if type(header) is not dict or set(header) != {"tree", "tensors"} or type(header["tensors"]) is not list:
        raise refuse("malformed", problem="header")
    if len(header["tensors"]) > limits.max_items:
        raise refuse("max_items", len(header["tensors"]), limits.max_items)


def _read_tensors(entries: Any, payload: bytes, offset: int, limits: Limits | None, arrays: bool) -> tuple[list, int]:
    """The tensors (or, with ``arrays`` and no limits, numpy arrays) the
    header's table describes, read in order from ``offset``; and the offset
    past the last one."""
    tensors = []
    for entry in entries:
        read = _read_array if arrays and limits is None else _read_tensor
        tensor, offset = (
            read(entry, payload, offset) if limits is None else _read_checked_tensor(entry, payload, offset, limits)
        )
        tensors.append(tensor)
    return tensors, offset


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


def _read_array(entry, payload: bytes, offset: int):
    """A tensor of the grader's own request as a numpy array (no torch)."""
    import math

    import numpy

    dtype_name, shape, device, nbytes = entry
    dtype = numpy.dtype(str(dtype_name))
    shape = [int(n) for n in shape]
    if str(device) != "cpu" or nbytes != math.prod(shape) * dtype.itemsize or offset + nbytes > len(payload):
        raise BoundaryError("an array's bytes do not match its shape")
    array = numpy.frombuffer(bytearray(memoryview(payload)[offset : offset + nbytes]), dtype=dtype).reshape(shape)
    return array, offset + nbytes


_DEVICE = re.compile(r"cpu|cuda(:[0-9]{1,4})?")


def _read_checked_tensor(entry, payload: bytes, offset: int, limits: Limits):
    """A tensor of an answer: every field is checked before anything is allocated."""
    import math

    import torch

    if type(entry) is not list or len(entry) != 4:
        raise refuse("malformed", problem="tensor table")
    dtype_name, shape, device, nbytes = entry
    if type(dtype_name) is not str or dtype_name not in limits.dtypes:
        raise refuse("dtype", dtypes=", ".join(limits.dtypes))
    if type(device) is not str or not _DEVICE.fullmatch(device):
        raise refuse("device")  # meta tensors too: they hold no values to compare
    if type(shape) is not list or any(type(n) is not int for n in shape) or type(nbytes) is not int:
        raise refuse("malformed", problem="tensor table")
    if len(shape) > limits.max_dims:
        raise refuse("max_dims", len(shape), limits.max_dims)
    for n in shape:
        if not 0 <= n <= limits.max_bytes:
            raise refuse("dim_size", shown_number(n), limits.max_bytes)
    dtype = getattr(torch, dtype_name)
    needed = math.prod(shape) * dtype.itemsize
    if nbytes != needed:
        raise refuse("tensor_bytes", shown_number(nbytes), needed=shown_number(needed))
    if offset + nbytes > len(payload):
        raise refuse("tensor_past_end", nbytes, len(payload) - offset)
    return _tensor_from(payload, offset, nbytes, dtype, shape, torch.device(device)), offset + nbytes


def _tensor_from(payload: bytes, offset: int, nbytes: int, dtype, shape: list, device):
    import torch

    # one copy of the bytes (a slice of bytes would be a second), writable
    # and aligned for the tensor to own
    tensor = (
        torch.frombuffer(bytearray(memoryview(payload)[offset : offset + nbytes]), dtype=dtype)
        if nbytes
        else torch.empty(0, dtype=dtype)
    ).reshape(shape)
    return tensor if device.type == "cpu" else tensor.to(device)


def _walk(obj, tensors: list):
    if type(obj) is dict:
        if _TENSOR in obj:
            return tensors[int(obj[_TENSOR])]
        return {k: _walk(v, tensors) for k, v in obj.items()}
    if type(obj) is list:
        return [_walk(v, tensors) for v in obj]
    return obj


def _walk_checked(obj, tensors: list, meter: Meter, depth: int):
    # Meter's checks inlined: this runs for every value of every answer
    meter.items += 1
    if meter.items > meter.limits.max_items:
        raise refuse("max_items", meter.items, meter.limits.max_items)
    kind = type(obj)
    if kind is str:
        if len(obj) > meter.limits.max_string:
            meter.text(obj)
        return obj
    if kind is dict:
        if _TENSOR in obj:
            index = obj[_TENSOR]
            if len(obj) != 1 or type(index) is not int or not 0 <= index < len(tensors):
                raise refuse("malformed", problem="tensor reference")
            return tensors[index]
        meter.deeper(depth + 1)
        longest = meter.limits.max_string
        for key in obj:
            if len(key) > longest:
                meter.text(key)
        return {k: _walk_checked(v, tensors, meter, depth + 1) for k, v in obj.items()}
    if kind is list:
        meter.deeper(depth + 1)
        return [_walk_checked(v, tensors, meter, depth + 1) for v in obj]
    return obj

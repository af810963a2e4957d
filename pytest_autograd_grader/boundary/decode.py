"""The grader's side: a loaded tree back into records (``TensorRecord``,
``ErrorRecord``, ``ObjectRecord``), checking every field's type and size.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .records import PRIMITIVES, REPR_LIMIT, BoundaryError, ErrorRecord, Limits, ObjectRecord, TensorRecord, refuse
from .shortening import shorten
from .wire import Meter

# -- decoding on the grader's side -----------------------------------------


def _exact_tensor(value, field: str, limits: Limits | None = None):
    import torch

    if value is None and field == "grad":
        return None
    if type(value) is not torch.Tensor:
        raise refuse("field_type", field=field, type=type(value).__name__)
    if limits is not None:
        if value.device.type not in ("cpu", "cuda"):
            raise refuse("device")
        if str(value.dtype).removeprefix("torch.") not in limits.dtypes:
            raise refuse("dtype", dtypes=", ".join(limits.dtypes))
        if value.dim() > limits.max_dims:
            raise refuse("max_dims", value.dim(), limits.max_dims)
    return value


def _expect(value, kinds, field: str):
    if type(value) not in kinds:
        raise refuse("field_type", field=field, type=type(value).__name__)
    return value


def decode(tree: Any, limits: Limits | None = None, trace: Any = None) -> Any:
    """Rebuild records from the plain tree, accepting exact types only.

    With ``limits`` the tree is also measured (values, nesting, texts,
    tensors' devices and dtypes) and a record of the wrong form is refused
    with a ``BoundaryError``, whatever went wrong, never another exception.
    Every ``ErrorRecord`` made carries ``trace``, the trace of the call
    whose answer it is."""
    if limits is None:
        return _decode(tree, None, None, 0, trace)
    try:
        return _decode(tree, limits, Meter(limits, limits.max_depth), 0, trace)
    except BoundaryError:
        raise
    except RecursionError:
        raise refuse("max_depth", limits.max_depth + 1, limits.max_depth) from None
    except Exception as exc:  # a missing field, a field of the wrong type
        raise refuse("malformed", problem=type(exc).__name__) from None


def _text(value: Any, field: str, limits: Limits | None, meter: Meter | None) -> str:
    # decode makes a meter exactly when it has limits
    if limits is None or meter is None:
        return str(value)  # as it always was for trees the grader made
    meter.text(_expect(value, (str,), field))
    return value


def _decode(tree: Any, limits: Limits | None, meter: Meter | None, depth: int, trace: Any = None) -> Any:
    if meter is not None:
        meter.item()
    kind = type(tree)
    if kind in PRIMITIVES:
        if kind is str and meter is not None:
            meter.text(tree)
        return tree
    if kind is not dict or "$" not in tree:
        raise refuse("not_record", type=kind.__name__)
    tag = tree["$"]
    record = _RECORDS.get(tag) if isinstance(tag, str) else None
    if record is None:
        raise refuse("unknown_record")
    return record(tree, limits, meter, depth, trace)


def _tensor(tree: dict, limits: Limits | None, meter: Meter | None, depth: int, trace: Any) -> TensorRecord:
    data = _exact_tensor(tree["data"], "data", limits)
    grad_fn = _expect(tree["grad_fn"], (str, type(None)), "grad_fn")
    if grad_fn is not None and meter is not None:
        meter.text(grad_fn)
    return TensorRecord(
        data=data,
        grad=_exact_tensor(tree["grad"], "grad", limits),
        requires_grad=_expect(tree["requires_grad"], (bool,), "requires_grad"),
        is_leaf=_expect(tree["is_leaf"], (bool,), "is_leaf"),
        grad_fn=grad_fn,
        retains_grad=_expect(tree["retains_grad"], (bool,), "retains_grad"),
        dtype=str(data.dtype).removeprefix("torch."),
        device=str(data.device),
        shape=tuple(int(s) for s in data.shape),
    )


def _sequence(tree: dict, limits: Limits | None, meter: Meter | None, depth: int, trace: Any) -> list | tuple:
    raw = _expect(tree["items"], (list,), "items")
    if meter is not None:
        meter.deeper(depth + 1)
    items = [_decode(x, limits, meter, depth + 1, trace) for x in raw]
    return items if tree["$"] == "list" else tuple(items)


def _mapping(tree: dict, limits: Limits | None, meter: Meter | None, depth: int, trace: Any) -> dict:
    keys = _expect(tree["keys"], (list,), "keys")
    values = _expect(tree["values"], (list,), "values")
    if meter is not None:
        meter.deeper(depth + 1)
        if len(keys) != len(values):
            raise refuse("dict_keys", len(keys), len(values))
        for key in keys:
            if type(key) is str:
                meter.text(key)
    return {(_expect(k, (str, int), "key")): _decode(v, limits, meter, depth + 1, trace) for k, v in zip(keys, values)}


def _error(tree: dict, limits: Limits | None, meter: Meter | None, depth: int, trace: Any) -> ErrorRecord:
    raised_by = tree.get("raised_by", "nobody")
    raised_at = tree.get("raised_at", -1)
    if limits is not None:
        _expect(raised_at, (int,), "raised_at")
        line = _expect(tree["line"], (int,), "line")
        if raised_by not in ("library", "student", "nobody"):
            raise refuse("malformed", problem="raised_by")
    else:
        line = int(tree["line"])
    return ErrorRecord(
        type=_text(tree["type"], "type", limits, meter),
        message=_text(tree["message"], "message", limits, meter),
        file=_text(tree["file"], "file", limits, meter),
        line=line,
        code=_text(tree["code"], "code", limits, meter),
        raised_by=str(raised_by),
        raised_at=int(raised_at),
        trace=trace,
    )


def _ndarray(tree: dict, limits: Limits | None, meter: Meter | None, depth: int, trace: Any) -> Any:
    return _exact_tensor(tree["data"], "data", limits).numpy()


def _object(tree: dict, limits: Limits | None, meter: Meter | None, depth: int, trace: Any) -> ObjectRecord:
    return ObjectRecord(
        type=_text(tree["type"], "type", limits, meter), repr=_text(tree["repr"], "repr", limits, meter)
    )


def _function(tree: dict, limits: Limits | None, meter: Meter | None, depth: int, trace: Any) -> ObjectRecord:
    # A function the student returned: its name only, nothing to call.
    qualname = _text(tree["qualname"], "qualname", limits, meter)
    return ObjectRecord(type="function", repr=f"<function {shorten(qualname, REPR_LIMIT)}>")


# each record's tag (the tree's "$") -> the step that rebuilds it
_RECORDS: dict[str, Callable[[dict, Limits | None, Meter | None, int, Any], Any]] = {
    "tensor": _tensor,
    "list": _sequence,
    "tuple": _sequence,
    "dict": _mapping,
    "error": _error,
    "ndarray": _ndarray,
    "object": _object,
    "function": _function,
}

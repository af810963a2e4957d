"""Why an answer has the wrong form. "expected a tuple or list of 2
values, got None" says what is wrong but not why; the line under it names
the likely slip in the student's ``return`` (no ``return`` on some path, a
``yield``, a stacked tensor, a trailing comma, ``.item()``, ...).
"""

from __future__ import annotations

from typing import Any

from ..boundary.records import ErrorRecord, ObjectRecord
from ..i18n import msg

# objects that make their values only when looped over
_LAZY = {
    "map",
    "filter",
    "zip",
    "range",
    "reversed",
    "enumerate",
    "dict_keys",
    "dict_values",
    "dict_items",
    "itertools.chain",
    "itertools.islice",
}
_OBJECTS = {
    "generator": "why.generator",
    "function": "why.function",
    "builtin_function_or_method": "why.function",
    "method": "why.function",
    "set": "why.set",
    "frozenset": "why.set",
}


def _tensor_like(value: Any) -> bool:
    # a TensorRecord, a tensor or a numpy array (none imported here: a check may run without torch loaded)
    return not isinstance(value, (ObjectRecord, ErrorRecord, str, bytes)) and hasattr(value, "shape")


def _object_reason(value: Any) -> str | None:
    if value is None:
        return msg("why.none")
    if isinstance(value, ObjectRecord):
        if value.type in _OBJECTS:
            return msg(_OBJECTS[value.type])
        if value.type in _LAZY:
            return msg("why.lazy", type=value.type)
    if isinstance(value, ErrorRecord):
        return msg("why.error_returned")
    if isinstance(value, str):
        return msg("why.string")
    if isinstance(value, dict):
        return msg("why.dict")
    return None


def why_not_sequence(produced: Any, n: int) -> str:
    """Why ``produced`` is not the ``n`` values asked for (a tuple or a list)."""
    if isinstance(produced, (list, tuple)):
        if len(produced) == 1 and isinstance(produced[0], (list, tuple)) and len(produced[0]) == n:
            return msg("why.nested", expected=n)
        return msg("why.too_few" if len(produced) < n else "why.too_many", got=len(produced), expected=n)
    reason = _object_reason(produced)
    if reason is not None:
        return reason
    if _tensor_like(produced) or type(produced) in (int, float, bool):
        return msg("why.one_for_many", n=n)
    return msg("why.other")


def why_not_one(produced: Any, tensor: bool = True) -> str:
    """Why ``produced`` is not the one value (a tensor, when ``tensor``) asked for."""
    if isinstance(produced, (list, tuple)):
        return msg("why.many_for_one", count=len(produced))
    reason = _object_reason(produced)
    if reason is not None:
        return reason
    if tensor and type(produced) in (int, float, bool):
        return msg("why.number_for_tensor")
    return msg("why.other")


def with_reason(text: str, reason: str) -> str:
    """A form failure's line and, under it, the likely reason."""
    return f"{text}\n{reason}" if reason else text

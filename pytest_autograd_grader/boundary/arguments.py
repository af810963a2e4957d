"""The check's arguments to student code, made into plain trees on the
grader's side before anything is sent.

What cannot be handed to the sandbox is refused here, naming the argument,
as the check's own mistake (``CheckValueError``): a worker that could not
rebuild an argument would report it from the student's process, whose word
proves nothing, and the check would fail the student. A numpy-only
exercise (a worker without torch) is handed numpy arrays, never tensors.
"""

from __future__ import annotations

import types
from typing import Any

from ..i18n import msg
from ..outcomes import NOT_A_STUDENT_VALUE, CheckValueError
from .encode import encode
from .helpers import HelperError, ship
from .records import PRIMITIVES, ErrorRecord, FunctionRef, ObjectRecord, TensorRecord

# numpy dtypes both kinds of worker rebuild (a torch worker reads them as
# tensors first): numbers and booleans of the sizes torch knows
ARRAY_DTYPES = frozenset(
    (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
)
TORCH_NAMES = ("torch", "functorch", "torchvision")


def encode_request(
    args: tuple,
    kwargs: dict,
    grad_outputs: tuple | None = None,
    *,
    function: str = "",
    numpy_only: bool = False,
    run: bool = False,
) -> dict:
    """The request's ``args``, ``kwargs`` (and ``grad_outputs``) as trees.
    ``function`` names the student's function in messages; with ``run`` the
    first argument is the function that drives the student's module."""
    encoder = _Encoder(function, numpy_only)
    items = []
    for number, value in enumerate(args):
        where = (
            msg("check.where.helper")
            if run and number == 0
            else msg("check.where.positional", n=number + (0 if run else 1))
        )
        items.append(encoder.encode(value, where))
    request = {
        "args": {"$": "tuple", "items": items},
        "kwargs": encoder.mapping(kwargs, lambda key: msg("check.where.keyword", name=key)),
    }
    if grad_outputs is not None:
        request["grad_outputs"] = {
            "$": "tuple",
            "items": [
                encoder.encode(value, msg("check.where.grad_output", n=number + 1))
                for number, value in enumerate(grad_outputs)
            ],
        }
    return request


class _Encoder:
    def __init__(self, function: str, numpy_only: bool):
        self.function = function or msg("check.argument.function")
        self.numpy_only = numpy_only

    def refuse(self, value: Any, where: str, why: str) -> CheckValueError:
        # a record is the grader's wrapping of an answer: passing a tensor's
        # record is the check's slip; an odd object or error may be the student's
        culprit = value if type(value) in (ObjectRecord, ErrorRecord) else NOT_A_STUDENT_VALUE
        return CheckValueError(
            msg("check.argument", where=where, function=self.function, why=why),
            culprit,
            msg("check.argument.student", where=where, type=_kind(value)),
        )

    def encode(self, obj: Any, where: str) -> Any:
        kind = type(obj)
        if kind in PRIMITIVES:
            return obj
        if kind in (list, tuple):
            return {
                "$": kind.__name__,
                "items": [self.encode(item, f"{where}[{index}]") for index, item in enumerate(obj)],
            }
        if kind is dict:
            return self.dict_tree(obj, where)
        if kind in (types.FunctionType, types.BuiltinFunctionType, FunctionRef):
            return self.function_tree(obj, where)
        return self.tensor_or_array(obj, where)

    def dict_tree(self, obj: dict, where: str) -> dict:
        for key in obj:
            if type(key) not in (str, int):
                raise self.refuse(obj, where, msg("check.argument.key", type=type(key).__name__))
        return self.mapping(obj, lambda key: f"{where}[{key!r}]")

    def tensor_or_array(self, obj: Any, where: str) -> Any:
        """A tensor or a numpy array or number; anything else is refused."""
        torch = _torch()
        if torch is not None and isinstance(obj, torch.Tensor):
            if self.numpy_only:
                raise self.refuse(obj, where, msg("check.argument.numpy_only"))
            return encode(obj)  # a subclass (a Parameter) as a plain tensor
        if type(obj) is TensorRecord:
            raise self.refuse(obj, where, msg("check.argument.record"))
        numpy = _numpy()
        if numpy is not None and isinstance(obj, (numpy.ndarray, numpy.generic)):
            return self.array(obj, where, numpy)
        raise self.refuse(obj, where, msg("check.argument.type", type=_kind(obj)))

    def mapping(self, obj: dict, where_of) -> dict:
        return {
            "$": "dict",
            "keys": list(obj),
            "values": [self.encode(value, where_of(key)) for key, value in obj.items()],
        }

    def array(self, obj: Any, where: str, numpy) -> dict:
        """A numpy array of numbers, rebuilt as one of the same dtype and
        shape in the worker, in a numpy-only one without torch; a scalar as
        a Python number (a complex one as a numpy scalar)."""
        if type(obj) is not numpy.ndarray and not isinstance(obj, numpy.generic):
            raise self.refuse(obj, where, msg("check.argument.type", type=_kind(obj)))
        if obj.dtype.name not in ARRAY_DTYPES:
            raise self.refuse(obj, where, msg("check.argument.dtype", dtype=str(obj.dtype)))
        if isinstance(obj, numpy.generic) and obj.dtype.kind in "biuf":
            return obj.item()  # a Python number, as a numpy scalar always arrived
        data = numpy.array(obj, dtype=obj.dtype.newbyteorder("="), copy=True)
        return {"$": "ndarray", "data": data, "scalar": isinstance(obj, numpy.generic)}

    def function_tree(self, obj: Any, where: str) -> dict:
        if type(obj) is FunctionRef:
            return {"$": "function", "module": obj.module, "qualname": obj.qualname, "file": obj.file}
        module = str(getattr(obj, "__module__", "") or "")
        if self.numpy_only and module.split(".")[0] in TORCH_NAMES:
            raise self.refuse(
                obj, where, msg("check.helper.torch", name=getattr(obj, "__qualname__", "?"), what=module)
            )
        try:
            return ship(obj, self.numpy_only, self.value_tree)
        except HelperError as exc:
            raise self.refuse(obj, where, str(exc)) from None

    def value_tree(self, value: Any, name: str) -> Any:
        """A module-level value a helper uses, sent with it."""
        return self.encode(value, name)


def _kind(value: Any) -> str:
    kind = type(value)
    if kind is ObjectRecord:
        return value.type
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _torch():
    import sys

    return sys.modules.get("torch")


def _numpy():
    import sys

    return sys.modules.get("numpy")


def encode_value(obj: Any, *, numpy_only: bool = False) -> Any:
    """One argument's tree (``encode_request`` for a whole request)."""
    return _Encoder("", numpy_only).encode(obj, msg("check.where.positional", n=1))

"""The plain data that crosses between student code and the grader: the
records checks read and the ``Limits`` an answer is read under.

Student objects are turned into a tree of builtins and plain tensors
(``encode.py``), written as JSON plus raw tensor bytes (``wire.dumps``) and
read back by ``wire.loads``, which runs no code and can only produce
builtins and plain tensors (no pickle, not even torch's weights-only one).
``decode.py`` then
enforces exact types, so a tensor subclass, an object with a lying ``__eq__``
or a ``__torch_function__`` override can never reach a comparison: at most its
type name and repr do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 32
MAX_ITEMS = 100_000
REPR_LIMIT = 200
PRIMITIVES = (bool, int, float, str, type(None))
# module_loader.Loader's unique module names; feedback shows the student's own name
STUDENT_PREFIX = re.compile(r"_grade_submission_\d+_")


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
    dtypes: tuple[str, ...] = (
        "bool",
        "uint8",
        "int8",
        "int16",
        "int32",
        "int64",
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )


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


def refuse(cap: str, measured: Any = None, limit: Any = None, **fields: Any) -> BoundaryError:
    from ..i18n import msg

    return BoundaryError(msg(f"limit.{cap}", measured=measured, limit=limit, **fields), cap, measured, limit)


def shown_number(n: int) -> str:
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
        return (
            f"TensorRecord(shape={self.shape}, dtype={self.dtype}, device={self.device}, "
            f"requires_grad={self.requires_grad}, is_leaf={self.is_leaf}, grad_fn={self.grad_fn}, "
            f"grad={'None' if self.grad is None else 'tensor'})"
        )


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
    # Which torch call of the student's raised this very exception object:
    # an index into ``trace.errors`` (-1: none the trace recorded did).
    raised_at: int = -1
    # The trace of the student call that handed the error back (set by the
    # grader when it reads the answer; ``tracing.Trace``).
    trace: Any = field(default=None, compare=False, repr=False)


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

"""Comparing answers: the tolerances, the text that shows a tensor, the
lines that tell two answers apart, and the helpers checks use to recognise
mistakes of their own (``values``, ``same``, ``first_suspect``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..boundary.records import ErrorRecord, ObjectRecord, TensorRecord
from ..boundary.shortening import shorten
from ..boundary.untrusted import quoted
from ..i18n import MissingField, msg, note_diagnosis, text
from ..outcomes import CheckError
from .malformed import why_not_one, why_not_sequence

if TYPE_CHECKING:
    from torch import Tensor

# torch.testing.assert_close's documented defaults, spelled out so feedback
# can show them; float32 is widened on CUDA (different reduction orders).
TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}
CUDA_FLOAT32 = (1e-5, 1e-5)
SHOWN_VALUES = 6


def tolerances(dtype: str, device: str) -> tuple[float, float]:
    if dtype == "float32" and device.startswith("cuda"):
        return CUDA_FLOAT32
    return TOLERANCES.get(dtype, (0.0, 0.0))


def close(got: Tensor, expected: Tensor, rtol: float, atol: float) -> bool:
    """torch.testing.assert_close's verdict on two tensors of one shape,
    dtype and device type: |got - expected| <= atol + rtol * |expected| at
    every element, NaN close to nothing, equal infinities close, integers
    and booleans equal where both tolerances are 0. assert_close itself
    imports torch.distributed at its first call (0.3 s of every grading
    run) and takes 10x as long."""
    import torch

    if got.device != expected.device:
        got = got.to(expected.device)
    return bool(torch.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=False).all())


def expected_tensor(expected: Any, what: str) -> tuple[Tensor, bool, bool]:
    """The check's expected value as a tensor, and whether it states its
    own dtype and its own device. A tensor states both; a numpy array its
    dtype; a Python number or a list of numbers neither: it is compared in
    the answer's dtype and on its device. Anything else is the check's
    mistake (``CheckValueError``), unless it came from student code (a check
    comparing two of the student's answers)."""
    import numpy
    import torch

    from ..outcomes import CheckValueError

    if type(expected) is TensorRecord:
        expected = expected.data
    if isinstance(expected, torch.Tensor):
        return expected, True, True
    array = None
    if isinstance(expected, (numpy.ndarray, numpy.generic)) and type(expected).__module__ == "numpy":
        array = expected
    elif type(expected) in (bool, int, float, list, tuple):
        try:
            array = numpy.asarray(expected)
        except (ValueError, TypeError, OverflowError):
            array = None
    if array is not None and array.dtype.kind in "biufc" and array.dtype.name != "longdouble":
        tensor = torch.from_numpy(numpy.array(array, dtype=array.dtype.newbyteorder("="), copy=True))
        return tensor, type(expected) not in (bool, int, float, list, tuple), False
    raise CheckValueError(
        msg("check.expected", what=what, type=kind_of(expected)),
        expected,
        msg("cmp.not_tensor", what=what, got=kind_of(expected)),
    )


def matched_expected(expected: Tensor, got: Tensor, own_dtype: bool, own_device: bool) -> Tensor:
    """An expected value that states no dtype (device) in the answer's."""
    if not own_dtype and (got.is_floating_point() or got.is_complex()):
        expected = expected.to(got.dtype)
    return expected if own_device else expected.to(got.device)


def describe(t: Tensor) -> str:
    values = t.detach().flatten()[:SHOWN_VALUES].double().cpu().tolist()
    shown = ", ".join(f"{v:.6g}" for v in values)
    more = ", ..." if t.numel() > SHOWN_VALUES else ""
    return msg("cmp.tensor", shape=tuple(t.shape), dtype=str(t.dtype).removeprefix("torch."), values=shown + more)


_SCALAR_KINDS = {bool: "kind.bool", int: "kind.int", float: "kind.float", str: "kind.str"}


def kind_of(value: Any) -> str:
    if value is None:
        return "None"
    if type(value) in _SCALAR_KINDS:
        return msg("kind.value", kind=msg(_SCALAR_KINDS[type(value)]), value=shorten(repr(value), 80))
    if isinstance(value, ErrorRecord):
        return msg("kind.error", type=value.type, message=value.message)
    if isinstance(value, ObjectRecord):
        return msg("kind.object", type=quoted(value.type), repr=quoted(value.repr))
    if isinstance(value, TensorRecord):
        return msg("kind.tensor", shape=value.shape)
    return msg("kind.other", type=type(value).__name__)


def hint_text(hint: str, **fields: Any) -> str:
    """A check's hint: a message id from the catalogue, or plain text (then
    noted as the student's diagnosis, as ``msg`` notes a diag.* id)."""
    said = message_text(hint, **fields)
    note_diagnosis(hint, said)
    return said


def message_text(message: str, **fields: Any) -> str:
    """What a check passes as "a message id or plain text", ``fields``
    filled in (``i18n.text``); a field the text needs and the check did not
    pass is the check's error, not the student's failure."""
    try:
        return text(message, **fields)
    except MissingField as exc:
        raise CheckError(str(exc)) from None


def difference_lines(produced: Any, expected: Any, what: str, labels: Sequence[str] | None = None) -> list[str]:
    """One line per way ``produced`` differs from ``expected``."""
    if expected is None:
        return [] if produced is None else [msg("cmp.value_kind", what=what, expected="None", got=kind_of(produced))]
    sequence = isinstance(expected, (list, tuple))
    if type(expected) in _SCALAR_KINDS:
        # One policy for scalars: Python and numpy scalars of the right kind
        # (numpy's arrive as Python's), an int where a float is expected.
        accepted = (int, float) if type(expected) is float else (type(expected),)
        if type(produced) not in accepted:
            return [
                msg("cmp.value_kind", what=what, expected=msg(_SCALAR_KINDS[type(expected)]), got=kind_of(produced)),
                why_not_one(produced, tensor=False),
            ]
        return [] if produced == expected else [msg("cmp.value", what=what, expected=expected, got=produced)]
    if type(produced) is not type(expected) and not (sequence and isinstance(produced, (list, tuple))):
        why = why_not_sequence(produced, len(expected)) if sequence else why_not_one(produced, tensor=False)
        return [
            msg(
                "cmp.container",
                what=what,
                expected=msg("kind.other", type=type(expected).__name__),
                got=kind_of(produced),
            ),
            why,
        ]
    if sequence:
        if len(produced) != len(expected):
            return [
                msg("cmp.count", what=what, expected=len(expected), got=len(produced)),
                why_not_sequence(produced, len(expected)),
            ]
        names = labels or [f"{what}[{i}]" for i in range(len(expected))]
        return [line for p, e, name in zip(produced, expected, names) for line in difference_lines(p, e, name)]
    if isinstance(expected, dict):
        if set(produced) != set(expected):
            return [msg("cmp.value", what=f"{what} keys", expected=sorted(expected), got=sorted(produced))]
        return [line for key in expected for line in difference_lines(produced[key], expected[key], f"{what}[{key!r}]")]
    return [] if produced == expected else [msg("cmp.value", what=what, expected=expected, got=produced)]


# -- helpers for checks that recognise mistakes of their own ---------------------


def values(produced: Any) -> Tensor | None:
    """A produced tensor (a record, a tensor or a numeric numpy array) as a
    float64 CPU tensor, or None when it is none of these."""
    import numpy
    import torch

    if isinstance(produced, TensorRecord):
        produced = produced.data
    if isinstance(produced, numpy.ndarray) and produced.dtype.kind in "biuf":
        return torch.from_numpy(produced).double()
    if type(produced) is torch.Tensor:
        return produced.detach().double().cpu()
    return None


def same(a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-8) -> bool:
    """Whether two produced or expected values (see ``values``) are equal
    up to a tolerance loose enough for float64 answers computed another way
    and tight enough to tell a mistake from the right answer."""
    import torch

    a, b = values(a), values(b)
    return a is not None and b is not None and a.shape == b.shape and bool(torch.allclose(a, b, rtol=rtol, atol=atol))


def first_suspect(produced: Any, expected: Any, candidates: Callable[[], Sequence[tuple[Any, str]]]) -> str | None:
    """The diagnosis of the first candidate a wrong ``produced`` equals, or
    None. ``candidates()`` (called only for a wrong answer) gives (tensor,
    diagnosis) pairs: what a known mistake produces, and its name. A
    candidate equal to the right answer proves nothing and is skipped."""
    value, want = values(produced), values(expected)
    if want is None:
        raise CheckError(f"first_suspect: the expected value is no tensor but {type(expected).__name__}")
    if value is None or value.shape != want.shape or same(value, expected):
        return None
    return next((hint for suspect, hint in candidates() if same(value, suspect) and not same(suspect, expected)), None)

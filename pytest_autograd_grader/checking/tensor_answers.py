"""A tensor answer's checks after its form: the answer read as a tensor,
its values against the expected within tolerances (a miss told as the
largest difference and its diagnosis), and its autograd metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..boundary.records import TensorRecord
from ..i18n import msg
from ..outcomes import GradeFailure
from .answers import author_diagnosis
from .compare import close, describe, hint_text, kind_of, tolerances
from .malformed import why_not_one, with_reason
from .misconceptions import Context, diagnose_none, diagnose_values

if TYPE_CHECKING:
    from torch import Tensor


def as_tensor(produced: Any, expected: Tensor, what: str) -> Tensor:
    """``produced`` (a record, tensor, numeric numpy array, or a number
    where one element is expected) as a tensor; GradeFailure otherwise."""
    import numpy
    import torch

    if isinstance(produced, TensorRecord):
        data: Tensor = produced.data  # records hold a plain tensor (typed Any there)
        return data
    if type(produced) is torch.Tensor:
        return produced
    if isinstance(produced, numpy.ndarray) and produced.dtype.kind in "biuf":
        return torch.from_numpy(produced)
    if type(produced) in (int, float) and expected.numel() == 1:
        return torch.tensor(produced, dtype=expected.dtype, device=expected.device).reshape(expected.shape)
    raise GradeFailure(with_reason(msg("cmp.not_tensor", what=what, got=kind_of(produced)), why_not_one(produced)))


def assert_values(
    got: Tensor,
    expected: Tensor,
    what: str,
    context: Context,
    tolerance: tuple[float | None, float | None],
    diagnose: Callable[[], str | None] | None,
) -> None:
    """GradeFailure unless ``got`` is close to ``expected`` within
    ``tolerance`` (rtol, atol; None: torch's for the dtype and device):
    expected against produced, the largest difference, and the author's
    ``diagnose()`` or else the generic diagnosis."""
    default_rtol, default_atol = tolerances(str(expected.dtype).removeprefix("torch."), expected.device.type)
    rtol = default_rtol if tolerance[0] is None else tolerance[0]
    atol = default_atol if tolerance[1] is None else tolerance[1]
    if close(got.to(expected.dtype), expected, rtol, atol):
        return
    a, b = got.double().cpu(), expected.double().cpu()
    lines = [
        msg("cmp.mismatch", what=what),
        msg("cmp.expected", desc=describe(expected)),
        msg("cmp.produced", desc=describe(got)),
        _largest(a, b, rtol, atol),
    ]
    if context.ones_vjp is not None:
        context.ones_vjp = context.ones_vjp.double().cpu()
    hint = author_diagnosis(diagnose, what) or diagnose_values(a, b, context)
    if hint:
        lines.append(hint)
    raise GradeFailure("\n".join(lines))


def _largest(a: Tensor, b: Tensor, rtol: float, atol: float) -> str:
    """The line that names the largest difference between ``a`` and ``b`` and where."""
    import torch

    diff = (a - b).abs()
    flat = int(diff.flatten().argmax()) if diff.numel() else 0
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape)) if a.dim() else ()
    return msg("cmp.largest", diff=float(diff.max()) if diff.numel() else 0.0, index=index, rtol=rtol, atol=atol)


def meta_problem(record: Any, what: str, hint: str | None, expected: dict[str, Any]) -> str | None:
    """What is wrong with the autograd metadata of ``record`` against
    ``expected`` (field -> value; ``has_grad``: whether .grad holds a
    tensor), the first field that differs, with ``hint`` or the built-in
    diagnosis; None when all agree. GradeFailure for no tensor."""
    if not isinstance(record, TensorRecord):
        raise GradeFailure(with_reason(msg("cmp.not_tensor", what=what, got=kind_of(record)), why_not_one(record)))
    for field, want in expected.items():
        got = record.grad is not None if field == "has_grad" else getattr(record, field)
        if got == want:
            continue
        text = msg("cmp.meta", what=what, field=field, expected=want, got=got)
        if hint:
            text += "\n" + hint_text(hint)
        elif field == "has_grad" and want:
            text += "\n" + diagnose_none(Context(holder=record))
        elif field == "is_leaf" and want and record.grad_fn:
            text += "\n" + msg("diag.none_not_leaf", grad_fn=record.grad_fn)
        return text
    return None

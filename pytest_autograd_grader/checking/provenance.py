"""Where an error and a gradient came from, read from the student's trace.

An autograd error counts as PyTorch's only when the trace holds the torch
call that raised that very exception object, and that call is one that
raises it given what the trace recorded of it (a second backward through a
graph an earlier call freed, a non-scalar backward given no gradient, ...).
A call counts toward "one backward per micro-batch" only for the gradient
it added. Both read what the student's process reports about itself, so
neither is proof; together they make a forgery tell several lies that
agree with each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..boundary.tracing import FACTORIES
from ..i18n import msg
from ..outcomes import GradeFailure

BACKWARD_OPS = frozenset({"backward", "autograd.grad"})
_IN_PLACE_DUNDERS = frozenset(
    {
        "__iadd__",
        "__isub__",
        "__imul__",
        "__itruediv__",
        "__ifloordiv__",
        "__ipow__",
        "__imatmul__",
        "__imod__",
        "__iand__",
        "__ior__",
        "__ixor__",
        "__ilshift__",
        "__irshift__",
        "__setitem__",
    }
)
_SET_REQUIRES_GRAD = frozenset({"requires_grad=", "requires_grad_"})
# the factory functions that take requires_grad= (all but from_numpy), and
# nn.Parameter's constructor
_MAKE_REQUIRING_GRAD = (FACTORIES - {"from_numpy"}) | {"_make_subclass"}


class ForgedError(GradeFailure):
    """An error PyTorch did not raise: the check ends with no points, even
    inside ``autograd.part`` (made-up errors earn nothing)."""


def _in_place(op: str) -> bool:
    return (op.endswith("_") and not op.endswith("__")) or op in _IN_PLACE_DUNDERS


def _backward_rule(name: str, call: Any, op: str) -> str | None:
    """Why the backward or autograd.grad call ``call`` cannot have raised the
    error ``name``; None when it can."""
    if name == "backward_twice" and call.through_freed is not True:
        return msg("cmp.from_call.not_freed", op=op)
    if name == "implicit_grad" and (call.gradient or call.scalar):
        return msg("cmp.from_call.implicit", op=op)
    if name == "shape_mismatch" and not call.gradient:
        return msg("cmp.from_call.no_gradient", op=op)
    if name == "no_grad_fn" and not call.no_graph:
        return msg("cmp.from_call.has_graph", op=op)
    if name == "unused_input" and call.kind != "grad":
        return msg("cmp.from_call.other_op", op=op)
    return None


def _op_rule(name: str, raised: Any) -> str | None:
    """Why the op ``raised.op`` (not a backward call) cannot have raised ``name``."""
    op = raised.op
    if name == "inplace_leaf" and _in_place(op) and raised.leaf:
        return None
    if name == "nonleaf_requires_grad" and op in _SET_REQUIRES_GRAD:
        return None
    if name == "int_requires_grad" and (op in _SET_REQUIRES_GRAD or op in _MAKE_REQUIRING_GRAD):
        return None
    if name == "inplace_leaf" and _in_place(op):
        return msg("cmp.from_call.not_leaf", op=op)
    return msg("cmp.from_call.other_op", op=op)


def error_problem(name: str, record: Any, trace: Any) -> str | None:
    """Why ``trace`` does not show PyTorch raising ``record`` (an
    ErrorRecord matching the known error ``name``): a reason to quote, or
    None when it shows the call that raised it, of a kind that raises it."""
    if trace is None:
        return msg("cmp.from_call.none")
    if trace.tampered:
        return ", ".join(msg(f"trace.tampered.{how}") for how in trace.tampered)
    if not 0 <= record.raised_at < len(trace.errors):
        return msg("cmp.from_call.none")
    raised = trace.errors[record.raised_at]
    if raised.type != record.type:
        return msg("cmp.from_call.none")
    backward = raised.op in BACKWARD_OPS
    if backward and raised.own_code:
        return msg("cmp.from_call.own_code", op=raised.op)
    if name in ("inplace_leaf", "nonleaf_requires_grad", "int_requires_grad"):
        return _op_rule(name, raised) if not backward else msg("cmp.from_call.other_op", op=raised.op)
    if not backward or not 0 <= raised.call < len(trace.calls):
        return msg("cmp.from_call.other_op", op=raised.op)
    call = trace.calls[raised.call]
    if call.raised != record.type:
        return msg("cmp.from_call.none")
    return _backward_rule(name, call, raised.op)


# -- what each call added ------------------------------------------------------


def _same(a: Any, b: Any, atol: float) -> bool:
    import torch

    if a is None or b is None or a.shape != b.shape:
        return False
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return bool(torch.allclose(a, b, rtol=1e-5, atol=atol))


def _slack(added: list) -> float:
    """How far an added gradient may be off: it is read as .grad after the
    call less .grad before, so it carries the rounding of the whole sum."""
    import torch

    total = sum(float(a.detach().abs().max()) for a in added if a.numel())
    eps = max(float(torch.finfo(a.dtype).eps) for a in added)
    return 8 * eps * total + 1e-12


def calls_added(trace: Any, expected: Sequence, argument: int = 0, *, kind: str | None = None) -> bool:
    """Whether the completed calls of ``trace`` (only ``kind``'s, "backward"
    or "grad", when given) are exactly one per entry of ``expected`` and
    each added to positional argument ``argument``'s .grad (autograd.grad:
    returned for it) the gradient of its entry, in any order, all up to
    one positive factor (a loss scaled the same way in every call). A call
    on a throw-away graph adds nothing to the argument and fails it."""
    calls = [c for c in trace.calls if not c.raised and (kind is None or c.kind == kind)]
    if len(calls) != len(expected) or not calls:
        return False
    added = [c.added[argument] if argument < len(c.added) else None for c in calls]
    if any(a is None for a in added):
        return False
    atol = _slack(added)
    # the common factor, read off the first call against each entry it may
    # stand for: with one-element gradients any entry gives some factor
    factors = {factor for want in expected if (factor := _factor(added[0], want)) is not None}
    return any(_all_matched(added, expected, factor, atol) for factor in factors)


def _all_matched(added: Sequence, expected: Sequence, factor: float, atol: float) -> bool:
    left = list(range(len(expected)))
    for got in added:
        match = next((i for i in left if _same(got, expected[i] * factor, atol)), None)
        if match is None:
            return False
        left.remove(match)
    return True


def _factor(got: Any, want: Any) -> float | None:
    """The positive c with got == c * want, read where ``want`` is largest."""
    if got is None or got.shape != want.shape or not want.numel():
        return None
    flat_want, flat_got = want.detach().double().cpu().flatten(), got.detach().double().cpu().flatten()
    at = int(flat_want.abs().argmax())
    if float(flat_want[at]) == 0:
        return None
    c = float(flat_got[at]) / float(flat_want[at])
    return c if c > 0 else None

"""Naming the likely mistake behind a wrong gradient or an autograd error.

Each rule looks at what the student produced against what torch.autograd
computed, plus what the check knows about the task (how many backward calls
it asked for, how many elements a mean runs over, the VJP with ones), and
returns one catalogue message, or None when no known misconception fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..i18n import msg

if TYPE_CHECKING:
    from torch import Tensor

    from ..boundary.records import TensorRecord
    from ..boundary.tracing import Trace
    from ..outcomes import StudentFailure

# name -> (stable parts of PyTorch's message, any of which identifies it; diagnosis id)
AUTOGRAD_ERRORS: dict[str, tuple[tuple[str, ...], str]] = {
    "backward_twice": (("backward through the graph a second time",), "diag.backward_twice"),
    "inplace_leaf": (
        ("a leaf Variable that requires grad is being used in an in-place operation",),
        "diag.inplace_leaf",
    ),
    "implicit_grad": (("grad can be implicitly created only for",), "diag.implicit_grad"),
    "shape_mismatch": (("Mismatch in shape",), "diag.shape_mismatch"),
    "no_grad_fn": (("does not require grad and does not have a grad_fn",), "diag.requires_grad"),
    "inplace_saved": (("modified by an inplace operation",), "diag.inplace_saved"),
    "nonleaf_requires_grad": (
        ("you can only change requires_grad flags of leaf variables",),
        "diag.nonleaf_requires_grad",
    ),
    # torch 2.13 words it two ways: factory functions (requires_grad=True) say
    # "floating point and complex dtype", requires_grad_() says "floating point
    # dtype". The first text is the one feedback quotes.
    "int_requires_grad": (
        ("floating point and complex dtype can require gradients", "floating point dtype can require gradients"),
        "diag.int_requires_grad",
    ),
    "unused_input": (("appears to not have been used in the graph",), "diag.unused_input"),
}


def error_name(message: str) -> str | None:
    """The name in ``AUTOGRAD_ERRORS`` (``"backward_twice"``, ...) of the
    PyTorch autograd error whose known text ``message`` holds, or None."""
    for name, (texts, _) in AUTOGRAD_ERRORS.items():
        if any(text in message for text in texts):
            return name
    return None


def torch_wording(name: str, error_type: str, message: str) -> bool:
    """Whether an error that matched ``name`` reads as PyTorch's own: a
    RuntimeError whose known text comes before any quote, colon or line
    break. C functions that echo an argument quote it after words of their
    own (int(TEXT): "invalid literal for int() with base 10: 'TEXT'",
    torch.device(TEXT): "Invalid device string: 'TEXT'"); PyTorch's autograd
    errors open with their own words ("element 0 of tensors does not ...")."""
    if error_type != "RuntimeError":
        return False
    for text in AUTOGRAD_ERRORS[name][0]:
        at = message.find(text)
        if at >= 0 and not any(mark in message[:at] for mark in "'\":\n"):
            return True
    return False


def diagnose_error(message: str, context: Context | None = None) -> str | None:
    """The likely mistake behind a PyTorch autograd error ``message``, in the
    run's language, or None when it is none of ``AUTOGRAD_ERRORS``.
    ``context`` tells what the task is about: a missing grad_fn while a
    gradient is differentiated (``order`` 2) is a missing ``create_graph=True``."""
    name = error_name(message or "")
    if name == "no_grad_fn" and context is not None and context.order >= 2:
        # Differentiating a gradient that has no graph: create_graph was missing.
        return msg("diag.no_create_graph")
    return msg(AUTOGRAD_ERRORS[name][1]) if name else None


@dataclass(frozen=True)
class Divisor:
    """A number the task divides a loss by, as feedback names it, and the
    numbers a student may divide by instead: ``Divisor(msg(...elements...),
    12, ((msg(...rows...), 3),))`` says the mean runs over 12 elements and a
    mean over the 3 batch rows is a likely slip. A gradient that is
    ``count / other`` times the right one is diagnosed as that swap, naming
    both (a check passes them to ``check_grad(divisors=...)`` or
    ``Context(divisors=...)``)."""

    name: str  # what the task divides by, e.g. "the number of elements (12)"
    count: int
    instead: tuple[tuple[str, int], ...] = ()  # (name, count) pairs a student may divide by instead


@dataclass
class Context:
    """What a check knows that helps name a mistake."""

    holder: TensorRecord | None = None  # the record whose .grad was compared
    role: str | None = None  # "leaf" or "intermediate"
    ones_vjp: Tensor | None = None  # the VJP with a vector of ones, when grad_outputs were given
    mean_over: int | None = None  # elements a mean loss averages over
    calls: int | None = None  # backward calls the task asked for
    order: int = 1  # derivative order
    parameter_shape: tuple[int, ...] | None = None  # for broadcasting mistakes
    previous: tuple[Tensor, ...] = ()  # expected gradients of the earlier steps of a loop
    trace: Trace | None = None  # tracing.Trace of the student's call, when the check passed it
    grad_of: str = "x"  # the tensor whose .grad it is, as advice names it ("zero x.grad")
    divisors: tuple[Divisor, ...] = ()  # Divisor entries: the reductions the task asks for, and likely slips

    def calls_made(self) -> int | None:
        """Backward and autograd.grad calls the student's code completed."""
        return None if self.trace is None else self.trace.completed_calls


def _constant_ratio(produced: Tensor, expected: Tensor) -> float | None:
    """The c with produced == c * expected, when there is one."""
    import torch

    mask = expected.abs() > 1e-6 * max(1.0, float(expected.abs().max()))
    if int(mask.sum()) == 0:
        return None
    ratios = produced[mask] / expected[mask]
    c = float(ratios.median())
    if not torch.allclose(produced, c * expected, rtol=1e-4, atol=1e-6 * max(1.0, abs(c))):
        return None
    return c


def _near_int(x: float, tol: float = 1e-3) -> int | None:
    k = round(x)
    return k if abs(x - k) <= tol * max(1.0, abs(k)) else None


def _ratio_text(numerator: int, denominator: int) -> str:
    from fractions import Fraction

    ratio = Fraction(numerator, denominator)
    return str(ratio.numerator) if ratio.denominator == 1 else f"{ratio.numerator}/{ratio.denominator}"


def divided_by(c: float, context: Context) -> str | None:
    """The check's own reductions (``Context.divisors``) that explain a
    gradient ``c`` times the right one: dividing by one count where the
    task divides by another. Not when the student made a different number
    of backward calls than asked (that explains a factor better)."""
    made = context.calls_made()
    if made is not None and context.calls is not None and made != context.calls:
        return None
    if (
        context.calls
        and abs(c * context.calls - 1) < 1e-4
        and context.trace is not None
        and context.trace.count("zero_", "grad=")
    ):
        return None  # 1/calls with .grad cleared in between: the calls did not add up
    for divisor in context.divisors:
        for name, count in divisor.instead:
            if count and count != divisor.count and abs(c - divisor.count / count) <= 1e-4 * max(1.0, abs(c)):
                return msg("diag.divided_by", ratio=_ratio_text(divisor.count, count), got=name, want=divisor.name)
    return None


def squeezed(produced: Tensor, expected: Tensor) -> str | None:
    """Right values with the size-1 axes of the expected shape dropped
    (``.squeeze()``, ``[0]``, ``.view(-1)``)."""
    import torch

    if produced.dim() >= expected.dim() or produced.numel() != expected.numel():
        return None
    left = list(produced.shape)
    for size in expected.shape:  # the produced shape is the expected one less some size-1 axes
        if left and left[0] == size:
            left.pop(0)
        elif size != 1:
            return None
    if left:
        return None
    if not torch.allclose(produced.reshape(expected.shape), expected, rtol=1e-5, atol=1e-8):
        return None
    return msg("diag.squeezed", got=tuple(produced.shape), expected=tuple(expected.shape))


def diagnose_none(context: Context) -> str:
    holder = context.holder
    if context.order >= 2:
        return msg("diag.no_create_graph")
    if context.role == "intermediate":
        return msg("diag.none_intermediate")
    if holder is not None and not holder.is_leaf:
        if context.role == "leaf" or holder.grad_fn:
            return msg("diag.none_not_leaf", grad_fn=holder.grad_fn)
        return msg("diag.none_intermediate")
    return msg("diag.none_leaf")


def diagnose_values(produced: Tensor, expected: Tensor, context: Context) -> str | None:
    """Both are float64 tensors on the CPU; shapes may differ. The rules are
    tried from the most specific pattern to the most generic one."""
    if produced.shape != expected.shape:
        return _wrong_shape(produced, expected, context)
    return (
        _second_order_zero(produced, expected, context)
        or _ones_vjp(produced, expected, context)
        or _running_sum(produced, expected, context)
        or _constant_factor(produced, expected, context)
        or _square_transpose(produced, expected)
    )


def _wrong_shape(produced: Tensor, expected: Tensor, context: Context) -> str | None:
    """Squeezed axes, an unreduced broadcast, or a transposed matrix."""
    import torch

    lost = squeezed(produced, expected)
    if lost:
        return lost
    if context.parameter_shape is not None or produced.numel() > expected.numel():
        try:
            if torch.broadcast_shapes(produced.shape, expected.shape) == produced.shape:
                return msg("diag.broadcast", got=tuple(produced.shape), expected=tuple(expected.shape))
        except RuntimeError:
            pass
    if produced.dim() == 2 and produced.shape == expected.shape[::-1] and torch.allclose(produced.T, expected):
        return msg("diag.transpose")
    return None


def _second_order_zero(produced: Tensor, expected: Tensor, context: Context) -> str | None:
    if context.order >= 2 and expected.abs().max() > 0 and produced.abs().max() == 0:
        return msg("diag.second_zero")
    return None


def _ones_vjp(produced: Tensor, expected: Tensor, context: Context) -> str | None:
    """The VJP with a vector of ones where grad_outputs asked for another."""
    import torch

    ones = context.ones_vjp
    if (
        ones is not None
        and ones.shape == produced.shape
        and not torch.allclose(ones, expected)
        and torch.allclose(produced, ones, rtol=1e-5, atol=1e-8)
    ):
        return msg("diag.ones")
    return None


def _running_sum(produced: Tensor, expected: Tensor, context: Context) -> str | None:
    import torch

    earlier = [p.double().cpu() for p in context.previous if tuple(p.shape) == tuple(expected.shape)]
    if earlier and torch.allclose(produced, expected + sum(earlier), rtol=1e-5, atol=1e-8):
        # The gradients of every step so far, added up: .grad never cleared.
        step = len(earlier) + 1
        steps = msg("diag.steps_two") if step == 2 else msg("diag.steps_range", step=step)
        return msg("diag.running_sum", step=step, steps=steps, name=context.grad_of)
    return None


def _constant_factor(produced: Tensor, expected: Tensor, context: Context) -> str | None:
    """A gradient c times the right one: a swapped divisor, a sign, or a
    whole or fractional factor."""
    c = _constant_ratio(produced, expected)
    if c is None:
        return None
    found = divided_by(c, context) if context.divisors else None
    if found:
        return found
    k = _near_int(c)
    if k == -1:
        return msg("diag.sign")
    if k is not None and k >= 2:
        return _whole_factor(k, context)
    if c > 0:
        return _fraction(_near_int(1.0 / c), expected, context)
    return None


def _whole_factor(k: int, context: Context) -> str:
    """A gradient k >= 2 times the right one."""
    made = context.calls_made()
    if context.mean_over is not None and k == context.mean_over:
        return msg("diag.mean_sum", k=k)
    if made is not None and made >= 2:
        return msg("diag.multiple_calls", k=k, calls=made, name=context.grad_of)
    if made is not None or context.calls == 1:
        # One backward call (or none) cannot have accumulated: the maths is off.
        return msg("diag.factor", k=k)
    return msg("diag.multiple", k=k, name=context.grad_of)


def _fraction(inverse: int | None, expected: Tensor, context: Context) -> str | None:
    """A gradient 1/inverse of the right one, inverse >= 2."""
    if inverse is None or inverse < 2:
        return None
    if context.calls is not None and inverse == context.calls:
        return msg("diag.fraction", k=inverse)
    if context.mean_over is not None and inverse == context.mean_over:
        return msg("diag.mean_twice", k=inverse)
    if context.calls is None:
        return _mean_not_sum(inverse, expected) or msg("diag.too_small", k=inverse)
    return None


def _square_transpose(produced: Tensor, expected: Tensor) -> str | None:
    import torch

    if (
        produced.dim() == 2
        and produced.shape[0] == produced.shape[1]
        and produced.shape[0] > 1
        and torch.allclose(produced.T, expected, rtol=1e-5, atol=1e-8)
    ):
        return msg("diag.transpose")
    return None


def _mean_not_sum(k: int, expected: Tensor) -> str | None:
    """A gradient 1/k of the expected one where k is the number of elements
    (or one axis's size) of the tensor: more likely a mean where a sum is
    asked than a missed accumulation, which is what diag.too_small says."""
    if expected.numel() == k:
        return msg("diag.mean_not_sum", k=k, what=msg("label.mean.elements"))
    axes = [axis for axis, size in enumerate(expected.shape) if size == k]
    if len(axes) == 1:
        return msg("diag.mean_not_sum", k=k, what=msg("label.mean.axis", axis=axes[0]))
    return None


def diagnose_update(record: Any, name: str, trace: Trace | None = None) -> str | None:
    """A parameter returned after an update step that is no longer the leaf
    it was: ``w = w - lr * w.grad`` made a new tensor, or a rebinding under
    ``no_grad`` lost requires_grad; with the call's ``trace``, an update
    made in place whose result was returned as a detached copy."""
    from ..boundary.records import TensorRecord

    if isinstance(record, TensorRecord):
        if not record.is_leaf and record.grad_fn:
            return msg("diag.accumulation.out_of_place_update", name=name, grad_fn=record.grad_fn)
        if not record.requires_grad:
            if trace is not None and trace.updated_in_place_without_grad and trace.count("detach", "clone"):
                return msg("diag.accumulation.returned_copy", name=name)
            return msg("diag.accumulation.rebound_no_grad", name=name)
    return None


def diagnose_zero_none(failure: StudentFailure, name: str) -> str | None:
    """The feedback of ``name.grad.zero_()`` called while ``.grad`` is still
    None (before the first backward), or None for any other failure."""
    if failure.error_type == "AttributeError" and "'NoneType' object has no attribute 'zero_'" in failure.message:
        return failure.feedback.split("\n")[0] + "\n" + msg("diag.accumulation.zero_none", name=name)
    return None


# Ops that hand back a tensor sharing its input's memory (torch.as_tensor,
# .to() and .contiguous() return the tensor itself when nothing needs to
# change): a .grad kept through one of them changes when .grad is zeroed in
# place or accumulated into. Named as the student wrote them.
SHARES_MEMORY = {
    "detach": ".detach()",
    "data": ".data",
    "view": ".view(...)",
    "view_as": ".view_as(...)",
    "reshape": ".reshape(...)",
    "reshape_as": ".reshape_as(...)",
    "__getitem__": "[:]",
    "numpy": ".numpy()",
    "__array__": " (numpy.asarray)",
    "as_tensor": " (torch.as_tensor)",
    "contiguous": ".contiguous()",
    "to": ".to(...)",
    "flatten": ".flatten()",
    "squeeze": ".squeeze()",
    "unsqueeze": ".unsqueeze(...)",
    "expand": ".expand(...)",
    "ravel": ".ravel()",
}
# ops that always make a tensor (or plain data) of its own
COPIES_MEMORY = frozenset({"clone", "copy_", "tensor", "new_tensor", "__deepcopy__", "__reduce_ex__", "tolist"})
"""The traced op names that make a copy of a tensor's memory, for a check
that counts real copies of a ``.grad`` (see ``shared_memory``)."""


def shared_memory(trace: Trace | None, name: str) -> str | None:
    """For a kept ``.grad`` whose values show it changed after it was kept:
    when the student's code, after its first backward call, read ``.grad``
    out only through ops that share its memory, applied to ``.grad`` itself (``detach()``, ``.data``,
    ``view``, ``[:]``, ``numpy()``, ...) and made no real copy, the
    diagnosis naming the op; else None."""
    if trace is None:
        return None
    ops = [op.name for op in trace.ops]
    first = next((i for i, op in enumerate(ops) if op in ("backward", "autograd.grad")), None)
    if first is None:
        return None
    after = ops[first + 1 :]
    if any(op in COPIES_MEMORY for op in after):
        return None
    # the op right after a .grad read: what the student applied to .grad itself
    used = next((op for before, op in zip(after, after[1:]) if before == "grad" and op in SHARES_MEMORY), None)
    return None if used is None else msg("diag.accumulation.shares_memory", name=name, op=SHARES_MEMORY[used])

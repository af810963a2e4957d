"""What ``Autograd.check_grad`` is told about a task besides the function
and its inputs, as one value (``GradOptions``), and the steps that use it:
the student's answers aligned with the reference gradients, and the
``Context`` each comparison gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..i18n import msg
from ..outcomes import GradeFailure
from .compare import kind_of
from .malformed import why_not_sequence, with_reason
from .misconceptions import Context, Divisor

if TYPE_CHECKING:
    from torch import Tensor

    from ..boundary.tracing import Trace


@dataclass(frozen=True)
class GradOptions:
    """``check_grad``'s keywords, as its docstring and the authors' pages
    document them."""

    grad_outputs: Any = None  # the vector of a vector-Jacobian product (a tensor or a sequence of them)
    wrt: Sequence[int] | None = None  # the inputs differentiated against (default: every floating tensor)
    order: int = 1  # derivative order
    names: Sequence[str] | None = None  # each gradient's name in feedback
    mean_over: int | None = None  # elements a mean loss averages over
    calls: int | None = None  # backward calls the task asked for
    holders: Sequence[Any] | None = None  # the records whose .grad each gradient is
    role: str | None = None  # "leaf" or "intermediate"
    scale: float = 1.0  # multiplies the reference (k backward calls that should accumulate)
    previous: Sequence[Tensor] = ()  # expected gradients of a loop's earlier steps
    trace: Trace | None = None  # submission.trace: the backward calls really made
    grad_of: str = "x"  # the tensor whose .grad it is, as advice names it
    divisors: Sequence[Divisor] = ()  # the reductions the task divides by, and likely slips

    def what(self, i: int) -> str:
        """The name of the ``i``-th gradient in feedback."""
        return self.names[i] if self.names else msg("cmp.gradient_n", n=i + 1)

    def context(self, i: int, ones: Sequence[Tensor] | None) -> Context:
        """What the diagnoses of the ``i``-th gradient know of the task;
        ``ones``: the VJPs with vectors of ones, when grad_outputs were given."""
        return Context(
            holder=self.holders[i] if self.holders else None,
            role=self.role,
            ones_vjp=None if ones is None else ones[i] * self.scale,
            mean_over=self.mean_over,
            calls=self.calls,
            order=self.order,
            previous=tuple(self.previous),
            trace=self.trace,
            grad_of=self.grad_of,
            divisors=tuple(self.divisors),
        )


def aligned_answers(produced: Any, count: int, names: Sequence[str] | None) -> list[Any]:
    """``produced`` as a list of ``count`` gradients: one gradient where one
    is expected, else a sequence of that length; any other form fails the
    check, saying what was expected."""
    single = count == 1 and not isinstance(produced, (tuple, list))
    items = [produced] if single else list(produced) if isinstance(produced, (tuple, list)) else None
    if items is not None and len(items) == count:
        return items
    what = names[0] if names and single else msg("cmp.gradients")
    text = (
        msg("cmp.count", what=what, expected=count, got=len(items))
        if items is not None
        else msg("cmp.container", what=what, expected=msg("kind.sequence", n=count), got=kind_of(produced))
    )
    raise GradeFailure(with_reason(text, why_not_sequence(produced, count)))

"""The student's forward and backward as ``torch.autograd.gradcheck`` calls
them: through the proxy, each answer read as a tensor and remembered (so
that the summary of a failure reuses it), and the calls gradcheck is about
to make asked ahead in one request where they can be foreseen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import Tensor


AHEAD_LIMIT = 257  # forward calls asked in one request: inputs of up to 128 elements in all
Key = tuple[tuple[str, tuple[int, ...], bytes], ...]  # tensors as a dict key (tensors_key)


def asked_ahead(
    student_fn: Any, leaves: Sequence[Tensor], kwargs: dict[str, Any], key: Callable[[Sequence[Tensor]], Key]
) -> dict[Key, Any]:
    """The forward calls gradcheck's finite differences are about to make
    (the inputs as they are, then each element of each input moved by
    -eps and by +eps, in gradcheck's order and arithmetic), answered by
    the student's code in one request instead of one each: inputs -> the
    answer. Empty where they cannot be asked that way (complex, sparse or
    many inputs, gradcheck's fast mode) or any of them fails: gradcheck
    then makes each call itself."""
    import torch

    ask = getattr(student_fn, "answers_ahead", None)
    if (
        not callable(ask)
        or kwargs.get("fast_mode")
        or not leaves
        or any(x.layout != torch.strided or not x.dtype.is_floating_point for x in leaves)
    ):
        return {}
    eps = kwargs.get("eps", 1e-6)
    xs = tuple(x.detach() for x in leaves)
    if 1 + 2 * sum(x.numel() for x in xs) > AHEAD_LIMIT:
        return {}
    calls = [xs]
    for i, x in enumerate(xs):
        for j in range(x.numel()):
            for step in (-eps, eps):  # x - eps and x + eps, the values gradcheck computes
                flat = x.clone().reshape(-1)
                flat[j] += step
                calls.append(xs[:i] + (flat.reshape(x.shape),) + xs[i + 1 :])
    # as gradcheck hands them to the function: its leaves, which require grad
    answers = ask([tuple(t.clone().requires_grad_(True) for t in call) for call in calls])
    return {} if answers is None else {key(call): answer for call, answer in zip(calls, answers)}


def _rows_ahead(
    student_fn: Any, xs: tuple[Tensor, ...], grads: tuple[Tensor, ...], key: Callable[[Sequence[Tensor]], Key]
) -> dict[tuple[Key, Key], list[Any]]:
    """At gradcheck's first backward call, with the first basis vector of
    the output: the backward calls its analytical Jacobian makes (each
    basis vector, all of them twice, to see that backward is reentrant),
    answered in one request: (inputs, grad_outputs) -> the answers in
    order. Empty where the first call is not that, or any of them fails."""
    import torch

    ask = getattr(student_fn, "answers_ahead", None)
    if not callable(ask) or len(grads) != 1 or not isinstance(grads[0], torch.Tensor):
        return {}
    first = grads[0]
    basis = [torch.zeros_like(first, memory_format=torch.contiguous_format) for _ in range(first.numel())]
    for j, vector in enumerate(basis):
        vector.view(-1)[j] = 1.0
    if not basis or 2 * len(basis) > AHEAD_LIMIT or key((first,)) != key((basis[0],)):
        return {}
    calls = [(tuple(x.detach().clone().requires_grad_(True) for x in xs), (vector,)) for vector in basis * 2]
    answers = ask(calls, vjp=True)
    found: dict[tuple[Key, Key], list[Any]] = {}
    for (_, grad_outputs), answer in zip(calls, answers or ()):
        found.setdefault((key(xs), key(grad_outputs)), []).append(answer)
    return found


def tensors_key(tensors: Sequence[Tensor]) -> Key:
    """Tensors as a dict key: dtype, shape and exact bytes of each."""
    import torch

    return tuple(
        (str(t.dtype), tuple(t.shape), t.detach().cpu().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
        for t in tensors
    )


@dataclass
class StudentCalls:
    """The student's forward and backward as gradcheck calls them, each
    answer read with ``as_tensor(produced, like, what)`` and remembered, so
    that the summary of a failure reuses them."""

    student_fn: Any
    as_tensor: Callable[[Any, Tensor, str], Tensor]
    what: str
    ahead: dict[Key, Any]  # inputs -> the student's answer asked ahead, not read yet
    outputs: dict[Key, Tensor] = field(default_factory=dict)  # inputs -> the student's forward of them
    gradients: dict[tuple[Key, Key], tuple[Tensor | None, ...]] = field(default_factory=dict)
    # (inputs, grad_outputs) -> the student's backward answers asked ahead, in
    # order; None until gradcheck's first backward asks them
    rows: dict[tuple[Key, Key], list[Any]] | None = None

    def forward(self, xs: tuple[Tensor, ...]) -> Tensor:
        k = tensors_key(xs)
        if k not in self.outputs:
            answer = self.ahead.pop(k) if k in self.ahead else self.student_fn(*xs)
            self.outputs[k] = self.as_tensor(answer, xs[0], self.what).detach()
        return self.outputs[k]

    def backward(
        self, xs: tuple[Tensor, ...], grads: tuple[Tensor, ...], fresh: bool = False
    ) -> tuple[Tensor | None, ...]:
        # gradcheck's own calls are always fresh: it checks that backward is
        # reentrant; an answer asked ahead is a call of its own, used once
        k = (tensors_key(xs), tensors_key(grads))
        if fresh and self.rows is None:
            self.rows = _rows_ahead(self.student_fn, xs, grads, tensors_key)
        if fresh and self.rows and self.rows.get(k):
            got = self.rows[k].pop(0)[1]
        elif fresh or k not in self.gradients:
            _, got = self.student_fn.vjp(tuple(x.detach().clone().requires_grad_(True) for x in xs), tuple(grads))
        else:
            return self.gradients[k]
        self.gradients[k] = tuple(
            None if g is None else self.as_tensor(g, x, self.what).detach().to(x.dtype) for g, x in zip(got, xs)
        )
        return self.gradients[k]


def remote_function(calls: StudentCalls) -> Callable[..., Any]:
    """An autograd Function whose forward and backward are the student's."""
    import torch

    class Remote(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *xs: Tensor) -> Tensor:
            ctx.save_for_backward(*xs)
            return calls.forward(xs).clone()

        @staticmethod
        def backward(ctx: Any, *grads: Tensor) -> tuple[Tensor | None, ...]:
            return calls.backward(ctx.saved_tensors, grads, fresh=True)

    return Remote.apply

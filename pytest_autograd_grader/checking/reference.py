"""torch.autograd's answer to a check: the reference gradients a student's
are compared with, computed in float64 and handed back in each input's
dtype (``Autograd.grad``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..outcomes import CheckError

if TYPE_CHECKING:
    from torch import Tensor


def reference_grad(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    grad_outputs: Any = None,
    wrt: Sequence[int] | None = None,
    order: int = 1,
) -> tuple[Tensor, ...]:
    """Gradients of ``fn(*inputs)`` with respect to ``inputs[i]`` for i in
    ``wrt`` (default: every floating tensor); see ``Autograd.grad``."""
    import torch

    leaves = _float64_leaves(inputs)
    if wrt is None:
        wrt = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor) and x.requires_grad]
    targets = [leaves[i] for i in wrt]
    with torch.enable_grad():
        out = fn(*leaves)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        gos = _vectors(outs, grad_outputs)
        grads: Sequence[Tensor | None] = torch.autograd.grad(
            outs, targets, gos, allow_unused=True, create_graph=order > 1
        )
        for _ in range(order - 1):
            grads = _once_more(grads, targets)
    result = []
    for g, i in zip(grads, wrt):
        original = inputs[i]
        g = torch.zeros_like(leaves[i]) if g is None else g
        result.append(g.detach().to(original.dtype))
    return tuple(result)


def _float64_leaves(inputs: Sequence[Any]) -> list[Any]:
    """Floating tensors as float64 leaves that require grad; the rest as is."""
    import torch

    return [
        x.detach().to(torch.float64).requires_grad_(True)
        if isinstance(x, torch.Tensor) and x.is_floating_point()
        else x
        for x in inputs
    ]


def _vectors(outs: list[Tensor], grad_outputs: Any) -> list[Tensor]:
    """The vectors of the vector-Jacobian product: ``grad_outputs`` on each
    output's device and dtype, or ones for scalar outputs."""
    import torch

    if grad_outputs is None:
        if any(o.numel() != 1 for o in outs):
            raise CheckError("autograd.grad: fn returns a non-scalar; pass grad_outputs")
        return [torch.ones_like(o) for o in outs]
    gos = list(grad_outputs) if isinstance(grad_outputs, (tuple, list)) else [grad_outputs]
    return [g.detach().to(device=o.device, dtype=o.dtype) for g, o in zip(gos, outs)]


def _once_more(grads: Sequence[Tensor | None], targets: list[Tensor]) -> list[Tensor | None]:
    """The gradient of each (summed) gradient that has a graph, once more."""
    import torch

    live = [(g, t) for g, t in zip(grads, targets) if g is not None and g.requires_grad]
    higher = (
        torch.autograd.grad([g.sum() for g, _ in live], [t for _, t in live], allow_unused=True, create_graph=True)
        if live
        else []
    )
    it = iter(higher)
    return [next(it) if g is not None and g.requires_grad else None for g in grads]

"""Naming an SGD variant where plain gradient descent was asked.

A training loop that uses ``torch.optim.SGD(momentum=0.9)``, keeps a
velocity across steps, or adds weight decay gets the right first gradient
and a wrong parameter after a few steps; the values alone say only "w is
off". Replaying the loop with each variant, at the coefficient that fits
best, names the variant when one reproduces the student's parameter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..i18n import msg

if TYPE_CHECKING:
    from torch import Tensor

# gradient(i, w): the gradient of step i's loss at w
Gradient = Callable[[int, "Tensor"], "Tensor"]

GRID = 200  # coefficients tried before refining the best one
REFINE = 40  # golden-section steps around it


def _replay(
    start: Tensor,
    gradient: Gradient,
    lr: float,
    steps: int,
    momentum: float = 0.0,
    nesterov: bool = False,
    weight_decay: float = 0.0,
) -> Tensor:
    """torch.optim.SGD's update (dampening 0), step by step."""
    w, buffer = start.clone(), None
    for i in range(steps):
        g = gradient(i, w) + weight_decay * w
        if momentum:
            buffer = g if buffer is None else momentum * buffer + g
            g = g + momentum * buffer if nesterov else buffer
        w = w - lr * g
    return w


def _fit(error: Callable[[float], float], low: float, high: float, log: bool = False) -> float:
    """The coefficient in [low, high] with the smallest error: the best of a
    grid, then golden-section search between its neighbours."""
    import math

    def at(t: float) -> float:
        return math.exp(t) if log else t

    a, b = (math.log(low), math.log(high)) if log else (low, high)
    grid = [a + (b - a) * i / (GRID - 1) for i in range(GRID)]
    best = min(range(GRID), key=lambda i: error(at(grid[i])))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, GRID - 1)]
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(REFINE):
        c, d = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if error(at(c)) < error(at(d)):
            hi = d
        else:
            lo = c
    return at((lo + hi) / 2)


def sgd_variant(got: Tensor, start: Tensor, gradient: Gradient, lr: float, steps: int, name: str = "w") -> str | None:
    """The diagnosis of a parameter ``got`` (a float64 tensor) that a
    variant of SGD reached from ``start`` in ``steps`` steps of size ``lr``
    where plain SGD was asked: momentum (PyTorch's or Nesterov's, equally a
    velocity kept across steps) or weight decay. ``gradient(i, w)`` is the
    gradient of step i's loss at ``w`` (float64 tensors on the CPU). None
    when no variant reproduces ``got``."""
    import torch

    got, start = got.double().cpu(), start.detach().double().cpu()
    # one number fits some coefficient of any variant: it tells nothing
    if got.shape != start.shape or got.numel() < 2 or not lr or not bool(torch.isfinite(got).all()):
        return None
    if torch.allclose(_replay(start, gradient, lr, steps), got, rtol=1e-6, atol=1e-9):
        return None  # plain SGD: nothing to name
    # (diagnosis, replay options, coefficient range, log scale, the least
    # coefficient named: below it the variant is plain SGD up to rounding)
    tries = [
        ("diag.inplace.momentum", dict(momentum=1.0), 0.0, 1.0, False, 1e-3),
        ("diag.inplace.momentum", dict(momentum=1.0, nesterov=True), 0.0, 1.0, False, 1e-3),
        ("diag.inplace.weight_decay", dict(weight_decay=1.0), 1e-6, 1.0, True, 1e-5),
    ]
    found = []  # (error, diagnosis) of each variant that reproduces got
    for key, options, low, high, log, least in tries:
        field = next(k for k in options if k != "nesterov")
        if field == "momentum" and steps < 2:
            continue  # the first step of momentum is plain SGD

        def replay(value: float, options: dict[str, Any] = options, field: str = field) -> Tensor:
            return _replay(start, gradient, lr, steps, **{**options, field: value})

        value = _fit(lambda v: float((replay(v) - got).abs().max()), low, high, log)
        fitted = replay(value)
        if value >= least and torch.allclose(fitted, got, rtol=1e-6, atol=1e-9):
            found.append((float((fitted - got).abs().max()), msg(key, name=name, value=value)))
    # small effects of two variants may both fit: the closer one is named
    return min(found)[1] if found else None

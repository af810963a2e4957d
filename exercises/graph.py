"""Computational graphs.

Every operation on tensors that require grad is recorded as a node of a
directed acyclic graph. For y = (x + w) * (w + 1), write a = x + w and
b = w + 1, so y = a * b. Backward walks from y to every leaf along every
path and multiplies the local derivatives on each path; the paths into the
same leaf add up:

    dy/dw = dy/da * da/dw + dy/db * db/dw = b * 1 + a * 1 = 2w + x + 1
    dy/dx = dy/da * da/dx                 = b     = w + 1

With w = 1 and x = 2 that gives dy/dw = 5 and dy/dx = 2, which is what
`w.grad` and `x.grad` hold after `y.backward()`.

Each tensor made by an operation remembers which one in `grad_fn`
(`AddBackward0`, `MulBackward0`, ...); tensors you create yourself have
`grad_fn = None`.
"""

import torch


def build_graph(x: torch.Tensor, w: torch.Tensor):
    """Compute a = x + w, b = w + 1 and y = a * b (elementwise).

    Return the tuple (a, b, y) of tensors, built with torch operations so
    that each one records its grad_fn.
    """
    raise NotImplementedError


def grad_fn_names(x: torch.Tensor, w: torch.Tensor):
    """Build the same graph and return the class names of the grad_fn of
    a, b and y, as a tuple of three strings, e.g. ("AddBackward0", ...).
    Use type(t.grad_fn).__name__.
    """
    raise NotImplementedError


def hand_gradients(x: torch.Tensor, w: torch.Tensor):
    """Without calling backward, return (dy_dw, dy_dx) for
    y = (x + w) * (w + 1), elementwise, derived by hand with the chain rule.
    """
    raise NotImplementedError


def autograd_gradients(x: torch.Tensor, w: torch.Tensor):
    """x and w are leaves with requires_grad=True. Compute
    L = ((x + w) * (w + 1)).sum(), call L.backward() and return
    (w.grad, x.grad).
    """
    raise NotImplementedError

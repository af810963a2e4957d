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
    """Build the tutorial's graph and return its tensors.

    Inputs: x and w are float64 leaf tensors of the same shape (1-D or 2-D,
    at least 4 elements) with requires_grad=True.

    Compute, elementwise and with torch operations on x and w themselves,
    a = x + w, b = w + 1 and then y = a * b from that a and that b (do not
    compute x + w or w + 1 a second time for y). Because x and w require
    grad, each result records the operation that made it in its grad_fn.

    Return the tuple (a, b, y) of these three tensors, in this order.
    """
    raise NotImplementedError


def grad_fn_names(x: torch.Tensor, w: torch.Tensor):
    """Read the names of the graph's nodes.

    Inputs: x and w as in build_graph (float64, the same shape,
    requires_grad=True).

    Build a = x + w, b = w + 1 and y = a * b from x and w as build_graph
    does (you may call build_graph), then read each tensor's grad_fn and
    return the class names for a, b and y: a tuple (or list) of three
    strings. type(t.grad_fn).__name__ gives the name, e.g. "AddBackward0"
    (printing t.grad_fn shows "<AddBackward0 object at 0x...>", which is not
    the name). The grader checks that your code reads grad_fn, so do not
    type the names in yourself.
    """
    raise NotImplementedError


def hand_gradients(x: torch.Tensor, w: torch.Tensor):
    """The chain rule by hand.

    Inputs: x and w are float64 tensors of the same shape (1-D or 2-D, at
    least 4 elements, with negative and positive values) that do NOT
    require grad.

    For y = (x + w) * (w + 1), elementwise, return the tuple
    (dy_dw, dy_dx) of two tensors of x's shape: element i of each is the
    derivative of y[i] with respect to w[i] and x[i]. Use the formulas the
    chain rule gives (see the top of this file), computed with tensor
    arithmetic (numpy arrays are accepted too). Work them out yourself:
    calling backward() or
    torch.autograd.grad here fails the check.
    """
    raise NotImplementedError


def autograd_gradients(x: torch.Tensor, w: torch.Tensor):
    """The same gradients, computed by autograd.

    Inputs: x and w are float64 leaf tensors of the same 2-D shape with
    requires_grad=True and no gradient yet (.grad is None).

    Compute L = ((x + w) * (w + 1)).sum() (a sum, not a mean), call
    L.backward() once and return the tuple (w.grad, x.grad), in this order.
    (torch.autograd.grad(L, (w, x)) returns the same two tensors and is
    accepted too; computing the gradients by hand is not.)
    """
    raise NotImplementedError

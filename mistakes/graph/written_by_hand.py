"""The gradients written out by hand.

check: test_autograd_gradients
expected diagnosis: req.graph.use_autograd
"""

import torch


def build_graph(x, w):
    a = torch.add(x, w)
    b = torch.add(w, 1)
    y = torch.mul(a, b)
    return a, b, y


def grad_fn_names(x, w):
    a, b, y = build_graph(x, w)
    return tuple(type(t.grad_fn).__name__ for t in (a, b, y))


def hand_gradients(x, w):
    return 2 * w + x + 1, w + 1


def autograd_gradients(x, w):
    with torch.no_grad():
        return 2 * w + x + 1, w + 1

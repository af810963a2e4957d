"""y computed again, not from a and b.

check: test_build_graph
expected diagnosis: req.graph.y_from_a_b
"""

import torch


def build_graph(x, w):
    a = x + w
    b = w + 1
    y = (x + w) * (w + 1)
    return a, b, y


def grad_fn_names(x, w):
    a, b, y = build_graph(x, w)
    return tuple(type(t.grad_fn).__name__ for t in (a, b, y))


def hand_gradients(x, w):
    return 2 * w + x + 1, w + 1


def autograd_gradients(x, w):
    loss = ((x + w) * (w + 1)).sum()
    loss.backward()
    return w.grad, x.grad

"""The right tensors in another order.

check: test_build_graph
expected diagnosis: diag.graph.order
"""

import torch


def build_graph(x, w):
    a = x + w
    b = w + 1
    return a * b, a, b


def grad_fn_names(x, w):
    a, b, y = build_graph(x, w)
    return tuple(type(t.grad_fn).__name__ for t in (a, b, y))


def hand_gradients(x, w):
    return 2 * w + x + 1, w + 1


def autograd_gradients(x, w):
    loss = ((x + w) * (w + 1)).sum()
    loss.backward()
    return w.grad, x.grad

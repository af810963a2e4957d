"""Only the path through a.

check: test_hand_gradients
expected diagnosis: diag.graph.one_path
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
    return x + w, w + 1


def autograd_gradients(x, w):
    loss = ((x + w) * (w + 1)).sum()
    loss.backward()
    return w.grad, x.grad

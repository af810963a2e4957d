"""'by hand' done by autograd.

check: test_hand_gradients
expected diagnosis: req.graph.by_hand
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
    x = x.clone().requires_grad_(True)
    w = w.clone().requires_grad_(True)
    ((x + w) * (w + 1)).sum().backward()
    return w.grad, x.grad


def autograd_gradients(x, w):
    loss = ((x + w) * (w + 1)).sum()
    loss.backward()
    return w.grad, x.grad

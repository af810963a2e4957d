"""An element loop that handles a vector only (a matrix is drawn on every seed).

check: test_hand_gradients
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
    dw = torch.tensor([2 * w[i] + x[i] + 1 for i in range(len(x))], dtype=x.dtype)
    return dw, torch.tensor([w[i] + 1 for i in range(len(w))], dtype=x.dtype)


def autograd_gradients(x, w):
    loss = ((x + w) * (w + 1)).sum()
    loss.backward()
    return w.grad, x.grad

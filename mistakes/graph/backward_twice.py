"""Two backward calls, .grad never cleared.

check: test_autograd_gradients
expected diagnosis: diag.multiple_calls
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
    loss = ((x + w) * (w + 1)).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    return w.grad, x.grad

"""The names typed in, no graph read.

check: test_grad_fn_names
expected diagnosis: req.graph.read_grad_fn
"""

import torch


def build_graph(x, w):
    a = torch.add(x, w)
    b = torch.add(w, 1)
    y = torch.mul(a, b)
    return a, b, y


def grad_fn_names(x, w):
    return ("AddBackward0", "AddBackward0", "MulBackward0")


def hand_gradients(x, w):
    return 2 * w + x + 1, w + 1


def autograd_gradients(x, w):
    loss = ((x + w) * (w + 1)).sum()
    loss.backward()
    return w.grad, x.grad

"""The loss computed, but backward never called.

check: test_branch_grad
expected diagnosis: diag.dynamic_graph.no_backward
"""

import torch


def branch_grad(x):
    loss = (x * x).sum() if x.sum() > 0 else torch.exp(x).sum()
    return loss, x.grad


def loop_grad(x, c, limit):
    y = x
    steps = 0
    while y.norm() < limit:
        y = y * c
        steps += 1
    y.sum().backward()
    return steps, x.grad


def rnn_grad(xs, w, h0):
    h = h0
    for x_t in xs:
        h = torch.tanh(w * h + x_t)
    h.sum().backward()
    return w.grad, h0.grad

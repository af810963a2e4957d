"""Every element takes its own branch.

check: test_branch_grad
expected diagnosis: diag.dynamic_graph.per_element
"""

import torch


def branch_grad(x):
    loss = torch.where(x > 0, x * x, torch.exp(x)).sum()
    loss.backward()
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

"""Detaches "so the while condition can read the value": the graph is lost.

check: test_loop_grad
expected diagnosis: diag.requires_grad
"""

import torch


def branch_grad(x):
    if x.sum() > 0:
        loss = (x * x).sum()
    else:
        loss = torch.exp(x).sum()
    loss.backward()
    return loss, x.grad


def loop_grad(x, c, limit):
    y = x.detach()
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

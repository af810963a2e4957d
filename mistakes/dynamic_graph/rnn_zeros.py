"""Starts from zeros instead of h0.

check: test_rnn_grad
expected diagnosis: diag.none_leaf
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
    y = x
    steps = 0
    while y.norm() < limit:
        y = y * c
        steps += 1
    y.sum().backward()
    return steps, x.grad


def rnn_grad(xs, w, h0):
    h = torch.zeros_like(h0)
    for x_t in xs:
        h = torch.tanh(w * h + x_t)
    h.sum().backward()
    return w.grad, h0.grad

"""Computes the whole sequence under no_grad except the last step.

check: test_rnn_grad
expected diagnosis: diag.dynamic_graph.rnn_no_grad
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
    h = h0
    with torch.no_grad():
        for x_t in xs[:-1]:
            h = torch.tanh(w * h + x_t)
    h = torch.tanh(w * h + xs[-1])
    h.sum().backward()
    return w.grad, h0.grad

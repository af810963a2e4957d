"""The last step skipped (xs[:-1]).

check: test_rnn_grad
expected diagnosis: diag.dynamic_graph.rnn_prefix, diag.dynamic_graph.rnn_empty
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
    for x_t in xs[:-1]:
        h = torch.tanh(w * h + x_t)
    h.sum().backward()
    return w.grad, h0.grad

"""The branch tested on every element being positive, (x > 0).all(), not on x.sum() > 0.

check: test_branch_grad
expected diagnosis: diag.dynamic_graph.wrong_branch
"""

import torch


def branch_grad(x):
    loss = (x * x).sum() if bool((x > 0).all()) else torch.exp(x).sum()
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

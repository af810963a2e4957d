"""A sum where the mean was asked.

check: test_sgd_steps
"""

import torch


def sgd(w, x, y, lr, steps):
    for _ in range(steps):
        if w.grad is not None:
            w.grad.zero_()
        ((x @ w - y) ** 2).sum().backward()
        with torch.no_grad():
            w.sub_(lr * w.grad)
    return w


def repaired(x):
    e = x.exp() + 1
    return e.log() * x

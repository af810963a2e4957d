"""The in-place update with gradients on.

check: test_sgd_steps
expected diagnosis: diag.inplace_leaf
"""

import torch


def sgd(w, x, y, lr, steps):
    for _ in range(steps):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        w -= lr * w.grad
        w.grad = None
    return w


def repaired(x):
    e = x.exp() + 1
    return e.log() * x

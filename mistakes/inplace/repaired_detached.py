"""The saved tensor cut off with detach(): no gradient flows through exp.

check: test_repaired
expected diagnosis: diag.inplace.detached_path
"""

import torch


def sgd(w, x, y, lr, steps):
    for _ in range(steps):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None
    return w


def repaired(x):
    e = x.exp().detach()
    e.add_(1)
    return e.log() * x

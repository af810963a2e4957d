"""The function left as it was: exp's output, saved for backward, changed in place.

check: test_repaired
expected diagnosis: diag.inplace_saved
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
    e = x.exp()
    e.add_(1)
    return e.log() * x

"""One step too few.

check: test_sgd_steps
expected diagnosis: diag.inplace.step_count
"""

import torch


def sgd(w, x, y, lr, steps):
    for _ in range(1, steps):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None
    return w


def repaired(x):
    e = x.exp() + 1
    return e.log() * x

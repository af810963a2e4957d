"""w.grad never cleared between the steps.

check: test_sgd_steps
expected diagnosis: diag.inplace.grad_not_cleared
"""

import torch


def sgd(w, x, y, lr, steps):
    for _ in range(steps):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
    return w


def repaired(x):
    e = x.exp() + 1
    return e.log() * x

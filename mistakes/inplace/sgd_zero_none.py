"""w.grad.zero_() before the first backward, when w.grad is still None.

check: test_sgd_steps
expected diagnosis: diag.accumulation.zero_none
"""

import torch


def sgd(w, x, y, lr, steps):
    for _ in range(steps):
        w.grad.zero_()
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
    return w


def repaired(x):
    e = x.exp() + 1
    return e.log() * x

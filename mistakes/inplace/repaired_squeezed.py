"""f squeezed: a size-1 axis lost.

check: test_repaired
expected diagnosis: diag.squeezed
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
    return (torch.log1p(x.exp()) * x).squeeze()

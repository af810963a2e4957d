"""exp computed under no_grad: no gradient flows through it.

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
    with torch.no_grad():
        e = x.exp()
        e.add_(1)
    return e.log() * x

"""Updated in place with gradients off, then a detached copy returned.

check: test_sgd_step_keeps_leaf
expected diagnosis: diag.accumulation.returned_copy
"""

import torch


def sgd(w, x, y, lr, steps):
    for _ in range(steps):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None
    return w.detach().clone()


def repaired(x):
    e = x.exp() + 1
    return e.log() * x

"""w = w - lr * w.grad under no_grad: w rebound to a tensor that does not require grad.

check: test_sgd_step_keeps_leaf, test_sgd_steps
expected diagnosis: diag.accumulation.rebound_no_grad
"""

import torch


def sgd(w, x, y, lr, steps):
    for _ in range(steps):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w = w - lr * w.grad
    return w


def repaired(x):
    e = x.exp() + 1
    return e.log() * x

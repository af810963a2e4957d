"""w = w - lr * w.grad: the out-of-place update makes w a non-leaf.

check: test_sgd_step_keeps_leaf, test_sgd_steps
expected diagnosis: diag.accumulation.out_of_place_update
"""

import torch


def sgd(w, x, y, lr, steps):
    for _ in range(steps):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        w = w - lr * w.grad
    return w


def repaired(x):
    e = x.exp() + 1
    return e.log() * x

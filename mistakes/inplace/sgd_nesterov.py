"""Nesterov momentum written by hand, with a velocity kept across steps.

check: test_sgd_steps
expected diagnosis: diag.inplace.momentum
"""

import torch


def sgd(w, x, y, lr, steps):
    velocity = None
    for _ in range(steps):
        ((x @ w - y) ** 2).mean().backward()
        with torch.no_grad():
            g = w.grad
            velocity = g.clone() if velocity is None else 0.8 * velocity + g
            w -= lr * (g + 0.8 * velocity)
        w.grad = None
    return w


def repaired(x):
    e = x.exp() + 1
    return e.log() * x

"""Weight decay where plain gradient descent is asked.

check: test_sgd_step_keeps_leaf, test_sgd_steps
expected diagnosis: diag.inplace.weight_decay
"""

import torch


def sgd(w, x, y, lr, steps):
    opt = torch.optim.SGD([w], lr=lr, weight_decay=0.05)
    for _ in range(steps):
        opt.zero_grad()
        ((x @ w - y) ** 2).mean().backward()
        opt.step()
    return w


def repaired(x):
    e = x.exp() + 1
    return e.log() * x

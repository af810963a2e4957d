"""(L1 + L2).backward() after L1's backward: L1's gradient counted twice.

check: test_two_losses
expected diagnosis: diag.retain_graph.l1_twice
"""

import torch


def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    for _ in range(k - 1):
        loss.backward(retain_graph=True)
    loss.backward()
    return x.grad


def caught_error(x):
    loss = (x ** 3).sum()
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as error:
        return error, x.grad


def two_losses(x, w):
    h = torch.tanh(x * w)
    loss1, loss2 = h.sum(), (h ** 2).mean()
    loss1.backward(retain_graph=True)
    first = w.grad.clone()
    (loss1 + loss2).backward()
    return first, w.grad

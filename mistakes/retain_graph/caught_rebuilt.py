"""The graph built again for the second backward, so it does not fail.

check: test_caught_error
expected diagnosis: diag.retain_graph.rebuilt
"""

import torch


def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    for _ in range(k - 1):
        loss.backward(retain_graph=True)
    loss.backward()
    return x.grad


def caught_error(x):
    (x ** 3).sum().backward()
    first = x.grad.clone()
    try:
        (x ** 3).sum().backward()
    except RuntimeError as error:
        return error, first
    return None, x.grad


def two_losses(x, w):
    h = torch.tanh(x * w)
    loss1 = h.sum()
    loss2 = (h ** 2).mean()
    loss1.backward(retain_graph=True)
    first = w.grad.clone()
    loss2.backward()
    return first, w.grad

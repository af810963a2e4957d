"""The copy of w.grad taken after the second backward.

check: test_two_losses
expected diagnosis: diag.retain_graph.copied_late
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
    h.sum().backward(retain_graph=True)
    (h ** 2).mean().backward()
    first = w.grad.clone()
    return first, w.grad

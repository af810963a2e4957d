"""w.grad kept through view_as(), which shares its memory.

check: test_two_losses
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
    first = w.grad.view_as(w)
    (h ** 2).mean().backward()
    return first, w.grad

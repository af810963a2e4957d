"""h computed again for the second loss instead of keeping the graph.

check: test_two_losses
expected diagnosis: req.retain_graph.h_once
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
    torch.tanh(x * w).sum().backward()
    first = w.grad.clone()
    (torch.tanh(x * w) ** 2).mean().backward()
    return first, w.grad

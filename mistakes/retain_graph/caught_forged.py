"""The error made up (a RuntimeError built by hand), no second backward.

check: test_caught_error
expected diagnosis: diag.retain_graph.one_backward
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
    return RuntimeError("Trying to backward through the graph a second time"), x.grad


def two_losses(x, w):
    h = torch.tanh(x * w)
    loss1 = h.sum()
    loss2 = (h ** 2).mean()
    loss1.backward(retain_graph=True)
    first = w.grad.clone()
    loss2.backward()
    return first, w.grad

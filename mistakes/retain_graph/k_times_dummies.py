"""The right value and k calls: one real backward of k * dL/dx, the others on throw-away graphs.

check: test_backward_k_times
expected diagnosis: req.retain_graph.each_call
"""

import torch


def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    loss.backward(torch.tensor(float(k), dtype=x.dtype))
    for _ in range(k - 1):
        torch.zeros(1, requires_grad=True).sum().backward()
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
    loss1 = h.sum()
    loss2 = (h ** 2).mean()
    loss1.backward(retain_graph=True)
    first = w.grad.clone()
    loss2.backward()
    return first, w.grad

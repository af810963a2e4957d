"""The right numbers, with two backward calls.

check: test_weighted_losses
"""

import torch


def jacobian_rows(x, Y):
    loss = x @ Y
    rows = []
    for j in range(loss.shape[1]):
        e = torch.zeros_like(loss)
        e[0, j] = 1.0
        loss.backward(gradient=e, retain_graph=True)
        rows.append(x.grad.clone())
        x.grad.zero_()
    return torch.cat(rows)


def vjp_matmul(x, Y, v):
    loss = x @ Y
    loss.backward(gradient=v)
    return x.grad, Y.grad


def weighted_losses(w, x, weights):
    ((x @ w) ** 2).mean().backward(gradient=weights[0])
    torch.exp(w).sum().backward(gradient=weights[1])
    return w.grad

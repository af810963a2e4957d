"""A new L for every row, so no retain_graph is needed.

check: test_jacobian_rows
expected diagnosis: req.vector_backward.build_once
"""

import torch


def jacobian_rows(x, Y):
    rows = []
    for j in range(Y.shape[1]):
        loss = x @ Y
        e = torch.zeros_like(loss)
        e[0, j] = 1.0
        loss.backward(gradient=e)
        rows.append(x.grad.clone())
        x.grad = None
    return torch.cat(rows)


def vjp_matmul(x, Y, v):
    loss = x @ Y
    loss.backward(gradient=v)
    return x.grad, Y.grad


def weighted_losses(w, x, weights):
    loss1 = ((x @ w) ** 2).mean()
    loss2 = torch.exp(w).sum()
    torch.autograd.backward([loss1, loss2], grad_tensors=[weights[0], weights[1]])
    return w.grad

"""v.squeeze() passed as the gradient: the wrong shape when L has a size-1 axis.

check: test_vjp_matmul
expected diagnosis: diag.shape_mismatch
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
    loss.backward(gradient=v.squeeze())
    return x.grad, Y.grad


def weighted_losses(w, x, weights):
    loss1 = ((x @ w) ** 2).mean()
    loss2 = torch.exp(w).sum()
    torch.autograd.backward([loss1, loss2], grad_tensors=[weights[0], weights[1]])
    return w.grad

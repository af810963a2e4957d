"""One call per row, but with a vector of ones every time.

check: test_jacobian_rows
expected diagnosis: diag.vector_backward.rows_ones
"""

import torch


def jacobian_rows(x, Y):
    loss = x @ Y
    rows = []
    for j in range(loss.shape[1]):
        loss.backward(gradient=torch.ones_like(loss), retain_graph=True)
        rows.append(x.grad.clone())
        x.grad.zero_()
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

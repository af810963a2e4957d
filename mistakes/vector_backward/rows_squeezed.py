"""Right for n >= 2 only: .squeeze() drops the size-1 axis of x (1, 1), v.squeeze() that of v.

check: test_jacobian_rows
expected diagnosis: diag.squeezed
"""

import torch


def jacobian_rows(x, Y):
    loss = x @ Y
    rows = []
    for j in range(loss.shape[1]):
        e = torch.zeros_like(loss)
        e[0, j] = 1.0
        loss.backward(gradient=e, retain_graph=True)
        rows.append(x.grad.squeeze().clone())
        x.grad.zero_()
    return torch.stack(rows)


def vjp_matmul(x, Y, v):
    loss = x @ Y
    loss.backward(gradient=v)
    return x.grad, Y.grad


def weighted_losses(w, x, weights):
    loss1 = ((x @ w) ** 2).mean()
    loss2 = torch.exp(w).sum()
    torch.autograd.backward([loss1, loss2], grad_tensors=[weights[0], weights[1]])
    return w.grad

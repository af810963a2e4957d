"""The weights applied in the losses and again as grad_tensors.

check: test_weighted_losses
expected diagnosis: diag.vector_backward.weights_twice
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
    loss1 = weights[0] * ((x @ w) ** 2).mean()
    loss2 = weights[1] * torch.exp(w).sum()
    torch.autograd.backward([loss1, loss2], grad_tensors=[weights[0], weights[1]])
    return w.grad

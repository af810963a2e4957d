"""The Jacobian read off as Y.T, with no backward.

check: test_jacobian_rows
expected diagnosis: req.vector_backward.rows_calls
"""

import torch


def jacobian_rows(x, Y):
    return Y.T.clone()


def vjp_matmul(x, Y, v):
    loss = x @ Y
    loss.backward(gradient=v)
    return x.grad, Y.grad


def weighted_losses(w, x, weights):
    loss1 = ((x @ w) ** 2).mean()
    loss2 = torch.exp(w).sum()
    torch.autograd.backward([loss1, loss2], grad_tensors=[weights[0], weights[1]])
    return w.grad

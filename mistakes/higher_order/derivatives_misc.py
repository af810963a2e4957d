"""derivatives: always two.

check: test_derivatives
"""

import torch


def _p(coeffs, x):
    return sum(coeffs[k] * x ** k for k in range(len(coeffs)))


def first_derivative(coeffs, x):
    (g,) = torch.autograd.grad(_p(coeffs, x).sum(), x, create_graph=True)
    return g


def derivatives(coeffs, x, n):   # always two
    (d1,) = torch.autograd.grad(_p(coeffs, x).sum(), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1.sum(), x, create_graph=True)
    return [d1, d2]


def hessian_vector_product(a, x, v):
    f = torch.logsumexp(a @ x, dim=0)
    (g,) = torch.autograd.grad(f, x, create_graph=True)
    (hv,) = torch.autograd.grad((g * v).sum(), x)
    return hv

"""hessian_vector_product: H @ ones.

check: test_hessian_vector_product
"""

import torch


def _p(coeffs, x):
    return sum(coeffs[k] * x ** k for k in range(len(coeffs)))


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


def hessian_vector_product(a, x, v):   # H @ ones
    (g,) = torch.autograd.grad(torch.logsumexp(a @ x, dim=0), x, create_graph=True)
    return torch.autograd.grad(g.sum(), x)[0]

"""derivatives: x.grad never cleared: p', p' + p'', ...

check: test_derivatives
"""

import torch


def _p(coeffs, x):
    return sum(coeffs[k] * x ** k for k in range(len(coeffs)))


def first_derivative(coeffs, x):
    (g,) = torch.autograd.grad(_p(coeffs, x).sum(), x, create_graph=True)
    return g


def derivatives(coeffs, x, n):   # x.grad never cleared: p', p' + p'', ...
    current, out = _p(coeffs, x).sum(), []
    for _ in range(n):
        current.backward(create_graph=True)
        out.append(x.grad.clone())
        current = x.grad.sum()
    return out


def hessian_vector_product(a, x, v):
    f = torch.logsumexp(a @ x, dim=0)
    (g,) = torch.autograd.grad(f, x, create_graph=True)
    (hv,) = torch.autograd.grad((g * v).sum(), x)
    return hv

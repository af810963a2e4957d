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


def hessian_vector_product(a, x, v):
    f = torch.logsumexp(a @ x, dim=0)
    (g,) = torch.autograd.grad(f, x, create_graph=True)
    (hv,) = torch.autograd.grad((g * v).sum(), x)
    return hv

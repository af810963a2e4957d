"""Higher-order derivatives.

torch.autograd.grad(y, x) returns dy/dx, but by default that gradient is a
plain tensor with no graph behind it: autograd records nothing while it runs
backward. Pass create_graph=True and the backward pass is itself recorded,
so the gradient can be differentiated again:

    x = torch.tensor([2.0], requires_grad=True)
    y = x ** 3
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)   # 3x^2 = 12
    (h,) = torch.autograd.grad(g.sum(), x)                      # 6x   = 12

Without create_graph=True the second call fails: g "does not require grad
and does not have a grad_fn". retain_graph=True does not help: it only
keeps y's graph for another backward. `y.backward(create_graph=True)` does
the same as create_graph=True for x.grad, but x.grad adds up: a second
backward adds its gradient to the first one still stored there, while
torch.autograd.grad returns gradients and leaves x.grad alone.

Summing before each call is fine when every output depends on its own input
only (elementwise functions); for functions that mix their inputs, the
second call gives a Hessian-vector product: differentiate (g * v).sum() to
get H @ v without ever building the Hessian H. The same trick trains models
with a penalty on their own gradients (e.g. WGAN-GP).

In this file a polynomial is given by its coefficients c = (c[0], ..., c[m]):

    p(x) = c[0] + c[1] * x + c[2] * x**2 + ... + c[m] * x**m   (elementwise)
"""

import torch


def first_derivative(coeffs: torch.Tensor, x: torch.Tensor):
    """coeffs: a float64 tensor of shape (m + 1,), m >= 4 (no gradient
    needed); x: a float64 tensor of any shape, a leaf with requires_grad=True.

    Return p'(x), elementwise, as a tensor with the shape of x. Compute it
    with torch.autograd.grad (not .backward(); the grader checks) so that the
    returned tensor can itself be differentiated with respect to x: it must
    carry a graph, because the grader backpropagates through it to find
    p''(x).
    """
    raise NotImplementedError


def derivatives(coeffs: torch.Tensor, x: torch.Tensor, n: int):
    """coeffs and x as in first_derivative; n is an int >= 1.

    Return a list of n tensors [p'(x), p''(x), ..., p^(n)(x)], the first n
    derivatives of p, elementwise, each with the shape of x. Obtain each one
    from the one before with torch.autograd.grad: n calls, no .backward()
    (the grader checks). For example, for p(x) = x**3 at x = 2 and n = 3:
    [12., 12., 6.].
    """
    raise NotImplementedError


def hessian_vector_product(a: torch.Tensor, x: torch.Tensor, v: torch.Tensor):
    """f(x) = torch.logsumexp(a @ x, dim=0). a: a float64 tensor of shape
    (m, d); x: float64 of shape (d,), a leaf with requires_grad=True; v:
    float64 of shape (d,), no gradient needed.

    Return H @ v, where H is the (d, d) Hessian of f at x, as a tensor of
    shape (d,). Do it without building H, with exactly two gradient
    computations (torch.autograd.grad or .backward(); the grader counts
    them, whatever helper makes them): the gradient of f with
    create_graph=True, then the gradient of (gradient * v).sum().
    """
    raise NotImplementedError

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
and does not have a grad_fn". (`y.backward(create_graph=True)` does the same
for .grad.) Summing before each call is fine when every output depends on its
own input only (elementwise functions); for functions that mix their inputs,
the second call gives a Hessian-vector product: differentiate (g * v).sum()
to get H @ v without ever building the Hessian H. The same trick trains
models with a penalty on their own gradients (e.g. WGAN-GP).

In this file a polynomial is given by its coefficients c = (c[0], ..., c[m]):

    p(x) = c[0] + c[1] * x + c[2] * x**2 + ... + c[m] * x**m   (elementwise)
"""

import torch


def first_derivative(coeffs: torch.Tensor, x: torch.Tensor):
    """x is a leaf with requires_grad=True. Return p'(x), elementwise, with
    the shape of x, computed with torch.autograd.grad so that the returned
    tensor can itself be differentiated with respect to x (it must carry a
    graph: the grader backpropagates through it to find p''(x)).
    """
    raise NotImplementedError


def derivatives(coeffs: torch.Tensor, x: torch.Tensor, n: int):
    """x is a leaf with requires_grad=True. Return the list
    [p'(x), p''(x), ..., p^(n)(x)] of the first n derivatives of p,
    elementwise (each with the shape of x), each one obtained from the one
    before with torch.autograd.grad.
    """
    raise NotImplementedError


def hessian_vector_product(a: torch.Tensor, x: torch.Tensor, v: torch.Tensor):
    """f(x) = torch.logsumexp(a @ x, dim=0), with a of shape (m, d) and x, v of
    shape (d,); x is a leaf with requires_grad=True. Return H @ v, where H is
    the (d, d) Hessian of f at x, as a tensor of shape (d,): take the gradient
    of f with create_graph=True, then the gradient of (gradient * v).sum().
    """
    raise NotImplementedError

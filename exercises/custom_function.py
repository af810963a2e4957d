"""Custom autograd Functions.

A subclass of torch.autograd.Function defines an operation together with its
own backward. Both methods are static; `ctx` carries what forward wants to
hand to backward:

    class MyExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)        # backward needs e^x again
            return y

        @staticmethod
        def backward(ctx, grad_output):     # dL/dy, shaped like y
            (y,) = ctx.saved_tensors
            return grad_output * y          # dL/dx = dL/dy * dy/dx

    z = MyExp.apply(x)                      # never call forward directly

backward receives one gradient per output of forward and returns one
gradient per input of forward, in order (None for an input that needs none).
Each is the chain rule for one input: the incoming gradient times the local
derivative, elementwise for elementwise operations.

Check a hand-written backward with torch.autograd.gradcheck, which compares it
with finite differences (f(x + eps) - f(x - eps)) / (2 eps). Finite
differences in float32 are far too coarse for its tolerances, so it needs
float64 inputs that require grad:

    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(MyExp.apply, (x,))
"""

import torch


class Swish(torch.autograd.Function):
    """swish(x) = x * sigmoid(x), elementwise, where sigmoid(x) = 1 / (1 + e^-x).

    The grader calls Swish.apply(x) with x a float64 tensor of any shape (at
    least two elements) that requires grad, runs your backward with
    grad_output = dL/dy of x's shape, as autograd does, and checks it with
    gradcheck. For example, swish(0) = 0 and d swish / dx at 0 is 0.5."""

    @staticmethod
    def forward(ctx, x):
        """Return x * sigmoid(x), a tensor of x's shape, and save for
        backward what it needs (ctx.save_for_backward)."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad_output):
        """Return dL/dx = grad_output * d swish / dx, elementwise, a tensor of
        x's shape. swish is a product of x and sigmoid(x): use the product
        rule, with d sigmoid / dx = sigmoid(x) * (1 - sigmoid(x))."""
        raise NotImplementedError


class Hypot(torch.autograd.Function):
    """hypot(x, y) = sqrt(x**2 + y**2), elementwise, for x and y of one shape.

    The grader calls Hypot.apply(x, y) with float64 tensors that require grad
    (y never near 0), and checks your backward with gradcheck too."""

    @staticmethod
    def forward(ctx, x, y):
        """Return sqrt(x**2 + y**2), a tensor of x's shape, and save for
        backward what it needs."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad_output):
        """Return the tuple (dL/dx, dL/dy), in the order of forward's inputs:
        grad_output times the partial derivative of hypot with respect to x,
        and grad_output times the one with respect to y (each of x's shape).
        Mind the chain rule through the square root: d sqrt(u) = du / (2 sqrt(u))."""
        raise NotImplementedError


def gradcheck_input(x: torch.Tensor):
    """x: a float32 tensor of shape (a, b) that does not require grad.

    Return the tensor you would pass to torch.autograd.gradcheck to test
    Swish at these values: a new leaf tensor (is_leaf True) with x's values,
    in the dtype gradcheck needs (see above), with requires_grad=True. The
    grader runs gradcheck of your Swish on it.
    """
    raise NotImplementedError

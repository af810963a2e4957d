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
    """swish(x) = x * sigmoid(x), elementwise, where sigmoid(x) = 1 / (1 + e^-x)."""

    @staticmethod
    def forward(ctx, x):
        """Return x * sigmoid(x) and save for backward what it needs."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad_output):
        """Return grad_output times d swish / dx, elementwise (use the product
        rule; d sigmoid / dx = sigmoid(x) * (1 - sigmoid(x)))."""
        raise NotImplementedError


class Hypot(torch.autograd.Function):
    """hypot(x, y) = sqrt(x**2 + y**2), elementwise, for x and y of one shape."""

    @staticmethod
    def forward(ctx, x, y):
        """Return sqrt(x**2 + y**2) and save for backward what it needs."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad_output):
        """Return the tuple (gradient for x, gradient for y): grad_output times
        the partial derivative of hypot with respect to x, and to y."""
        raise NotImplementedError


def gradcheck_input(x: torch.Tensor):
    """x holds float32 data. Return the tensor you would pass to
    torch.autograd.gradcheck to test Swish at these values: a new leaf with
    the same values that gradcheck accepts and can test (right dtype,
    requires grad). The grader runs gradcheck of your Swish on it.
    """
    raise NotImplementedError

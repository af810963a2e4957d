"""Gradient hooks: changing a gradient on its way back.

`t.register_hook(fn)` asks autograd to call `fn(grad)` once the gradient
flowing into `t` has been computed. When `fn` returns a tensor, that tensor
replaces the gradient from then on: it is what lands in `t.grad` for a
leaf, and what flows on to the tensors `t` was computed from otherwise.
When `fn` returns None, the gradient is left as it was.

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: 10 * g)
    (x * x).sum().backward()        # dL/dx = 2x = [2, 4]
    x.grad                          # tensor([20., 40.])

A hook that returns `-s * g` makes a *gradient reversal layer*: the forward
pass is unchanged, the backward pass pushes the other way.
"""

import torch


def reversed_grad(x: torch.Tensor, s: float) -> torch.Tensor:
    """x is a float64 leaf with requires_grad=True (1-D or 2-D, any shape);
    s is a Python float greater than 1.

    Register a hook on x that replaces its gradient g by -s * g. Then build
    L = (x * torch.sin(x)).sum() and call L.backward(). Return x.grad.
    Change the gradient with the hook, not by editing x.grad afterwards."""
    raise NotImplementedError("reversed_grad: register the hook, then backward")

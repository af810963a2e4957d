"""In-place operations and autograd.

An in-place operation (`w -= g`, `w.add_(1)`, `w[0] = 0`, `y *= 2`) writes
into the memory of an existing tensor instead of making a new one. Autograd
forbids two kinds of them:

1. Changing a leaf that requires grad. The tutorial's example:

       w = torch.tensor([1.], requires_grad=True)
       w.add_(1)     # RuntimeError: a leaf Variable that requires grad is
                     # being used in an in-place operation.

   A parameter update is exactly such a change, so it goes inside
   `with torch.no_grad():`, where autograd records nothing:

       with torch.no_grad():
           w -= lr * w.grad
       w.grad = None   # or w.grad.zero_(): gradients add up otherwise

   Writing `w = w - lr * w.grad` instead avoids the error but builds a new
   tensor made by an operation (grad_fn SubBackward0). It is no longer a leaf,
   so it gets no .grad at the next backward and the training loop breaks.

2. Changing a tensor that backward still needs. Many operations save a tensor
   for their backward: exp saves its output (d/dx e^x = e^x), mul saves its
   inputs. Every tensor has a version counter that goes up at each in-place
   change; when backward finds a saved tensor at a newer version it stops with
   "one of the variables needed for gradient computation has been modified by
   an inplace operation". The fix is an out-of-place operation
   (`y = y + 1` instead of `y += 1`) or a `.clone()` before the change.
"""

import torch


def sgd(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, lr: float, steps: int):
    """Train w by plain gradient descent on the loss

        loss = ((x @ w - y) ** 2).mean()

    w is a float64 leaf of shape (d,) with requires_grad=True (w.grad is
    None); x has shape (n, d) and y shape (n,), neither requires grad; lr is
    a Python float and steps an int >= 1. Do `steps` steps; each computes the
    loss, calls loss.backward(), updates w <- w - lr * dloss/dw in place
    with gradients off:

        with torch.no_grad():
            w -= lr * w.grad

    and clears w.grad (w.grad = None) before the next step.

    Return w itself (a tensor): after training it must still be the leaf you
    were given, with requires_grad=True, holding the updated values. The
    check also requires that your code changed w in place with gradients
    off (torch.no_grad() as above, or an optimizer's step(), which does the
    same); w = w - ..., w.data or detach() tricks do not count.
    """
    raise NotImplementedError


def repaired(x: torch.Tensor):
    """This function computes f(x) = x * log(1 + e^x), elementwise, but its
    backward fails:

        def broken(x):
            e = x.exp()      # exp saves its output e for backward
            e.add_(1)        # ... and this changes e in place
            return e.log() * x

    calling backward through broken(x) raises "modified by an inplace
    operation". x is a float64 tensor of any shape with requires_grad=True.
    Return f(x) (a tensor of x's shape), computed so that backward through
    your result works and gives the true gradient: no in-place change of a
    tensor that backward needs, and no part of f cut off from the graph
    (with detach() or torch.no_grad()).
    """
    raise NotImplementedError

"""Calling backward more than once: retain_graph.

To compute a gradient, many operations keep some of their inputs or outputs
for later: `x * y` keeps x and y, `x.exp()` keeps its result, `x ** 3` keeps
x. These are the graph's *saved tensors*. To save memory, `backward()` frees
them as soon as it has used them, so a second backward through the same graph
fails with

    RuntimeError: Trying to backward through the graph a second time ...

Pass `retain_graph=True` to every backward call except the last one that goes
through the graph, and the saved tensors stay alive:

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    loss.backward(retain_graph=True)   # x.grad is now 2x = [2, 4]
    loss.backward()                    # works; x.grad adds up to [4, 8]

(A graph made only of additions saves nothing, so it would not raise; the
error appears once a multiplication, exp, pow, ... is involved.)

Every backward adds its result into `.grad`, so calling backward twice on the
same loss doubles the leaf's gradient. The same rule lets two losses that
share part of a graph both send gradients into the same leaves.
"""

import torch


def backward_k_times(x: torch.Tensor, k: int):
    """x is a leaf with requires_grad=True and k >= 2 a whole number.

    Build the graph once: L = (x * torch.exp(x)).sum(). Then call backward on
    that same L k times, without rebuilding it and without zeroing x.grad in
    between. Return x.grad at the end (it holds k times dL/dx).
    """
    raise NotImplementedError


def caught_error(x: torch.Tensor):
    """x is a leaf with requires_grad=True.

    Build L = (x ** 3).sum(), call L.backward() once WITHOUT retain_graph, and
    then try L.backward() a second time. Catch the RuntimeError this raises
    (try/except) and return the tuple (error, x.grad): the caught exception
    object itself (do not raise it) and x.grad after the first backward.
    """
    raise NotImplementedError


def two_losses(x: torch.Tensor, w: torch.Tensor):
    """x is a plain tensor; w is a leaf with requires_grad=True of the same
    shape.

    Both losses share the hidden tensor h = torch.tanh(x * w):
        L1 = h.sum()
        L2 = (h ** 2).mean()
    Build h once. Call L1.backward() first, then save a copy of w.grad
    (w.grad.clone()), then call L2.backward(). Return the tuple
    (grad_after_L1, grad_after_both): the saved copy, and w.grad at the end.
    """
    raise NotImplementedError

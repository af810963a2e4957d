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
    """x is a float64 leaf with requires_grad=True (1-D or 2-D, any shape);
    k is a Python int, 2 or more.

    Build the graph once: L = (x * torch.exp(x)).sum(). Then call backward on
    that same L exactly k times, without rebuilding L in between and without
    zeroing x.grad: pass retain_graph=True to every call but the last. The
    grader checks both: the graph built once (one exp, one multiplication)
    and k backward calls (torch.autograd.grad calls count too, if you prefer
    them and add their results up yourself).
    Return x.grad at the end: a tensor of x's shape holding k times dL/dx.
    """
    raise NotImplementedError


def caught_error(x: torch.Tensor):
    """x is a float64 leaf with requires_grad=True (1-D or 2-D).

    Build L = (x ** 3).sum(), call L.backward() once WITHOUT retain_graph, and
    then try L.backward() a second time on the same L. Catch the RuntimeError
    this raises (try: ... except RuntimeError as error: ...) and return the
    tuple (error, x.grad): the caught exception object itself, exactly as
    PyTorch raised it (do not raise it again, do not turn it into a string,
    do not make one yourself), and x.grad, a tensor of x's shape holding the
    gradient of the first backward, 3 * x ** 2 (the second backward failed,
    so it added nothing).
    """
    raise NotImplementedError


def two_losses(x: torch.Tensor, w: torch.Tensor):
    """x is a float64 tensor that does not require grad; w is a float64 leaf
    with requires_grad=True of the same shape (1-D or 2-D, at least 2
    elements).

    Both losses share the hidden tensor h = torch.tanh(x * w):
        L1 = h.sum()
        L2 = (h ** 2).mean()
    Build h once (the grader checks that tanh ran once) and call backward
    exactly twice, once per loss: L1.backward(retain_graph=True) first (L2's
    backward goes through the same h), then save a copy of w.grad right
    away (w.grad.clone(): w.grad itself keeps changing), then L2.backward(),
    without clearing w.grad in between. Return the tuple
    (grad_after_L1, grad_after_both): the saved copy, and w.grad at the end
    (dL1/dw + dL2/dw), two tensors of w's shape.
    """
    raise NotImplementedError

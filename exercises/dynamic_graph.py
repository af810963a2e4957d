"""Dynamic graphs: the graph is built while your code runs.

PyTorch records operations as they execute, so every forward pass builds a
new graph made of exactly the operations that ran this time, and backward
follows that graph. (A static graph, as in TensorFlow 1, is defined once
before any data flows through it; a loop whose length depends on the data
then needs a special graph operation such as tf.while_loop.)

That is why plain Python control flow is allowed in a forward pass, even
when it depends on the values of tensors: an `if` on x.sum() > 0, a `while`
that runs until a norm is large enough, a `for` over a sequence whose length
changes from batch to batch. The gradient you get is the gradient of the
branch that was taken and of the number of steps that actually ran.
Comparisons such as y.norm() < 100 record nothing, so there is no need to
detach anything to read a value for a condition.

A worked example:

    x = torch.tensor([1., 1.], requires_grad=True)
    y = x
    steps = 0
    while y.norm() < 100:
        y = y * 2
        steps += 1
    y.sum().backward()

The norm goes 1.41, 2.83, ..., 90.5, 181, so the loop runs 7 times, the graph
is seven multiplications long, y = 128 * x and x.grad = [128., 128.]. Start
from x = [10., 10.] and the loop runs 3 times: a different graph, and
x.grad = [8., 8.].
"""

import torch


def branch_grad(x: torch.Tensor):
    """x is a 1-D tensor with requires_grad=True.

    If x.sum() > 0, loss = (x * x).sum(); otherwise loss = torch.exp(x).sum().
    Call loss.backward() and return the tuple (loss, x.grad).
    """
    raise NotImplementedError


def loop_grad(x: torch.Tensor, c: float, limit: float):
    """x is a 1-D tensor with requires_grad=True, c > 1 and limit > 0 floats.

    Starting from y = x, repeat y = y * c while y.norm() < limit, counting
    the repetitions in steps (0 if x.norm() is already at least limit).
    Then call y.sum().backward() and return the tuple (steps, x.grad), with
    steps a Python int.
    """
    raise NotImplementedError


def rnn_grad(xs: torch.Tensor, w: torch.Tensor, h0: torch.Tensor):
    """A tiny recurrent network over a sequence whose length T changes from
    call to call. xs has shape (T, n); w and h0 have shape (n,) and
    require grad.

    Starting from h = h0, for each row x_t of xs in order compute
    h = torch.tanh(w * h + x_t). Then call h.sum().backward() on the last h
    and return the tuple (w.grad, h0.grad).
    """
    raise NotImplementedError

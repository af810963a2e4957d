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
    """x is a 1-D float64 tensor (1 to 6 elements) with requires_grad=True;
    its elements may have both signs.

    Decide ONCE, for the whole tensor: if x.sum() > 0, loss = (x * x).sum();
    otherwise (x.sum() < 0, and also x.sum() == 0 exactly),
    loss = torch.exp(x).sum(). Do not branch element by element: with
    x = [-1., 3.], x.sum() = 2 > 0, so loss = 1 + 9 = 10 and every element's
    gradient is 2 * x = [-2., 6.], the negative element included.
    Call loss.backward() and return the tuple (loss, x.grad): loss as a 0-d
    tensor (or a Python float), x.grad a tensor of x's shape.
    """
    raise NotImplementedError


def loop_grad(x: torch.Tensor, c: float, limit: float):
    """x is a 1-D float64 tensor (1 to 3 elements) with requires_grad=True;
    c > 1 and limit > 0 are Python floats.

    Starting from y = x, repeat y = y * c while y.norm() < limit, counting
    the repetitions in steps. The test comes before each multiplication, so
    steps is 0 when x.norm() is already at least limit, and the loop stops
    as soon as y.norm() >= limit (a norm exactly equal to limit stops it).
    Build y inside that while loop, one multiplication per step on the
    tensor that requires grad: the grader checks that the graph holds one
    multiplication per step, so counting the steps first and then computing
    x * c ** steps does not count. Then call y.sum().backward() once and
    return the tuple (steps, x.grad): steps a Python int, x.grad a tensor
    of x's shape (every element is c ** steps).
    """
    raise NotImplementedError


def rnn_grad(xs: torch.Tensor, w: torch.Tensor, h0: torch.Tensor):
    """A tiny recurrent network over a sequence whose length T changes from
    call to call (T = 1 included). xs is a float64 tensor of shape (T, n)
    that does not require grad; w and h0 are float64 tensors of shape (n,)
    with requires_grad=True.

    Starting from h = h0, for each row x_t of xs, in order from xs[0] to
    xs[T - 1], compute h = torch.tanh(w * h + x_t) (w * h multiplies element
    by element). Keep every step in the graph (no detach). Then call
    h.sum().backward() on the last h and return the tuple
    (w.grad, h0.grad): two tensors of shape (n,).
    """
    raise NotImplementedError

"""Gradient accumulation: .grad adds up until you clear it.

backward never overwrites a leaf's .grad: it adds the new gradient to what
is already there. Take x = torch.ones(2, 2, requires_grad=True) and
out = ((x + 2) ** 2).mean(). Each element contributes (x_i + 2)^2 / 4, so
d out / d x_i = 2 (x_i + 2) / 4 = 1.5, and after out.backward() every entry
of x.grad is 1.5. Build out again and call backward a second time: x.grad is
now 3.0 everywhere, and it keeps growing until you clear it with
x.grad = None, x.grad.zero_() or optimizer.zero_grad().

That is why a training loop zeroes the gradients in every step:

    for step in range(k):
        loss = loss_fn(w)
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None          # or w.grad.zero_()

and why accumulation can also be useful: to train on a batch that does not
fit in memory, split it into k equal micro-batches, call backward on
(micro-batch loss) / k for each one without zeroing in between, and .grad
ends up holding the gradient of the mean loss over the whole batch.
"""

import torch


def accumulated_grad(x: torch.Tensor, k: int):
    """x is a float64 leaf tensor of any shape with requires_grad=True and no
    gradient yet (x.grad is None); k is an int, k >= 2.

    Do k passes. In each pass build out = ((x + 2) ** 2).mean() anew (a fresh
    forward pass; do not reuse an earlier pass's graph) and call
    out.backward(). Do not clear x.grad in between: the k gradients add up.
    Return x.grad (a tensor of x's shape), k times the gradient of one pass:
    for the tutorial's x = torch.ones(2, 2) and k = 2, 3.0 everywhere.

    The check counts your backward calls: exactly k, each after its own
    forward pass. (torch.autograd.grad does not count: it returns gradients
    without adding them to .grad.)
    """
    raise NotImplementedError


def zeroed_grads(x: torch.Tensor, scales: list):
    """x is a float64 leaf tensor of any shape with requires_grad=True
    (x.grad is None); scales is a list of k >= 2 Python floats.

    For each c in scales, in order: clear x.grad (x.grad = None), build
    out = c * ((x + 2) ** 2).mean(), call out.backward() and keep a copy of
    x.grad. Return the list of the k copies (a list of tensors, each of x's
    shape): copy i must be the gradient of pass i alone, c_i times the
    gradient of ((x + 2) ** 2).mean() (c_i * 1.5 everywhere for the
    tutorial's x = torch.ones(2, 2)).

    Keep copies (x.grad.clone()), not x.grad itself: x.grad is one tensor
    that backward adds into and zero_() clears in place, so a list holding
    x.grad k times shows its last value k times. The check counts your
    backward calls: exactly k, one per pass.
    """
    raise NotImplementedError


def train_loop(w: torch.Tensor, xs: torch.Tensor, ys: torch.Tensor, lr: float):
    """w is a float64 leaf of shape (n,) with requires_grad=True (w.grad is
    None); xs has shape (k, b, n) and ys shape (k, b), k >= 2 (neither
    requires grad); lr is a Python float, possibly 0.0.

    Run k steps of gradient descent; step i uses the batch xs[i], ys[i]:

        loss = ((xs[i] @ w - ys[i]) ** 2).mean()
        loss.backward()
        keep a copy of w.grad (w.grad.clone())
        with torch.no_grad():
            w -= lr * w.grad        # in place, with gradients off
        clear w.grad (w.grad = None) for the next step

    Return the tuple (w, grads): w itself after the k steps (still the leaf
    you were given, with requires_grad=True) and the list of the k gradient
    copies, in step order.

    The check requires the update to change w in place with gradients off
    (torch.no_grad() as above, or an optimizer's step(), which does the
    same); w = w - lr * w.grad, w.data or detach() tricks do not count.
    """
    raise NotImplementedError


def microbatch_grad(w: torch.Tensor, xs: torch.Tensor, ys: torch.Tensor):
    """w is a float64 leaf of shape (n,) with requires_grad=True (w.grad is
    None); xs has shape (k, b, n) and ys shape (k, b): k >= 2 micro-batches
    of b >= 2 samples each.

    Accumulate in w.grad the gradient of the mean squared error over all
    k * b samples, ((x @ w - y) ** 2) averaged over every sample, one
    micro-batch at a time: for each i, take the loss of micro-batch i (the
    mean over its b samples), divide it by k and call backward on it,
    without clearing w.grad in between. Return w.grad (a tensor of shape
    (n,)).

    The check counts your backward calls: exactly k, one per micro-batch.
    """
    raise NotImplementedError

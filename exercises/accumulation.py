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
    """x is a leaf with requires_grad=True; k >= 2.

    k times: compute out = ((x + 2) ** 2).mean() (a fresh forward pass each
    time) and call out.backward(). Do NOT zero x.grad in between. Return
    x.grad at the end (k times the gradient of one pass).
    """
    raise NotImplementedError


def zeroed_grads(x: torch.Tensor, k: int):
    """x is a leaf with requires_grad=True; k >= 2.

    k times: clear x.grad, compute out = ((x + 2) ** 2).mean(), call
    out.backward() and keep a copy of x.grad (x.grad.clone()). Return the
    list of the k copies; each must be the gradient of one pass only.
    """
    raise NotImplementedError


def train_loop(w: torch.Tensor, xs: torch.Tensor, ys: torch.Tensor, lr: float):
    """w has shape (n,) and requires grad; xs has shape (k, b, n); ys has
    shape (k, b); lr is the learning rate.

    Run k steps of gradient descent; step i uses the batch xs[i], ys[i]:
        loss = ((xs[i] @ w - ys[i]) ** 2).mean()
        call loss.backward(), keep a copy of w.grad,
        update w in place: w <- w - lr * w.grad (under torch.no_grad()),
        then clear w.grad for the next step.
    Return the tuple (w, grads): w after the k steps and the list of the k
    gradient copies, in step order.
    """
    raise NotImplementedError


def microbatch_grad(w: torch.Tensor, xs: torch.Tensor, ys: torch.Tensor):
    """w has shape (n,) and requires grad; xs has shape (k, b, n) and ys has
    shape (k, b): k micro-batches of b samples each.

    Accumulate the gradient of the mean squared error over all k * b samples,
    ((x @ w - y) ** 2) averaged over every sample, one micro-batch at a
    time: for each i call backward on the loss of micro-batch i (its mean
    over its b samples) divided by k, without zeroing w.grad in between.
    Return w.grad.
    """
    raise NotImplementedError

"""Keeping the gradient of an intermediate tensor: retain_grad().

backward computes the gradient of the loss with respect to every tensor on
the way from the loss to the leaves, but it stores only the leaves' ones in
.grad; the others are dropped to save memory. To keep the gradient of an
intermediate tensor t as well, call t.retain_grad() BEFORE backward: then
t.retains_grad is True and t.grad holds dloss/dt afterwards. Calling it after
backward is too late: that gradient no longer exists.

The tutorial's example, y = (x + w) * (w + 1) with w = 1 and x = 2:

    w = torch.tensor([1.], requires_grad=True)
    x = torch.tensor([2.], requires_grad=True)
    a = torch.add(w, x)
    a.retain_grad()
    b = torch.add(w, 1)
    b.retain_grad()
    y = torch.mul(a, b)
    y.backward()

Now w.grad = 5 and x.grad = 2 as usual, and also a.grad = 2 and b.grad = 3:
dy/da = b = w + 1 = 2 and dy/db = a = x + w = 3.

Without the two retain_grad() calls, a.grad and b.grad would be None (and
reading them prints a warning that they are not leaves).
"""

import torch


def intermediate_grads(x: torch.Tensor, w: torch.Tensor, v: torch.Tensor):
    """The tutorial's intermediate gradients, with weights.

    Inputs: x and w are float64 leaf tensors of the same shape (1-D or 2-D,
    at least 4 elements) with requires_grad=True; v is a float64 tensor of
    that shape that does not require grad (the weights).

    Compute a = x + w, b = w + 1, y = a * b and loss = (v * y).sum() (a
    sum, not a mean), make a, b and y keep their gradients (retain_grad()
    before backward), call loss.backward() once and return the tuple
    (a, b, y), in this order, of the tensors themselves, not copies: the
    grader reads a.grad, b.grad and y.grad, which should be v * b, v * a
    and v.
    """
    raise NotImplementedError


def hidden_grads(x: torch.Tensor, W1: torch.Tensor, W2: torch.Tensor):
    """The gradient arriving at the hidden layer of a two-layer network.

    Inputs: float64 tensors x of shape (N, D) (no grad), W1 of shape (D, H)
    and W2 of shape (H, C), both leaves with requires_grad=True; any of N,
    D, H and C may be 1.

    Compute h = torch.tanh(x @ W1), out = h @ W2 and
    loss = (out ** 2).mean() (a mean over all N * C elements), make h and
    out keep their gradients, call loss.backward() once and return the
    tuple (h, out) of the tensors themselves: the grader reads h.grad
    (dloss/dh) and out.grad (dloss/dout).
    """
    raise NotImplementedError


def chain_grads(x: torch.Tensor, c: torch.Tensor):
    """Keep the gradient of every step of a loop.

    Inputs: x is a float64 leaf tensor (1-D or 2-D, at least 2 elements)
    with requires_grad=True; c is a 1-D float64 tensor of n numbers that
    does not require grad; n changes from call to call and may be 1.

    Starting from z_0 = x, compute n steps z_{k+1} = torch.tanh(c[k] * z_k)
    for k = 0, ..., n - 1, then loss = z_n.sum(), and call loss.backward()
    once. Every z_k must keep its gradient dloss/dz_k: call retain_grad()
    on each one as you make it, before backward. Return the list
    [z_1, z_2, ..., z_n] (n tensors, without x) of the tensors themselves.
    """
    raise NotImplementedError

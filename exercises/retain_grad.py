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
    """x and w are leaves with requires_grad=True, v a tensor of the same
    shape that does not require grad.

    Compute a = x + w, b = w + 1, y = a * b and loss = (v * y).sum(), make
    a, b and y keep their gradients, call loss.backward() and return the
    tuple (a, b, y) of the tensors themselves: the grader reads a.grad,
    b.grad and y.grad.
    """
    raise NotImplementedError


def hidden_grads(x: torch.Tensor, W1: torch.Tensor, W2: torch.Tensor):
    """A two-layer network. x has shape (N, D), W1 (D, H) and W2 (H, C);
    W1 and W2 require grad.

    Compute h = torch.tanh(x @ W1), out = h @ W2 and
    loss = (out ** 2).mean(), make h and out keep their gradients, call
    loss.backward() and return the tuple (h, out): the grader reads h.grad
    (dloss/dh, the gradient arriving at the hidden layer) and out.grad.
    """
    raise NotImplementedError


def chain_grads(x: torch.Tensor, c: torch.Tensor):
    """x is a leaf with requires_grad=True and c a 1-D tensor of n numbers
    (n changes from call to call).

    Starting from z_0 = x, compute n steps z_{k+1} = torch.tanh(c[k] * z_k)
    for k = 0, ..., n - 1, then loss = z_n.sum(), and call loss.backward().
    Return the list [z_1, z_2, ..., z_n] of the tensors themselves, each of
    which must keep its gradient dloss/dz_k.
    """
    raise NotImplementedError

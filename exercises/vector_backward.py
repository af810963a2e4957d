"""Backward of a non-scalar: gradient arguments and vector-Jacobian products.

`loss.backward()` with no argument only works when loss holds one number.
For an output y with several elements, autograd does not build the whole
Jacobian J = dy/dx. It computes a vector-Jacobian product: you pass a tensor
v of the same shape as y, and x.grad receives v^T J, the gradient of the
scalar (v * y).sum(). Without v, PyTorch refuses with "grad can be
implicitly created only for scalar outputs".

    y.backward(gradient=v)                        # one output
    torch.autograd.backward([y1, y2], grad_tensors=[v1, v2])   # several

A one-hot v picks out one row of the Jacobian. Take x = [[1, 2]] (requires
grad), Y = [[3, 4], [5, 6]] and L = x @ Y = [[13, 16]]:

    L.backward(gradient=torch.tensor([[1., 0.]]), retain_graph=True)
    x.grad                  # [[3, 5]]: dL[0,0]/dx, the first row of J
    x.grad.zero_()          # gradients add up, so clear them first
    L.backward(gradient=torch.tensor([[0., 1.]]))
    x.grad                  # [[4, 6]]: dL[0,1]/dx, the second row

With several scalar losses, the entries of grad_tensors act as weights:
torch.autograd.backward([L1, L2], grad_tensors=[a, b]) leaves the gradient of
a * L1 + b * L2 in the leaves. Using .sum() or ones instead of the given v
computes a different product (the one with a vector of ones).
"""

import torch


def jacobian_rows(x: torch.Tensor, Y: torch.Tensor):
    """x is a float64 leaf of shape (1, n) with requires_grad=True; Y is a
    float64 tensor of shape (n, m), m >= 2, that does not require grad.

    Compute L = x @ Y (shape (1, m)) once: the grader checks that the
    matrix product ran once. For each output j = 0 .. m-1, call
    L.backward(gradient=e_j, retain_graph=True), where e_j has L's shape, a
    1 at [0, j] and zeros elsewhere: one backward call per row, m in all
    (the grader counts them; torch.autograd.grad(L, x, e_j,
    retain_graph=True) counts as well). Keep a copy of x.grad
    (x.grad.clone(): x.grad itself is changed by what follows), then zero
    x.grad before the next j. Return torch.cat of the m copies: a tensor of
    shape (m, n) whose row j is dL[0, j]/dx. With the example above the
    result is [[3., 5.], [4., 6.]].
    """
    raise NotImplementedError


def vjp_matmul(x: torch.Tensor, Y: torch.Tensor, v: torch.Tensor):
    """x (shape (b, n)) and Y (shape (n, m)) are float64 leaves with
    requires_grad=True; v is a float64 tensor of shape (b, m) that does not
    require grad.

    Compute L = x @ Y and backpropagate the vector v through it with a
    single backward call that passes v (the grader checks there is exactly
    one): L.backward(gradient=v). Return the tuple (x.grad, Y.grad): tensors
    of shapes (b, n) and (n, m).
    """
    raise NotImplementedError


def weighted_losses(w: torch.Tensor, x: torch.Tensor, weights: torch.Tensor):
    """w is a float64 leaf of shape (n,) with requires_grad=True; x is a
    float64 tensor of shape (b, n), b >= 2, and weights a float64 tensor of
    shape (2,) with two different positive entries; neither requires grad.

    Compute the two losses
        L1 = ((x @ w) ** 2).mean()
        L2 = torch.exp(w).sum()
    and call torch.autograd.backward([L1, L2], grad_tensors=[weights[0],
    weights[1]]) once: a single backward call for both losses (the grader
    checks there is exactly one; backward of weights[0] * L1 +
    weights[1] * L2 is the same single call). Return w.grad: a tensor of
    shape (n,), the gradient of weights[0] * L1 + weights[1] * L2.
    """
    raise NotImplementedError

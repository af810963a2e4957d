"""Turning gradient tracking off: requires_grad, detach() and torch.no_grad().

requires_grad spreads forward through a graph: the result of an operation
requires grad (and gets a grad_fn) as soon as at least one of its inputs
requires grad. When none does, nothing is recorded and the result is a plain
tensor with requires_grad=False.

Two tools stop the spread:

- t.detach() returns a tensor with the same values (it even shares memory
  with t) that is cut off from the graph: requires_grad=False, grad_fn None.
  Nothing flows back through it, so use it for values that must act as
  constants, such as a target computed from the model itself.
- Inside `with torch.no_grad():` no operation is recorded at all: every
  result has requires_grad=False, even when its inputs require grad. Use it
  for evaluation, for frozen parts of a model and for parameter updates.

t.item(), t.tolist() and a round trip through numpy leave the graph too.

For example, with x = torch.ones(2, requires_grad=True):

    y = x * 2                  # requires_grad True, grad_fn MulBackward0
    d = y.detach()             # requires_grad False, grad_fn None
    with torch.no_grad():
        z = x * 2              # requires_grad False, grad_fn None
    u = d * x                  # requires_grad True again: x requires grad

A loss built only from tensors that do not require grad has no graph, and
its backward fails with "element 0 of tensors does not require grad and does
not have a grad_fn".
"""

import torch


def predict_requires_grad(nodes: list):
    """Predict which tensors of a graph require grad, from the rules above
    alone: without building any tensors (the check verifies that your code
    calls no torch function; plain Python is all it takes).

    nodes is a list that describes the tensors t0, t1, t2, ... in the order
    they are made; each entry is a list:

        ["input", requires_grad]   a tensor you create, with that flag (a bool)
        ["add", i, j]              t_i + t_j
        ["mul", i, j]              t_i * t_j
        ["exp", i]                 torch.exp(t_i)
        ["detach", i]              t_i.detach()

    i and j are ints, indices of earlier nodes. An "add", "mul" or "exp"
    node may end with the extra item "no_grad", e.g. ["mul", 0, 2, "no_grad"]
    or ["exp", 1, "no_grad"]: that tensor is computed inside a
    `with torch.no_grad():` block. All other nodes are computed outside.

    For example [["input", True], ["input", False], ["mul", 0, 1],
    ["exp", 0, "no_grad"], ["detach", 0], ["add", 0, 1]] gives
    [True, False, True, False, False, True]: t0.detach() makes a new tensor
    and leaves t0 as it was.

    Return a list of bools (True/False), one per node: t_k.requires_grad.
    A 1-D numpy array of bools is accepted in place of a list.
    """
    raise NotImplementedError


def frozen_features(x: torch.Tensor, W1: torch.Tensor, W2: torch.Tensor):
    """A frozen feature extractor followed by a trained layer. x is a float64
    tensor of shape (N, D) that does not require grad; W1 (D, H) and W2
    (H, C) are float64 leaves with requires_grad=True and no gradient yet.
    Any of N, D, H and C may be 1.

    W1 is frozen: compute the features h = torch.tanh(x @ W1) with gradient
    recording switched off, inside `with torch.no_grad():` (the switch
    torch.set_grad_enabled(False) is the same thing), so that no graph is
    recorded for them. Then, outside that block, compute out = h @ W2 and
    loss = (out ** 2).mean() and call loss.backward().

    Return the tuple (h, W1.grad, W2.grad): the tensor h itself, then
    W1.grad (which should be None) and W2.grad (a tensor of shape (H, C)).

    The check verifies how h was made: all of it with recording off, and
    without detach() (which gives the same values, but this task is about
    the switch; detach() is td_grad's tool).
    """
    raise NotImplementedError


def td_grad(w: torch.Tensor, x: torch.Tensor, x_next: torch.Tensor, r: torch.Tensor, gamma: float):
    """A temporal-difference step, as in Q-learning with a linear model.
    w is a float64 leaf of shape (D,) with requires_grad=True and no
    gradient yet; x and x_next have shape (N, D) and r shape (N,), none of
    them requires grad (N and D may be 1); gamma is a Python float.

    The prediction is q = x @ w. The target r + gamma * (x_next @ w) is
    computed from the same w but must count as a constant: no gradient may
    flow through it. Compute target that way, cut off from the graph (with
    .detach(), or inside torch.no_grad(): either works), then
    loss = ((q - target) ** 2).mean(), call loss.backward() and return the
    tuple (target, w.grad): target of shape (N,) with requires_grad=False,
    and w.grad of shape (D,).
    """
    raise NotImplementedError

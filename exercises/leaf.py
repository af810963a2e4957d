"""Leaf tensors.

A leaf is a tensor that no recorded operation produced: you created it
yourself (torch.tensor, torch.randn, torch.zeros, ...). Its grad_fn is None
and its is_leaf is True. A tensor computed from something that requires grad
is not a leaf: it remembers the operation in grad_fn and is_leaf is False.
An operation whose inputs all have requires_grad=False records nothing, so
its result is a leaf again (with requires_grad=False).

After loss.backward(), only leaves with requires_grad=True keep their
gradient in .grad. The gradients of the intermediate tensors are computed on
the way down and then dropped, to save memory. A leaf that the loss does not
depend on gets no gradient at all: its .grad stays None.

The tutorial's example, y = (x + w) * (w + 1) with w = 1 and x = 2:

    w = torch.tensor([1.], requires_grad=True)
    x = torch.tensor([2.], requires_grad=True)
    a = torch.add(w, x)     # a = x + w
    b = torch.add(w, 1)     # b = w + 1
    y = torch.mul(a, b)
    y.backward()

    w.is_leaf, x.is_leaf, a.is_leaf, b.is_leaf, y.is_leaf  ->  True True False False False
    w.grad, x.grad                                         ->  tensor([5.]) tensor([2.])
    a.grad, b.grad, y.grad                                 ->  None None None (with a warning)

A classic trap: w = torch.randn(3, requires_grad=True) * 0.01 is NOT a leaf,
because the multiplication produced it (its grad_fn is MulBackward0), so
w.grad stays None after backward. Do the arithmetic first and ask for
gradients last: w = (torch.randn(3) * 0.01).requires_grad_(). The same goes
for .double(), .to(...) or .cuda() applied after requires_grad=True.
"""

import torch


def tutorial_graph(x: torch.Tensor, w: torch.Tensor):
    """The tutorial's graph, looked at after backward.

    Inputs: x and w are float64 leaf tensors of the same shape (1-D or 2-D,
    at least 4 elements) with requires_grad=True and no gradient yet.

    Compute a = x + w, b = w + 1 and y = a * b, then call
    y.sum().backward() once (y.backward(torch.ones_like(y)) does the same).

    Return the tuple (w, x, a, b, y), in this order, of the tensors
    themselves: the w and x you were given, and the a, b and y your
    computation used, not copies (.clone(), .detach(), .data) and not their
    .grad. The grader reads is_leaf, grad_fn and .grad of each one: w and x
    must hold their gradients, a, b and y must hold none, so do not call
    retain_grad() here.
    """
    raise NotImplementedError


def init_parameter(data: torch.Tensor, scale: float, x: torch.Tensor):
    """Initialise a parameter so that it is a leaf.

    Inputs: data is a float64 tensor (1 to 3 dimensions, at least 2
    elements) that does not require grad; scale is a Python float; x is a
    float64 tensor of data's shape that does not require grad.

    Make a tensor w that holds the values data * scale, is a leaf
    (w.is_leaf is True) and requires grad: the way small random weights are
    initialised. Then compute loss = (w * x).sum() (a sum, not a mean), call
    loss.backward() once and return w itself (a tensor, whose .grad the
    grader reads: it should equal x).
    """
    raise NotImplementedError


def predict_leaves(nodes: list):
    """Predict, without building any tensors, which tensors of a graph are
    leaves and which hold a gradient after backward.

    Input: nodes, a list that describes the tensors t0, t1, t2, ... in the
    order they are made; each entry is a list:

        ["input", requires_grad]   a tensor you create, requires_grad a bool
        ["add", i, j]              t_i + t_j   (i and j are ints < k)
        ["mul", i, j]              t_i * t_j
        ["exp", i]                 torch.exp(t_i)

    After the last tensor is made, loss = t_last.sum() and loss.backward()
    is called. The last tensor always requires grad (it may be an input).
    Some inputs may not be used at all, and some tensors may not lead to the
    last one.

    Return (is_leaf, has_grad): two lists with one bool (True or False;
    1 and 0 are not accepted) per node, is_leaf[k] being t_k.is_leaf and
    has_grad[k] whether t_k.grad holds a tensor after backward. A 1-D numpy
    array of bools is accepted in place of a list.

    Work it out from the rules in this file's introduction, in plain
    Python: the grader checks that your code calls no torch function (no
    tensors, no backward).

    Example: for [["input", True], ["input", False], ["mul", 0, 1]]
    the answer is ([True, True, False], [True, False, False]).
    """
    raise NotImplementedError

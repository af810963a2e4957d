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
    """x and w are leaves with requires_grad=True (any shape, the same for
    both). Compute a = x + w, b = w + 1 and y = a * b, then call
    y.sum().backward().

    Return the tuple (w, x, a, b, y) of the tensors themselves, not copies or
    their .grad: the grader reads is_leaf, grad_fn and .grad of each one.
    Do not call retain_grad() here.
    """
    raise NotImplementedError


def init_parameter(data: torch.Tensor, scale: float, x: torch.Tensor):
    """data is a tensor that does not require grad, scale a float and x a
    tensor of data's shape.

    Make a parameter w that holds the values data * scale, is a leaf and
    requires grad (the way small random weights are initialised). Then
    compute loss = (w * x).sum(), call loss.backward() and return w.
    """
    raise NotImplementedError


def predict_leaves(nodes: list):
    """Predict, without building any tensors, which tensors of a graph are
    leaves and which hold a gradient after backward.

    nodes describes the tensors t0, t1, t2, ... in the order they are made:

        ["input", requires_grad]   a tensor you create, with that flag
        ["add", i, j]              t_i + t_j
        ["mul", i, j]              t_i * t_j
        ["exp", i]                 torch.exp(t_i)

    After the last tensor is made, loss = t_last.sum() and loss.backward()
    is called.

    Return (is_leaf, has_grad): two lists of bools with one entry per node,
    is_leaf[k] being t_k.is_leaf and has_grad[k] whether t_k.grad holds a
    tensor after backward.
    """
    raise NotImplementedError

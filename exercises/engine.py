"""Build your own autograd engine, in numpy.

In the other topics you used PyTorch's autograd; here you write a small one
yourself. It follows PyTorch's rules and names, so everything you learn here
is how PyTorch behaves, and the grader checks your engine by running random
programs on it and on torch.autograd and comparing the two.

The idea in one example, the tutorials' y = (x + w) * (w + 1):

    w = Tensor(1.0, requires_grad=True)
    x = Tensor(2.0, requires_grad=True)
    a = x + w          # a.grad_fn is an AddBackward0 node
    b = w + 1          # b.grad_fn is another AddBackward0 node
    y = a * b          # y.grad_fn is a MulBackward0 node
    y.backward()       # w.grad == 5.0, x.grad == 2.0

1. Forward: every operation on a tensor that requires grad computes its
   value with numpy AND records a node, the result's `grad_fn`. The node
   remembers its inputs and saves whatever its backward rule will need
   (MulBackward0 saves a and b). Together the nodes form a graph, a DAG,
   from y down to the leaves w and x.
2. Backward: y.backward() starts with dy/dy = 1 and walks the graph from y
   to the leaves. Each node turns the gradient of its output into gradients
   of its inputs with its local rule (the chain rule, one step at a time):
   MulBackward0 gets 1 and sends 1 * b = 2 to a and 1 * a = 3 to b; each
   AddBackward0 passes its gradient on unchanged. w is reached along two
   paths, so its two contributions add up: 2 + 3 = 5 = 2w + x + 1.
3. The leaves that require grad keep the result in `.grad`, adding it to
   what is already there.

What is given is in engine_given.py, beside this file: read it, do not
edit it (the grader uses its own copy). It has the Tensor's data, shape,
repr and operators, the grad mode and `no_grad()`, the Node base class,
`_apply`, which runs an operation and records its node, and PyTorch's
error texts. What you write is everything in THIS file that says
`raise NotImplementedError`, in three stages, top to bottom; after each
stage, run its checks (from the folder above exercises/):

    Stage 1, the operations: Node.saved_tensors and Node.free_saved, then
      forward and backward of each operation node, AddBackward0 first.
        pytest --grade exercises/test_engine.py -k op_derivatives
      Until your backward exists, this check runs the backward pass itself
      and calls your nodes' backward, so it tests each local rule alone
      (the script its feedback shows calls .backward(): it runs on your
      engine once stage 2 is done).
    Stage 2, the backward pass: unbroadcast, accumulate_grad, run_backward,
      backward, and Tensor.is_leaf (in the Tensor class, at the end).
        pytest --grade exercises/test_engine.py -k "graph_traversal or broadcasting or vector_backward"
    Stage 3, the rules around it: Tensor.retain_grad, Tensor.detach and
      Tensor.zero_grad.
        pytest --grade exercises/test_engine.py -k "leaves or accumulation or retain_graph"

Use numpy only: the grader runs this file where torch cannot be imported.
"""

# The same imports as the reference solution's, statement for statement.
# ruff: noqa: I001, UP035
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

# The given part (engine_given.py); no_grad and is_grad_enabled are imported
# so that `from engine import no_grad` works, as `from torch import no_grad`.
from engine_given import ERR_BACKWARD_TWICE, ERR_IMPLICIT_GRAD, ERR_NO_GRAD, ERR_RETAIN_NO_GRAD, ERR_SHAPE  # noqa: F401  (for the parts you write)
from engine_given import NodeBase, TensorBase, is_grad_enabled, no_grad  # noqa: F401


# ===========================================================================
# Stage 1: the operations (check: -k op_derivatives)
# ===========================================================================

class Node(NodeBase):
    """One recorded operation: the `grad_fn` of the tensor it produced.

    Each operation is a subclass named as in PyTorch (AddBackward0,
    MulBackward0, ...) with two methods you write:

    - forward(self, *arrays, **params) gets the operands' numpy arrays (and
      the operation's parameters, such as an axis), returns the result's
      numpy array, and keeps what backward will need: arrays with
      self.save_for_backward(...), small facts such as a shape or an axis as
      plain attributes (self.shape = a.shape).
    - backward(self, grad) gets dL/d(output), an array of the output's shape,
      and returns a tuple with one gradient per operand, in the operands'
      order: dL/d(operand) = grad times the local derivative. For an
      elementwise operation whose operands were broadcast, return the
      gradients in the output's shape: the engine sums them back to each
      operand's shape (see unbroadcast).

    The given NodeBase (engine_given.py) sets for you: `seq`, a number
    that grows with every node made (so a node made later has a larger
    seq), and `inputs`, one entry per operand: the operand Tensor if it
    requires grad, else None (a constant, or a tensor that needs no
    gradient; the engine skips those entries, but backward still returns a
    value, any value, in their place). It also gives
    save_for_backward(*arrays), which keeps the arrays in self._saved; you
    write the two methods below that read and drop them (self._freed starts
    False).
    """

    @property
    def saved_tensors(self) -> tuple[np.ndarray, ...]:
        """The arrays given to save_for_backward, in the same order.

        Once free_saved() has run they are gone: then raise
        RuntimeError(ERR_BACKWARD_TWICE). This is where PyTorch's "Trying to
        backward through the graph a second time" comes from: the error is
        raised when a backward rule asks for a value that was freed. A node
        that saved nothing never asks, so add, sub, neg, sum, mean, reshape
        and transpose can run backward again and again without error, while
        mul, div, pow, matmul, exp, log, tanh, relu and sigmoid cannot.
        """
        raise NotImplementedError

    def free_saved(self) -> None:
        """Drop the saved arrays (to save memory) and remember that they are gone.

        run_backward calls this for each node it runs, unless retain_graph is
        True. Example: L = (x * x).sum(); L.backward() frees MulBackward0's
        saved x, so a second L.backward() raises; with
        L.backward(retain_graph=True) first, the second call works and
        x.grad adds up to 2 * 2x.
        """
        raise NotImplementedError


class AddBackward0(Node):
    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """out = a + b (numpy broadcasts a and b to a common shape).

        Nothing to save: the derivative of a + b is 1 for both operands.
        """
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """dL/da = grad * 1 and dL/db = grad * 1: both get grad unchanged.

        In y = (x + w) * (w + 1), a = x + w receives 2 and passes 2 to both
        x and w.
        """
        raise NotImplementedError


class SubBackward0(Node):
    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """out = a - b. Nothing to save."""
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """d(a - b)/da = 1 and d(a - b)/db = -1."""
        raise NotImplementedError


class MulBackward0(Node):
    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """out = a * b (elementwise). Save a and b: each one's derivative is the other."""
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """dL/da = grad * b and dL/db = grad * a.

        The tutorial: y = a * b with a = 3, b = 2 and grad = 1 gives
        dL/da = 2 and dL/db = 3. Read a and b from self.saved_tensors (not
        from attributes of your own), so that a freed node raises.
        """
        raise NotImplementedError


class DivBackward0(Node):
    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """out = a / b. Save a and b."""
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """d(a/b)/da = 1/b and d(a/b)/db = -a / b**2.

        With a = 6, b = 2 and grad = 1: dL/da = 0.5 and dL/db = -1.5.
        """
        raise NotImplementedError


class NegBackward0(Node):
    def forward(self, a: np.ndarray) -> np.ndarray:
        """out = -a. Nothing to save."""
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """d(-a)/da = -1. Return a tuple of one: (something,)."""
        raise NotImplementedError


class PowBackward0(Node):
    def forward(self, a: np.ndarray, exponent: float) -> np.ndarray:
        """out = a ** exponent, exponent a Python number.

        Save a with save_for_backward and keep the exponent as an attribute
        (self.exponent = exponent): a number is not a saved array.
        """
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """d(a**p)/da = p * a**(p - 1).

        out = ((x + 2) ** 2).mean() with x = ones(2, 2): the pow node gets
        grad = 1/4 per element and returns 1/4 * 2 * (1 + 2) = 1.5, which is
        x.grad. One special case, as in PyTorch: for p == 0 the derivative is
        0 everywhere (p * a**-1 would give nan at a = 0).
        """
        raise NotImplementedError


class MmBackward0(Node):
    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """out = a @ b. Save a and b.

        MmBackward0 is PyTorch's name for 2-D @ 2-D; MvBackward0
        (2-D @ 1-D) and DotBackward0 (1-D @ 1-D) use this same code (the
        given part makes them from this class).
        """
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """For out = a @ b with a (n, k), b (k, m) and grad (n, m):

            dL/da = grad @ b.T     (n, m) @ (m, k) -> (n, k), a's shape
            dL/db = a.T @ grad     (k, n) @ (n, m) -> (k, m), b's shape

        Let the shapes guide you: each gradient has its operand's shape.
        The tutorial: x = [[1, 2]], Y = [[3, 4], [5, 6]], L = x @ Y. With
        grad [[1, 0]], dL/dx = [[1, 0]] @ Y.T = [[3, 5]], the first row of
        the Jacobian's transpose; with [[0, 1]] it is [[4, 6]].

        1-D operands: treat a 1-D a as one row (1, k) and a 1-D b as one
        column (k, 1), use the formulas above, and reshape each gradient
        back to its operand's shape (and grad to (rows of a, columns of b)
        first).
        """
        raise NotImplementedError


class SumBackward0(Node):
    def forward(self, a: np.ndarray, axis: tuple[int, ...] | None = None,
                keepdims: bool = False) -> np.ndarray:
        """out = a.sum(axis=axis, keepdims=keepdims); axis is None (all
        elements) or a tuple of axes, which may be negative.

        Keep a's shape, axis and keepdims as attributes: backward needs them
        and they are not saved arrays (so the sum never raises the
        second-backward error).
        """
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """Every element of a adds into its sum once, so its derivative is 1:
        each element of a gets the gradient of the sum it went into.

        Spread grad back over a's shape: when keepdims was False, first put
        the summed axes back as axes of length 1 (np.expand_dims, with
        negative axes turned positive, or all axes when axis was None), then
        np.broadcast_to(grad, a's shape). Example: a of shape (2, 3), out =
        a.sum(axis=(0,)), shape (3,); grad [1, 2, 3] becomes [[1, 2, 3],
        [1, 2, 3]].
        """
        raise NotImplementedError


class MeanBackward0(Node):
    def forward(self, a: np.ndarray, axis: tuple[int, ...] | None = None,
                keepdims: bool = False) -> np.ndarray:
        """out = a.mean(axis=axis, keepdims=keepdims). Keep what backward
        needs as attributes, as for the sum, and the number of elements that
        went into each mean."""
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """A mean is a sum divided by its count n: spread grad back as the
        sum does and divide by n.

        out = ((x + 2) ** 2).mean() over x = ones(2, 2): n = 4, so the mean
        sends 1/4 to each element (forgetting the 1/n makes every gradient n
        times too large).
        """
        raise NotImplementedError


class ExpBackward0(Node):
    def forward(self, a: np.ndarray) -> np.ndarray:
        """out = np.exp(a). Save the result: the derivative of exp is exp itself."""
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """d exp(a)/da = exp(a), the saved result."""
        raise NotImplementedError


class LogBackward0(Node):
    def forward(self, a: np.ndarray) -> np.ndarray:
        """out = np.log(a). Save a."""
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """d log(a)/da = 1 / a."""
        raise NotImplementedError


class TanhBackward0(Node):
    def forward(self, a: np.ndarray) -> np.ndarray:
        """out = np.tanh(a). Save the result."""
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """d tanh(a)/da = 1 - tanh(a)**2, from the saved result."""
        raise NotImplementedError


class ReluBackward0(Node):
    def forward(self, a: np.ndarray) -> np.ndarray:
        """out = a where a >= 0, else 0. Save the result.

        (np.where(a < 0, 0.0, a) matches PyTorch to the last bit: it keeps
        -0.0 as -0.0, which np.maximum(a, 0) turns into 0.0.)
        """
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """The slope is 1 where the result is positive and 0 elsewhere
        (PyTorch uses 0 at a = 0 too): grad where out > 0, else 0.
        np.where does it; grad * (out > 0) gives nan where grad is inf."""
        raise NotImplementedError


class SigmoidBackward0(Node):
    def forward(self, a: np.ndarray) -> np.ndarray:
        """out = 1 / (1 + exp(-a)). Save the result.

        For large negative a, exp(-a) overflows; 1 / (1 + e) for a >= 0 and
        e / (1 + e) for a < 0, with e = exp(-|a|), never does.
        """
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """d sigmoid(a)/da = s * (1 - s), s the saved result."""
        raise NotImplementedError


class ViewBackward0(Node):
    def forward(self, a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """out = a.reshape(shape). Keep a's shape as an attribute."""
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """A reshape moves no value, it only renames positions: reshape grad
        back to a's shape."""
        raise NotImplementedError


class TransposeBackward0(Node):
    def forward(self, a: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """out = np.transpose(a, axes): axis i of out is axis axes[i] of a.
        Keep axes as an attribute."""
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        """Undo the permutation: np.transpose(grad, np.argsort(axes)).
        For a 2-D transpose (axes (1, 0)) that is grad.T."""
        raise NotImplementedError


# ===========================================================================
# Stage 2: the backward pass (checks: -k "graph_traversal or broadcasting or vector_backward")
# ===========================================================================

def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum grad back to `shape`, undoing numpy's broadcasting.

    b of shape (3,) added to x of shape (2, 3) is used twice, once per row,
    so its gradient is the sum of the two rows of grad (shape (2, 3) ->
    (3,)). A c of shape (2, 1) is stretched along axis 1, so its gradient
    sums grad over axis 1, keeping that axis (-> (2, 1)). A shape () scalar
    gets the sum of everything. Two steps:

    1. while grad has more axes than shape, sum over axis 0 (the axes
       broadcasting added in front);
    2. for every axis where shape has length 1 and grad does not, sum over
       that axis with keepdims=True.

    Returns a numpy array of exactly `shape` (np.asarray turns numpy's
    float64 scalars into 0-d arrays). A gradient that already has the shape
    comes back unchanged.
    """
    raise NotImplementedError


def accumulate_grad(t: Tensor, grad: np.ndarray) -> None:
    """Add grad into t.grad (PyTorch's AccumulateGrad).

    If t.grad is None, store a copy of grad (np.array(grad, dtype=np.float64)),
    so that no two tensors ever share one .grad array; else replace t.grad
    by t.grad + grad. Adding, not overwriting, is what makes gradients
    accumulate across backward calls: after out = ((x + 2) ** 2).mean() with
    x = ones(2, 2), out.backward() gives x.grad = 1.5 everywhere; building
    out again and calling backward once more gives 3.0, until zero_grad().
    """
    raise NotImplementedError


def run_backward(roots: Sequence[Tensor], grads: Sequence[np.ndarray],
                 retain_graph: bool = False) -> None:
    """Send grads[i] back from roots[i] through the graph, in one traversal.

    roots are tensors that require grad; grads[i] is a numpy array of
    roots[i]'s shape (backward() has checked both). Step by step:

    1. Gradients so far: a dict from tensor to the gradient that has arrived
       at it, starting with grads[i] at roots[i] (added up if a tensor is
       given twice). Tensors work as dict keys (by identity).

    2. Find the graph: from the roots, follow t.grad_fn.inputs (skipping
       None) to every tensor they reach, visiting each tensor once. Collect
       the non-leaves (tensors with a grad_fn) and count, for every tensor,
       how many edges lead into it (x * x counts x twice).

    3. Run the nodes newest first: sort the non-leaves by grad_fn.seq,
       largest first. A node is always made after the nodes that made its
       inputs, so when a node's turn comes, every node that sends it
       gradient has already run and its gradient is complete: this is a
       topological order, and each node runs exactly once, even when a
       tensor is used several times (fan-out) or two paths meet again (a
       diamond, as w in (x + w) * (w + 1)). For each non-leaf t, in order:
         - take its gradient g out of the dict;
         - if t.retains_grad, accumulate_grad(t, g);
         - input_grads = t.grad_fn.backward(g); then, unless retain_graph,
           t.grad_fn.free_saved();
         - for each (input, gi) of (grad_fn.inputs, input_grads) whose input
           is not None: unbroadcast gi to the input's shape and ADD it to the
           input's gradient in the dict (with = instead of +, w in the example
           would get 2 or 3 instead of 5).

    4. Leaves: a leaf that requires grad receives accumulate_grad(leaf,
       its gradient) once every edge into it has delivered: count the
       deliveries down and accumulate when the count reaches 0 (a root that
       is a leaf with no edge into it accumulates at the start). PyTorch
       does the same. It matters when a node raises halfway (a second
       backward through a freed node): the leaves completed before the error
       keep what they received, the others get nothing.

    Non-leaves never get .grad unless they retain it.
    """
    raise NotImplementedError


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None,
             retain_graph: bool = False) -> None:
    """Backward from several outputs at once (torch.autograd.backward).

    tensors: one Tensor or a sequence of them. grad_tensors: None, one
    gradient, or a sequence with one entry per tensor, each a Tensor, a
    numpy array, a number or None. The contributions of all outputs add up
    in ONE run_backward: backward([y1, y2], [g1, g2]) gives the same grads
    as backward of (y1 * g1).sum() + (y2 * g2).sum().

    1. Make both lists: a single Tensor becomes [tensor]; grad_tensors None
       becomes [None] * len(tensors), a single Tensor/array/number becomes
       [it]. If the lengths differ, raise RuntimeError(f"got {n} tensors and
       {m} gradients").
    2. For each i, the gradient (check all i before step 3):
       - given: convert it to a float64 numpy array (a Tensor's .data); if
         its shape differs from tensors[i]'s, raise
         RuntimeError(ERR_SHAPE.format(i=i, grad_shape=..., out_shape=...)).
       - None and tensors[i] requires grad: only a one-element output has a
         natural gradient, ones of its shape (dy/dy = 1). Any other shape
         raises RuntimeError(ERR_IMPLICIT_GRAD): for a vector y, backward
         needs a vector v and computes the vector-Jacobian product v^T J.
         With x = [[1, 2]], Y = [[3, 4], [5, 6]] and L = x @ Y,
         L.backward([[1, 0]]) gives x.grad = [[3, 5]].
    3. If any tensors[i] does not require grad, raise
       RuntimeError(ERR_NO_GRAD.format(i=i)) for the first such i: there is
       no graph to go back through.
    4. run_backward(tensors, grads, retain_graph).
    """
    raise NotImplementedError


class Tensor(TensorBase):
    """A float64 numpy array that can record the operations made with it.

    The given TensorBase (engine_given.py) has the rest: Tensor(data,
    requires_grad=False), .data, .shape, .requires_grad, .grad (None until
    a backward reaches it), .grad_fn (None for a tensor you created, else
    the Node that made it), .retains_grad, .backward() and the operators.
    """

    @property
    def is_leaf(self) -> bool:
        """PyTorch's rule: a tensor is a leaf when it does not require grad,
        or when no recorded operation made it (grad_fn is None).

        In y = (x + w) * (w + 1), w and x are leaves, a, b and y are not. A
        result computed under no_grad(), or from tensors that do not require
        grad, is a leaf too: nothing was recorded. Only leaves that require
        grad keep a gradient in .grad after backward.
        """
        raise NotImplementedError

    # =======================================================================
    # Stage 3: the rules around backward
    # (checks: -k "leaves or accumulation or retain_graph")
    # =======================================================================

    def retain_grad(self) -> None:
        """Ask backward to keep this non-leaf's gradient in .grad.

        Backward computes a gradient for every tensor on the way down but
        keeps it only for leaves; after a.retain_grad(), a keeps it too (in
        the example, a.grad = 2 and b.grad = 3 after b.retain_grad()).
        Set self._retains_grad = True for a non-leaf. On a leaf that requires
        grad, do nothing (PyTorch leaves retains_grad False there: the
        leaf keeps its .grad anyway). On a tensor that does not require
        grad, raise RuntimeError(ERR_RETAIN_NO_GRAD).
        """
        raise NotImplementedError

    def detach(self) -> Tensor:
        """A new tensor with the same data (shared, not copied) and no
        history: requires_grad False, grad_fn None, so it is a leaf and
        nothing computed from it sends gradients back. Tensor._wrap(array)
        makes a tensor around an array without copying it.
        """
        raise NotImplementedError

    def zero_grad(self) -> None:
        """Clear the gradient: set .grad to None (not to zeros).

        Backward adds into .grad (see accumulate_grad), so a second
        backward doubles it unless you clear it in between: in a training
        loop, zero the gradients in every step. None is PyTorch's rule too
        (zero_grad(set_to_none=True) is its default): the next backward
        then starts a new gradient instead of adding into zeros.
        """
        raise NotImplementedError

"""A small autograd engine in numpy: the reference solution.

Same names, signatures and plumbing as exercises/engine.py; only the parts
left to the student are filled in here. It follows PyTorch's semantics and
node names, so its results can be compared with torch.autograd's.
"""

from __future__ import annotations

import itertools
import numbers
from typing import Any, Iterable, Sequence

import numpy as np

# PyTorch's messages, word for word, so that what a student sees here is what
# PyTorch says in the same situation.
ERR_BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the "
    "graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward."
)
ERR_IMPLICIT_GRAD = "grad can be implicitly created only for scalar outputs"
ERR_NO_GRAD = "element {i} of tensors does not require grad and does not have a grad_fn"
ERR_SHAPE = (
    "Mismatch in shape: grad_output[{i}] has a shape of {grad_shape} and "
    "output[{i}] has a shape of {out_shape}."
)
ERR_RETAIN_NO_GRAD = "can't retain_grad on Tensor that has requires_grad=False"


# ---------------------------------------------------------------------------
# Grad mode (given)
# ---------------------------------------------------------------------------

_grad_enabled = True


def is_grad_enabled() -> bool:
    """True unless inside a `with no_grad():` block."""
    return _grad_enabled


class no_grad:
    """Context manager: operations inside it record no graph."""

    def __enter__(self) -> None:
        global _grad_enabled
        self._previous = _grad_enabled
        _grad_enabled = False

    def __exit__(self, *exc: Any) -> None:
        global _grad_enabled
        _grad_enabled = self._previous


# ---------------------------------------------------------------------------
# Nodes
# ---------------------------------------------------------------------------

# Every node gets the next number when it is made, like PyTorch's sequence_nr.
_sequence = itertools.count()


class Node:
    """One recorded operation: the `grad_fn` of the tensor it produced."""

    def __init__(self) -> None:
        self.seq: int = next(_sequence)
        # One entry per operand: the operand if it requires grad, else None.
        self.inputs: tuple[Tensor | None, ...] = ()
        self._saved: tuple[np.ndarray, ...] = ()
        self._freed = False

    def save_for_backward(self, *arrays: np.ndarray) -> None:
        self._saved = arrays

    @property
    def saved_tensors(self) -> tuple[np.ndarray, ...]:
        if self._freed:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        return self._saved

    def free_saved(self) -> None:
        # Only what was saved is dropped; a node that saved nothing never
        # reads saved_tensors, so it can run again without error.
        self._saved = ()
        self._freed = True

    def forward(self, *args: Any) -> np.ndarray:
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        raise NotImplementedError


class AddBackward0(Node):
    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        return grad, grad


class SubBackward0(Node):
    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a - b

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        return grad, -grad


class RsubBackward1(SubBackward0):
    """PyTorch's name for `number - tensor`; the rule is SubBackward0's."""


class MulBackward0(Node):
    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        self.save_for_backward(a, b)
        return a * b

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        a, b = self.saved_tensors
        return grad * b, grad * a


class DivBackward0(Node):
    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        self.save_for_backward(a, b)
        return a / b

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        a, b = self.saved_tensors
        return grad / b, -grad * (a / b) / b


class NegBackward0(Node):
    def forward(self, a: np.ndarray) -> np.ndarray:
        return -a

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        return (-grad,)


class PowBackward0(Node):
    def forward(self, a: np.ndarray, exponent: float) -> np.ndarray:
        self.exponent = exponent
        self.save_for_backward(a)
        return a ** exponent

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        (a,) = self.saved_tensors
        if self.exponent == 0:
            # d(a**0)/da is 0 everywhere, also at a = 0 where 0 * a**-1 is nan.
            return (np.zeros_like(a),)
        return (grad * self.exponent * a ** (self.exponent - 1),)


class MmBackward0(Node):
    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        self.save_for_backward(a, b)
        return a @ b

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        a, b = self.saved_tensors
        # Treat a 1-D a as one row and a 1-D b as one column, so the 2-D
        # rules dL/da = g @ b.T and dL/db = a.T @ g cover every case.
        a2 = a.reshape(1, -1) if a.ndim == 1 else a
        b2 = b.reshape(-1, 1) if b.ndim == 1 else b
        g2 = np.reshape(grad, (a2.shape[0], b2.shape[1]))
        return (g2 @ b2.T).reshape(a.shape), (a2.T @ g2).reshape(b.shape)


class MvBackward0(MmBackward0):
    """PyTorch's name for matrix @ vector; the rule is MmBackward0's."""


class DotBackward0(MmBackward0):
    """PyTorch's name for vector @ vector; the rule is MmBackward0's."""


class SumBackward0(Node):
    def forward(self, a: np.ndarray, axis: tuple[int, ...] | None = None,
                keepdims: bool = False) -> np.ndarray:
        self.shape, self.axis, self.keepdims = a.shape, axis, keepdims
        return a.sum(axis=axis, keepdims=keepdims)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        return (_expand(grad, self.shape, self.axis, self.keepdims),)


class SumBackward1(SumBackward0):
    """PyTorch's name for a sum over given axes; the rule is SumBackward0's."""


class MeanBackward0(Node):
    def forward(self, a: np.ndarray, axis: tuple[int, ...] | None = None,
                keepdims: bool = False) -> np.ndarray:
        self.shape, self.axis, self.keepdims = a.shape, axis, keepdims
        out = a.mean(axis=axis, keepdims=keepdims)
        self.count = a.size // max(np.size(out), 1)
        return out

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        return (_expand(grad, self.shape, self.axis, self.keepdims) / self.count,)


class MeanBackward1(MeanBackward0):
    """PyTorch's name for a mean over given axes; the rule is MeanBackward0's."""


class ExpBackward0(Node):
    def forward(self, a: np.ndarray) -> np.ndarray:
        out = np.exp(a)
        self.save_for_backward(out)
        return out

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        (out,) = self.saved_tensors
        return (grad * out,)


class LogBackward0(Node):
    def forward(self, a: np.ndarray) -> np.ndarray:
        self.save_for_backward(a)
        return np.log(a)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        (a,) = self.saved_tensors
        return (grad / a,)


class TanhBackward0(Node):
    def forward(self, a: np.ndarray) -> np.ndarray:
        out = np.tanh(a)
        self.save_for_backward(out)
        return out

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        (out,) = self.saved_tensors
        return (grad * (1 - out * out),)


class ReluBackward0(Node):
    def forward(self, a: np.ndarray) -> np.ndarray:
        out = np.where(a < 0, 0.0, a)  # keeps -0.0 and nan, as PyTorch does
        self.save_for_backward(out)
        return out

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        (out,) = self.saved_tensors
        # where, not grad * mask: PyTorch passes 0, not nan, where out is 0.
        return (np.where(out > 0, grad, 0.0),)


class SigmoidBackward0(Node):
    def forward(self, a: np.ndarray) -> np.ndarray:
        # exp of -|a| never overflows; each branch is exact on its side.
        e = np.exp(-np.abs(a))
        out = np.where(a >= 0, 1 / (1 + e), e / (1 + e))
        self.save_for_backward(out)
        return out

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        (out,) = self.saved_tensors
        return (grad * (1 - out) * out,)


class ViewBackward0(Node):
    def forward(self, a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        self.shape = a.shape
        return a.reshape(shape)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.reshape(grad, self.shape),)


class TransposeBackward0(Node):
    def forward(self, a: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        self.axes = axes
        return np.transpose(a, axes)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.transpose(grad, np.argsort(self.axes)),)


class PermuteBackward0(TransposeBackward0):
    """PyTorch's name for `.T`; the rule is TransposeBackward0's."""


def _expand(grad: np.ndarray, shape: tuple[int, ...], axis: tuple[int, ...] | None,
            keepdims: bool) -> np.ndarray:
    """Spread a reduction's gradient back over the input's shape."""
    grad = np.asarray(grad)
    if not keepdims:
        axes = range(len(shape)) if axis is None else axis
        grad = np.expand_dims(grad, tuple(ax % len(shape) for ax in axes))
    return np.broadcast_to(grad, shape)


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum grad over the axes numpy broadcast, so it gets `shape` back."""
    grad = np.asarray(grad)
    # Axes broadcasting added in front.
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    # Axes of length 1 that broadcasting stretched.
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


# ---------------------------------------------------------------------------
# Making results (given)
# ---------------------------------------------------------------------------

def _as_tensor(value: Any) -> Tensor:
    """Operands that are not tensors (numbers, arrays) become constants."""
    return value if isinstance(value, Tensor) else Tensor(value)


def _apply(node_type: type[Node], operands: Sequence[Any], **params: Any) -> Tensor:
    """Run one operation and, when grad mode is on and an operand requires
    grad, record it: the result gets a node of type node_type as grad_fn."""
    tensors = [_as_tensor(o) for o in operands]
    node = node_type()
    with np.errstate(all="ignore"):  # nan and inf pass silently, as in PyTorch
        out = node.forward(*(t.data for t in tensors), **params)
    result = Tensor._wrap(out)
    if is_grad_enabled() and any(t.requires_grad for t in tensors):
        node.inputs = tuple(t if t.requires_grad else None for t in tensors)
        result.grad_fn = node
        result.requires_grad = True
    return result


def _axes(axis: int | Iterable[int] | None) -> tuple[int, ...] | None:
    if axis is None:
        return None
    return (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)


# ---------------------------------------------------------------------------
# Tensor
# ---------------------------------------------------------------------------

class Tensor:
    """A float64 numpy array that can record the operations made with it."""

    # numpy arrays on the left of an operator defer to Tensor's reflected ones.
    __array_ufunc__ = None

    def __init__(self, data: Any, requires_grad: bool = False) -> None:
        if isinstance(data, Tensor):
            data = data.data
        # A copy, like torch.tensor: later changes to the caller's array do not
        # reach this tensor.
        self.data: np.ndarray = np.array(data, dtype=np.float64, order="C")
        self.requires_grad: bool = bool(requires_grad)
        self.grad: np.ndarray | None = None
        self.grad_fn: Node | None = None
        self._retains_grad = False

    @classmethod
    def _wrap(cls, array: Any) -> Tensor:
        """A tensor around an operation's result, without copying it."""
        t = cls.__new__(cls)
        t.data = np.asarray(array, dtype=np.float64)
        t.requires_grad, t.grad, t.grad_fn, t._retains_grad = False, None, None, False
        return t

    # -- plain facts --------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    def item(self) -> float:
        return self.data.item()

    def numpy(self) -> np.ndarray:
        return self.data

    def __repr__(self) -> str:
        body = np.array2string(self.data, separator=", ", prefix="tensor(")
        if self.grad_fn is not None:
            return f"tensor({body}, grad_fn=<{type(self.grad_fn).__name__}>)"
        if self.requires_grad:
            return f"tensor({body}, requires_grad=True)"
        return f"tensor({body})"

    # -- leaves and gradients ------------------------------------------------
    @property
    def is_leaf(self) -> bool:
        return not self.requires_grad or self.grad_fn is None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        if not self.requires_grad:
            raise RuntimeError(ERR_RETAIN_NO_GRAD)
        if not self.is_leaf:  # leaves keep .grad anyway; PyTorch ignores them
            self._retains_grad = True

    def detach(self) -> Tensor:
        return Tensor._wrap(self.data)  # shares the data, like PyTorch

    def zero_grad(self) -> None:
        self.grad = None

    def backward(self, gradient: Any = None, retain_graph: bool = False) -> None:
        backward([self], None if gradient is None else [gradient], retain_graph)

    # -- operations ---------------------------------------------------------
    def __add__(self, other: Any) -> Tensor:
        return _apply(AddBackward0, (self, other))

    def __radd__(self, other: Any) -> Tensor:
        return _apply(AddBackward0, (other, self))

    def __sub__(self, other: Any) -> Tensor:
        return _apply(SubBackward0, (self, other))

    def __rsub__(self, other: Any) -> Tensor:
        # PyTorch computes number - tensor with its own op, rsub.
        node = RsubBackward1 if isinstance(other, numbers.Real) else SubBackward0
        return _apply(node, (other, self))

    def __mul__(self, other: Any) -> Tensor:
        return _apply(MulBackward0, (self, other))

    def __rmul__(self, other: Any) -> Tensor:
        return _apply(MulBackward0, (other, self))

    def __truediv__(self, other: Any) -> Tensor:
        return _apply(DivBackward0, (self, other))

    def __rtruediv__(self, other: Any) -> Tensor:
        if isinstance(other, numbers.Real):
            # PyTorch computes number / tensor as tensor.reciprocal() * number,
            # so the result's node is a MulBackward0.
            return self ** -1 * other
        return _apply(DivBackward0, (other, self))

    def __neg__(self) -> Tensor:
        return _apply(NegBackward0, (self,))

    def __pow__(self, exponent: float) -> Tensor:
        if not isinstance(exponent, numbers.Real):
            return NotImplemented
        return _apply(PowBackward0, (self,), exponent=exponent)

    def __matmul__(self, other: Any) -> Tensor:
        return _matmul(self, _as_tensor(other))

    def __rmatmul__(self, other: Any) -> Tensor:
        return _matmul(_as_tensor(other), self)

    def sum(self, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Tensor:
        axis = _axes(axis)
        node = SumBackward0 if axis is None and not keepdims else SumBackward1
        return _apply(node, (self,), axis=axis or None, keepdims=keepdims)

    def mean(self, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Tensor:
        axis = _axes(axis)
        node = MeanBackward0 if axis is None and not keepdims else MeanBackward1
        return _apply(node, (self,), axis=axis or None, keepdims=keepdims)

    def exp(self) -> Tensor:
        return _apply(ExpBackward0, (self,))

    def log(self) -> Tensor:
        return _apply(LogBackward0, (self,))

    def tanh(self) -> Tensor:
        return _apply(TanhBackward0, (self,))

    def relu(self) -> Tensor:
        return _apply(ReluBackward0, (self,))

    def sigmoid(self) -> Tensor:
        return _apply(SigmoidBackward0, (self,))

    def reshape(self, *shape: int | Sequence[int]) -> Tensor:
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = tuple(shape[0])
        return _apply(ViewBackward0, (self,), shape=shape)

    @property
    def T(self) -> Tensor:
        return _apply(PermuteBackward0, (self,), axes=tuple(reversed(range(self.ndim))))

    def transpose(self, dim0: int = 0, dim1: int = 1) -> Tensor:
        axes = list(range(self.ndim))
        axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
        return _apply(TransposeBackward0, (self,), axes=tuple(axes))


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    # PyTorch's names: MmBackward0 for 2-D @ 2-D, MvBackward0 for 2-D @ 1-D,
    # DotBackward0 for 1-D @ 1-D. (1-D @ 2-D becomes three nodes in PyTorch.)
    node = {(2, 2): MmBackward0, (2, 1): MvBackward0, (1, 1): DotBackward0}.get((a.ndim, b.ndim))
    if node is None:
        raise ValueError(f"matmul supports 2-D @ 2-D, 2-D @ 1-D and 1-D @ 1-D, "
                         f"not {a.ndim}-D @ {b.ndim}-D")
    return _apply(node, (a, b))


# ---------------------------------------------------------------------------
# Backward
# ---------------------------------------------------------------------------

def accumulate_grad(t: Tensor, grad: np.ndarray) -> None:
    # A fresh array each time, so no two tensors ever share a .grad array.
    t.grad = np.array(grad, dtype=np.float64) if t.grad is None else t.grad + grad


def run_backward(roots: Sequence[Tensor], grads: Sequence[np.ndarray],
                 retain_graph: bool = False) -> None:
    """Send grads[i] back from roots[i] through the graph, in one traversal."""
    # The gradient arrived so far at each tensor, summed over every path.
    arrived: dict[Tensor, np.ndarray] = {}
    for t, g in zip(roots, grads):
        arrived[t] = g if t not in arrived else arrived[t] + g

    # Every tensor the roots reach, and for each one how many edges lead
    # into it: a leaf takes its gradient once all of them have delivered.
    non_leaves: list[Tensor] = []
    waiting: dict[Tensor, int] = {}
    seen, stack = set(arrived), list(arrived)
    while stack:
        t = stack.pop()
        if t.grad_fn is None:
            continue
        non_leaves.append(t)
        for inp in t.grad_fn.inputs:
            if inp is not None:
                waiting[inp] = waiting.get(inp, 0) + 1
                if inp not in seen:
                    seen.add(inp)
                    stack.append(inp)

    for t in [t for t in arrived if t.grad_fn is None and waiting.get(t, 0) == 0]:
        accumulate_grad(t, arrived.pop(t))

    # Newest node first: a node is made after every node it takes input from,
    # so each node runs after all the nodes that send it gradient. PyTorch
    # uses the same order, which decides what is done before an error.
    with np.errstate(all="ignore"):
        for t in sorted(non_leaves, key=lambda t: t.grad_fn.seq, reverse=True):
            grad = arrived.pop(t)
            if t.retains_grad:
                accumulate_grad(t, grad)
            node = t.grad_fn
            input_grads = node.backward(grad)
            if not retain_graph:
                node.free_saved()
            for inp, g in zip(node.inputs, input_grads):
                if inp is None:
                    continue
                g = unbroadcast(g, inp.shape)
                arrived[inp] = g if inp not in arrived else arrived[inp] + g
                waiting[inp] -= 1
                if inp.grad_fn is None and waiting[inp] == 0:
                    accumulate_grad(inp, arrived.pop(inp))


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None,
             retain_graph: bool = False) -> None:
    """Backward from several outputs at once: their contributions add up."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    elif isinstance(grad_tensors, (Tensor, np.ndarray, numbers.Real)):
        grad_tensors = [grad_tensors]
    else:
        grad_tensors = list(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grad_tensors)} gradients")

    # Check every gradient first, like PyTorch, then which outputs have a graph.
    grads = []
    for i, (out, g) in enumerate(zip(tensors, grad_tensors)):
        if g is not None:
            g = np.array(g.data if isinstance(g, Tensor) else g, dtype=np.float64)
            if g.shape != out.shape:
                raise RuntimeError(ERR_SHAPE.format(i=i, grad_shape=g.shape, out_shape=out.shape))
        elif out.requires_grad:
            if out.data.size != 1:
                raise RuntimeError(ERR_IMPLICIT_GRAD)
            g = np.ones_like(out.data)
        grads.append(g)
    for i, out in enumerate(tensors):
        if not out.requires_grad:
            raise RuntimeError(ERR_NO_GRAD.format(i=i))
    run_backward(tensors, grads, retain_graph)

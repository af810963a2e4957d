"""A small autograd engine in numpy: the reference solution.

The same names, signatures and layout as exercises/engine.py, with the
same given part (engine_given.py, which both import: the grader loads its
copy for every engine it grades); only the parts left to the student are
filled in here. It follows PyTorch's semantics and node names, so its
results can be compared with torch.autograd's.
"""

# The planted mistakes (mistakes/engine/) repeat these imports statement for
# statement, and tests/planted_mistakes.py diffs them against this file.
# ruff: noqa: I001, UP035
from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np

# The given part (engine_given.py); no_grad and is_grad_enabled are imported
# so that `from engine import no_grad` works, as `from torch import no_grad`.
from engine_given import ERR_BACKWARD_TWICE, ERR_IMPLICIT_GRAD, ERR_NO_GRAD, ERR_RETAIN_NO_GRAD, ERR_SHAPE
from engine_given import NodeBase, TensorBase, is_grad_enabled, no_grad  # noqa: F401


# ===========================================================================
# Stage 1: the operations
# ===========================================================================

class Node(NodeBase):
    """One recorded operation: the `grad_fn` of the tensor it produced."""

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


class SumBackward0(Node):
    def forward(self, a: np.ndarray, axis: tuple[int, ...] | None = None,
                keepdims: bool = False) -> np.ndarray:
        self.shape, self.axis, self.keepdims = a.shape, axis, keepdims
        return a.sum(axis=axis, keepdims=keepdims)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        return (_expand(grad, self.shape, self.axis, self.keepdims),)


class MeanBackward0(Node):
    def forward(self, a: np.ndarray, axis: tuple[int, ...] | None = None,
                keepdims: bool = False) -> np.ndarray:
        self.shape, self.axis, self.keepdims = a.shape, axis, keepdims
        out = a.mean(axis=axis, keepdims=keepdims)
        self.count = a.size // max(np.size(out), 1)
        return out

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        return (_expand(grad, self.shape, self.axis, self.keepdims) / self.count,)


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


def _expand(grad: np.ndarray, shape: tuple[int, ...], axis: tuple[int, ...] | None,
            keepdims: bool) -> np.ndarray:
    """Spread a reduction's gradient back over the input's shape."""
    grad = np.asarray(grad)
    if not keepdims:
        axes = range(len(shape)) if axis is None else axis
        grad = np.expand_dims(grad, tuple(ax % len(shape) for ax in axes))
    return np.broadcast_to(grad, shape)


# ===========================================================================
# Stage 2: the backward pass
# ===========================================================================

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


class Tensor(TensorBase):
    """A float64 numpy array that can record the operations made with it."""

    @property
    def is_leaf(self) -> bool:
        return not self.requires_grad or self.grad_fn is None

    # -- Stage 3: the rules around backward ---------------------------------
    def retain_grad(self) -> None:
        if not self.requires_grad:
            raise RuntimeError(ERR_RETAIN_NO_GRAD)
        if not self.is_leaf:  # leaves keep .grad anyway; PyTorch ignores them
            self._retains_grad = True

    def detach(self) -> Tensor:
        return Tensor._wrap(self.data)  # shares the data, like PyTorch

    def zero_grad(self) -> None:
        self.grad = None

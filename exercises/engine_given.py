"""The given part of the engine: read it, do not edit it.

engine.py imports everything here. It holds what is not the exercise: the
Tensor's data, shape, repr and operators, the grad mode and `no_grad()`,
the Node base class, `_apply` (which runs an operation and records its
node) and PyTorch's error texts. The grader always uses its own copy of
this file, so a change made here is not graded (and an engine.py that
relies on one fails there).

How an operation is recorded, `y = a * b` for example:

    a * b                       Tensor.__mul__ (below)
    -> _apply("MulBackward0", a, b)
       node = MulBackward0()    your class, looked up in engine.py by name
       out = node.forward(a.data, b.data)       your forward, on numpy arrays
       y = Tensor around out;  if grad mode is on and a or b requires grad:
       node.inputs = (a or None, b or None), y.grad_fn = node,
       y.requires_grad = True

Backward then runs node.backward(grad) of each node (yours again), in the
order your run_backward chooses.
"""

from __future__ import annotations

import itertools
import numbers
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

# PyTorch's messages, word for word: raise RuntimeError with these texts.
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
# Grad mode
# ---------------------------------------------------------------------------

_grad_enabled = True


def is_grad_enabled() -> bool:
    """True unless inside a `with no_grad():` block."""
    return _grad_enabled


class no_grad:
    """Context manager: operations inside it record no graph.

    `with no_grad(): w2 = w - 0.1 * g` computes w2 without a node, so w2 is a
    leaf with requires_grad=False, exactly like under torch.no_grad().
    """

    def __enter__(self) -> None:
        global _grad_enabled
        self._previous = _grad_enabled
        _grad_enabled = False

    def __exit__(self, *exc: Any) -> None:
        global _grad_enabled
        _grad_enabled = self._previous


# ---------------------------------------------------------------------------
# The Node base class (engine.py's Node adds saved_tensors and free_saved)
# ---------------------------------------------------------------------------

# Every node gets the next number when it is made, like PyTorch's sequence_nr.
_sequence = itertools.count()


class NodeBase:
    """What every node has: `seq`, a number that grows with every node made
    (so a node made later has a larger seq); `inputs`, one entry per
    operand, the operand Tensor if it requires grad, else None (set by
    _apply); and save_for_backward."""

    def __init__(self) -> None:
        self.seq: int = next(_sequence)
        self.inputs: tuple[Any, ...] = ()
        self._saved: tuple[np.ndarray, ...] = ()  # what save_for_backward kept
        self._freed = False                        # set once the saved values are dropped

    def save_for_backward(self, *arrays: np.ndarray) -> None:
        """Keep arrays for backward (read them back with self.saved_tensors)."""
        self._saved = arrays

    def forward(self, *args: Any) -> np.ndarray:
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:
        raise NotImplementedError


# PyTorch gives one rule several node names; each alias is a subclass of the
# node engine.py writes, made here, so engine.py writes each rule once.
ALIASES = {
    "RsubBackward1": "SubBackward0",      # number - tensor
    "MvBackward0": "MmBackward0",         # matrix @ vector
    "DotBackward0": "MmBackward0",        # vector @ vector
    "SumBackward1": "SumBackward0",       # a sum over given axes
    "MeanBackward1": "MeanBackward0",     # a mean over given axes
    "PermuteBackward0": "TransposeBackward0",  # .T
}


def _engine_of(cls: type) -> dict[str, Any]:
    """The names of engine.py, the module that defines the Tensor class
    ``cls``: where _apply finds the node classes. Read from the globals of
    the methods engine.py gives Tensor, so that it works however engine.py
    was loaded (imported, run as a script, a notebook)."""
    names = cls.__dict__.get("_engine_names")
    if names is not None:
        return names
    for klass in cls.__mro__:
        if klass is TensorBase:
            break
        for value in vars(klass).values():
            found = getattr(getattr(value, "fget", value), "__globals__", None)
            if found is not None and "AddBackward0" in found:
                cls._engine_names = found
                return found
    module = sys.modules.get(cls.__module__)
    if module is not None and "AddBackward0" in vars(module):
        return vars(module)
    raise RuntimeError(f"no node classes found beside {cls.__name__}: define Tensor in engine.py")


def _node_type(cls: type, name: str) -> type:
    names = _engine_of(cls)
    if name in names:
        return names[name]
    base = names[ALIASES[name]]
    alias = base.__dict__.get("_alias_" + name)
    if alias is None:
        doc = f"PyTorch's name; {base.__name__}'s rule."
        alias = type(name, (base,), {"__module__": base.__module__, "__doc__": doc})
        setattr(base, "_alias_" + name, alias)
    return alias


# ---------------------------------------------------------------------------
# Making results
# ---------------------------------------------------------------------------

def _apply(cls: type, name: str, operands: Sequence[Any], **params: Any) -> Any:
    """Run one operation and, when grad mode is on and an operand requires
    grad, record it: the result (a ``cls``) gets a node of type ``name`` as
    grad_fn.

    This is the whole forward side of the engine: the result requires grad
    if and only if grad mode is on and some operand requires grad; then it
    is not a leaf, and its node knows which operands to send gradients to.
    Operands that are not tensors (numbers, arrays) become constants.
    """
    tensors = [o if isinstance(o, TensorBase) else cls(o) for o in operands]
    node = _node_type(cls, name)()
    with np.errstate(all="ignore"):  # nan and inf pass silently, as in PyTorch
        out = node.forward(*(t.data for t in tensors), **params)
    result = cls._wrap(out)
    if is_grad_enabled() and any(t.requires_grad for t in tensors):
        node.inputs = tuple(t if t.requires_grad else None for t in tensors)
        result.grad_fn = node
        result.requires_grad = True
    return result


def _axes(axis: int | Iterable[int] | None) -> tuple[int, ...] | None:
    if axis is None:
        return None
    return (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)


def _matmul(cls: type, a: Any, b: Any) -> Any:
    # PyTorch's names: MmBackward0 for 2-D @ 2-D, MvBackward0 for 2-D @ 1-D,
    # DotBackward0 for 1-D @ 1-D. (1-D @ 2-D becomes three nodes in PyTorch.)
    a, b = (t if isinstance(t, TensorBase) else cls(t) for t in (a, b))
    name = {(2, 2): "MmBackward0", (2, 1): "MvBackward0", (1, 1): "DotBackward0"}.get((a.ndim, b.ndim))
    if name is None:
        raise ValueError(f"matmul supports 2-D @ 2-D, 2-D @ 1-D and 1-D @ 1-D, "
                         f"not {a.ndim}-D @ {b.ndim}-D")
    return _apply(cls, name, (a, b))


# ---------------------------------------------------------------------------
# The Tensor base class (engine.py's Tensor adds is_leaf, retain_grad,
# detach and zero_grad)
# ---------------------------------------------------------------------------

class TensorBase:
    """A float64 numpy array that can record the operations made with it.

    Tensor(data, requires_grad=False) copies data into `self.data`. The
    other attributes: `requires_grad`; `grad`, a numpy array or None (None
    until a backward reaches it); `grad_fn`, None for a tensor you created,
    else the Node that made it.
    """

    # numpy arrays on the left of an operator defer to Tensor's reflected ones.
    __array_ufunc__ = None

    def __init__(self, data: Any, requires_grad: bool = False) -> None:
        if isinstance(data, TensorBase):
            data = data.data
        # A copy, like torch.tensor: later changes to the caller's array do not
        # reach this tensor.
        self.data: np.ndarray = np.array(data, dtype=np.float64, order="C")
        self.requires_grad: bool = bool(requires_grad)
        self.grad: np.ndarray | None = None
        self.grad_fn: NodeBase | None = None
        self._retains_grad = False

    @classmethod
    def _wrap(cls, array: Any) -> Any:
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

    @property
    def retains_grad(self) -> bool:
        """True once retain_grad() was called on this non-leaf."""
        return self._retains_grad

    def backward(self, gradient: Any = None, retain_graph: bool = False) -> None:
        """Backward from this tensor: engine.py's module-level backward()."""
        _engine_of(type(self))["backward"]([self], None if gradient is None else [gradient], retain_graph)

    # -- operations: each one records its node with _apply -------------------
    def _op(self, name: str, *operands: Any, **params: Any) -> Any:
        return _apply(type(self), name, operands, **params)

    def __add__(self, other: Any) -> Any:
        return self._op("AddBackward0", self, other)

    def __radd__(self, other: Any) -> Any:
        return self._op("AddBackward0", other, self)

    def __sub__(self, other: Any) -> Any:
        return self._op("SubBackward0", self, other)

    def __rsub__(self, other: Any) -> Any:
        # PyTorch computes number - tensor with its own op, rsub.
        return self._op("RsubBackward1" if isinstance(other, numbers.Real) else "SubBackward0", other, self)

    def __mul__(self, other: Any) -> Any:
        return self._op("MulBackward0", self, other)

    def __rmul__(self, other: Any) -> Any:
        return self._op("MulBackward0", other, self)

    def __truediv__(self, other: Any) -> Any:
        return self._op("DivBackward0", self, other)

    def __rtruediv__(self, other: Any) -> Any:
        if isinstance(other, numbers.Real):
            # PyTorch computes number / tensor as tensor.reciprocal() * number,
            # so the result's node is a MulBackward0.
            return self ** -1 * other
        return self._op("DivBackward0", other, self)

    def __neg__(self) -> Any:
        return self._op("NegBackward0", self)

    def __pow__(self, exponent: float) -> Any:
        if not isinstance(exponent, numbers.Real):
            return NotImplemented
        return self._op("PowBackward0", self, exponent=exponent)

    def __matmul__(self, other: Any) -> Any:
        return _matmul(type(self), self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return _matmul(type(self), other, self)

    def sum(self, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Any:
        axis = _axes(axis)
        name = "SumBackward0" if axis is None and not keepdims else "SumBackward1"
        return self._op(name, self, axis=axis or None, keepdims=keepdims)

    def mean(self, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Any:
        axis = _axes(axis)
        name = "MeanBackward0" if axis is None and not keepdims else "MeanBackward1"
        return self._op(name, self, axis=axis or None, keepdims=keepdims)

    def exp(self) -> Any:
        return self._op("ExpBackward0", self)

    def log(self) -> Any:
        return self._op("LogBackward0", self)

    def tanh(self) -> Any:
        return self._op("TanhBackward0", self)

    def relu(self) -> Any:
        return self._op("ReluBackward0", self)

    def sigmoid(self) -> Any:
        return self._op("SigmoidBackward0", self)

    def reshape(self, *shape: int | Sequence[int]) -> Any:
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = tuple(shape[0])
        return self._op("ViewBackward0", self, shape=shape)

    @property
    def T(self) -> Any:
        return self._op("PermuteBackward0", self, axes=tuple(reversed(range(self.ndim))))

    def transpose(self, dim0: int = 0, dim1: int = 1) -> Any:
        axes = list(range(self.ndim))
        axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
        return self._op("TransposeBackward0", self, axes=tuple(axes))

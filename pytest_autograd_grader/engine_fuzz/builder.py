"""Programs as plain data, and the builder the strategies (``programs.py``)
draw them with; ``render.py`` writes them as runnable Python.

A program is a JSON-able dict::

    {"leaves": [{"shape": [2, 3], "values": [...6 floats...], "requires_grad": True}, ...],
     "steps": [...]}

Values are numbered: the leaves first (0, 1, ...), then the result of each
``op`` step in order. A step is one of

- ``{"kind": "op", "op": NAME, "args": [value ids], ...params, "no_grad": bool}``
  where NAME is a binary op (``add sub mul div matmul``, two value ids), an
  op with a constant (``add_c mul_c rsub_c pow`` with ``"const"``), a unary
  op (``neg exp log tanh relu sigmoid T detach``), a reduction (``sum mean``
  with ``"axis"`` (int or None) and ``"keepdims"``) or ``reshape`` (with
  ``"shape"``);
- ``{"kind": "backward", "value": i, "gradient": None | [flat floats], "retain_graph": bool}``
  (with ``"gradient_shape"`` when a gradient is given);
- ``{"kind": "backward_many", "values": [i, ...], "grad_tensors": [None | [flat floats], ...],
  "grad_shapes": [shape, ...], "retain_graph": bool}`` (the module-level ``backward``);
- ``{"kind": "zero_grad", "value": i}`` and ``{"kind": "retain_grad", "value": i}``.

The strategies keep values away from the singularities of log, div and
fractional powers (those only ever see values known to be positive) and
from relu's kink (no element is ever 0)."""

from __future__ import annotations

import math

from hypothesis import strategies as st

CONST = ("add_c", "mul_c", "rsub_c", "pow")
UNARY = ("neg", "exp", "log", "tanh", "relu", "sigmoid")

# element values: never 0, never 1, shrinking towards 0.5 and -1.5
VALUES = (0.5, -1.5, 2.0, -0.75, 1.25, 0.3, -2.0, 1.5, -0.4, 0.8)
POSITIVE = (0.5, 1.5, 2.0, 0.75, 1.25, 0.6, 1.8)
CONSTS = (2.0, -3.0, 0.5, 1.5)
GRADS = (1.5, -0.5, 2.0, 0.25, -1.25)


def numel(shape) -> int:
    return math.prod(shape) if shape else 1


class Builder:
    """Collects leaves and steps while tracking each value's shape, whether
    it is known positive, whether it requires grad and how often it is used."""

    def __init__(self):
        self.leaves: list[dict] = []
        self.steps: list[dict] = []
        self.shapes: list[tuple] = []
        self.positive: list[bool] = []
        self.grad: list[bool] = []
        self.depth: list[int] = []

    def program(self) -> dict:
        return {"leaves": self.leaves, "steps": self.steps}

    def leaf(self, draw, shape, requires_grad=True, positive=False) -> int:
        pool = POSITIVE if positive else VALUES
        # element j of leaf i shrinks to pool[i + j]: even the simplest
        # tensors hold distinct values, so that no transposition, permutation
        # or mix-up of inputs hides behind equal elements
        start = len(self.leaves)
        values = [pool[(draw(st.integers(0, len(pool) - 1)) + start + j) % len(pool)] for j in range(numel(shape))]
        self.leaves.append({"shape": list(shape), "values": values, "requires_grad": bool(requires_grad)})
        self.shapes.append(tuple(shape))
        self.positive.append(positive)
        self.grad.append(bool(requires_grad))
        self.depth.append(0)
        return len(self.shapes) - 1

    def op(self, name: str, args, no_grad=False, **params) -> int:
        shapes = [self.shapes[a] for a in args]
        shape, positive = shapes[0], False
        if name in ("add", "sub", "mul", "div"):
            shape = broadcast(shapes[0], shapes[1])
            positive = name in ("add", "mul", "div") and all(self.positive[a] for a in args)
        elif name == "matmul":
            shape = (shapes[0][0], shapes[1][1])
        elif name in ("sum", "mean"):
            axis, keep = params.get("axis"), params.get("keepdims", False)
            params = {"axis": axis, "keepdims": bool(keep)}
            if axis is None:
                shape = tuple(1 for _ in shape) if keep else ()
            else:
                shape = tuple(1 if i == axis else n for i, n in enumerate(shape)) if keep else \
                    tuple(n for i, n in enumerate(shape) if i != axis)
            positive = self.positive[args[0]]
        elif name == "reshape":
            shape = tuple(params["shape"])
            params = {"shape": list(shape)}
            positive = self.positive[args[0]]
        elif name == "T":
            shape = tuple(reversed(shape))
            positive = self.positive[args[0]]
        elif name in ("exp", "sigmoid"):
            positive = True
        elif name == "detach":
            positive = self.positive[args[0]]
        elif name in ("mul_c", "add_c", "pow"):
            positive = self.positive[args[0]] and params["const"] > 0
        step = {"kind": "op", "op": name, "args": list(args), **params}
        if no_grad:
            step["no_grad"] = True
        self.steps.append(step)
        self.shapes.append(shape)
        self.positive.append(positive)
        self.grad.append(not no_grad and name != "detach" and any(self.grad[a] for a in args))
        self.depth.append(1 + max(self.depth[a] for a in args))
        return len(self.shapes) - 1

    def scalar(self, value: int) -> int:
        """``value.sum()`` unless it already has one element and no dims."""
        return value if self.shapes[value] == () else self.op("sum", [value])

    def backward(self, value, gradient=None, retain_graph=False):
        step = {"kind": "backward", "value": value, "gradient": gradient, "retain_graph": bool(retain_graph)}
        if gradient is not None:
            step["gradient_shape"] = list(self.shapes[value])
        self.steps.append(step)

    def gradient(self, draw, value):
        return [draw(st.sampled_from(GRADS)) for _ in range(numel(self.shapes[value]))]


def broadcast(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b))

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
from relu's kink: relu only ever sees values known to lie away from 0
(``safe``), since a sum that cancels to about 0 may round to either side
of it, differently in numpy and in torch; or a leaf's exact values, whose
exact zeros (drawn on purpose, never by rounding) lie on the kink.

The builder numbers values as they are built; ``program()`` numbers them
as the interpreter and the renderer do, leaves first, so a leaf made after
an op (a weights tensor, say) is the value the strategy meant."""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol

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
    it is known positive, known away from 0, whether it requires grad and
    how deep it lies. Ids are build ids: in the order values were made."""

    def __init__(self):
        self.leaves: list[dict] = []
        self.steps: list[dict] = []
        self.shapes: list[tuple] = []
        self.positive: list[bool] = []
        self.safe: list[bool] = []
        self.grad: list[bool] = []
        self.depth: list[int] = []
        self.given: list[bool] = []  # a leaf of the program (not an op's result)

    @classmethod
    def of(cls, program: dict) -> Builder:
        """A builder that has built ``program`` (leaves first, as numbered
        there): its shapes and flags, to add steps to or to read."""
        b = cls()
        for leaf in program["leaves"]:
            values = leaf["values"]
            b._value(
                tuple(leaf["shape"]),
                all(v > 0 for v in values),
                all(v != 0 for v in values),
                leaf["requires_grad"],
                0,
                True,
            )
            b.leaves.append(leaf)
        for step in program["steps"]:
            if step["kind"] == "op":
                params = {k: v for k, v in step.items() if k not in ("kind", "op", "args", "no_grad")}
                b.op(step["op"], step["args"], no_grad=step.get("no_grad", False), **params)
            else:
                b.steps.append(step)
        return b

    def program(self) -> dict:
        """The program, its values numbered leaves first."""
        order = [i for i, given in enumerate(self.given) if given] + [
            i for i, given in enumerate(self.given) if not given
        ]
        number = {build: final for final, build in enumerate(order)}
        steps = []
        for step in self.steps:
            step = dict(step)
            for key in ("args", "values"):
                if key in step:
                    step[key] = [number[v] for v in step[key]]
            if "value" in step:
                step["value"] = number[step["value"]]
            steps.append(step)
        return {"leaves": [dict(leaf) for leaf in self.leaves], "steps": steps}

    def _value(self, shape, positive, safe, grad, depth, given) -> int:
        self.shapes.append(tuple(shape))
        self.positive.append(positive)
        self.safe.append(safe)
        self.grad.append(bool(grad))
        self.depth.append(depth)
        self.given.append(given)
        return len(self.shapes) - 1

    def leaf(self, d, shape, requires_grad=True, positive=False, values=None) -> int:
        """A leaf of ``shape``: its elements drawn (never 0), or ``values``."""
        if values is None:
            pool = POSITIVE if positive else VALUES
            # element j of leaf i shrinks to pool[i + j]: even the simplest
            # tensors hold distinct values, so that no transposition, permutation
            # or mix-up of inputs hides behind equal elements
            start = len(self.leaves)
            values = [pool[(d.integer(0, len(pool) - 1) + start + j) % len(pool)] for j in range(numel(shape))]
        self.leaves.append(
            {"shape": list(shape), "values": [float(v) for v in values], "requires_grad": bool(requires_grad)}
        )
        return self._value(shape, positive, all(v != 0 for v in values), requires_grad, 0, True)

    def op(self, name: str, args: Sequence[int], no_grad: bool = False, **params: Any) -> int:
        shapes = [self.shapes[a] for a in args]
        # away from 0: no op whose result may cancel to about 0 (a sum, a
        # difference, log near 1) or that makes zeros (relu)
        safe = (
            name in ("mul", "div", "neg", "mul_c", "tanh", "pow", "T", "reshape", "detach")
            and all(self.safe[a] for a in args)
            or name in ("exp", "sigmoid")
        )
        shape, params = _result_shape(name, shapes, params)
        positive = self._positive(name, args, params)
        if name == "pow":
            safe = safe or params["const"] == 0
        step = {"kind": "op", "op": name, "args": list(args), **params}
        if no_grad:
            step["no_grad"] = True
        self.steps.append(step)
        grad = not no_grad and name != "detach" and any(self.grad[a] for a in args)
        return self._value(shape, positive, safe, grad, 1 + max(self.depth[a] for a in args), False)

    def _positive(self, name: str, args: Sequence[int], params: dict[str, Any]) -> bool:
        """Whether every element of the op's result is positive, as far as
        the op and its arguments promise."""
        if name in ("add", "mul", "div"):
            return all(self.positive[a] for a in args)
        if name in ("sum", "mean", "reshape", "T", "detach"):
            return self.positive[args[0]]
        if name in ("exp", "sigmoid"):
            return True
        if name in ("mul_c", "add_c"):
            return self.positive[args[0]] and params["const"] > 0
        if name == "pow":
            return self.positive[args[0]] or params["const"] == 0
        return False

    def scalar(self, value: int) -> int:
        """``value.sum()`` unless it already has one element and no dims."""
        return value if self.shapes[value] == () else self.op("sum", [value])

    def backward(self, value, gradient=None, retain_graph=False):
        step = {"kind": "backward", "value": value, "gradient": gradient, "retain_graph": bool(retain_graph)}
        if gradient is not None:
            step["gradient_shape"] = list(self.shapes[value])
        self.steps.append(step)

    def gradient(self, d, value):
        return [d.choice(GRADS) for _ in range(numel(self.shapes[value]))]


def broadcast(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b))


# -- drawing ----------------------------------------------------------------------
#
# The programs' generators (programs.py, rules.py) are plain functions of a
# ``Draws``: its four choices are all they draw. The search draws from a
# seeded ``random.Random``; to shrink a disagreement, hypothesis draws (its
# bookkeeping of every choice, what it shrinks, cost 57% of a run).


def _result_shape(
    name: str, shapes: list[tuple[int, ...]], params: dict[str, Any]
) -> tuple[tuple[int, ...], dict[str, Any]]:
    """The shape of an op's result, and its parameters as a step records them."""
    if name in ("add", "sub", "mul", "div"):
        return broadcast(shapes[0], shapes[1]), params
    if name == "matmul":
        return shapes[0][:-1] + shapes[1][1:], params
    if name in ("sum", "mean"):
        return _reduced(shapes[0], params.get("axis"), params.get("keepdims", False))
    if name == "reshape":
        shape = tuple(params["shape"])
        return shape, {"shape": list(shape)}
    if name == "T":
        return tuple(reversed(shapes[0])), params
    return shapes[0], params


def _reduced(shape: tuple[int, ...], axis: int | None, keep: Any) -> tuple[tuple[int, ...], dict[str, Any]]:
    params = {"axis": axis, "keepdims": bool(keep)}
    if axis is None:
        return (tuple(1 for _ in shape) if keep else ()), params
    axis %= len(shape)
    return (
        tuple(1 if i == axis else n for i, n in enumerate(shape))
        if keep
        else tuple(n for i, n in enumerate(shape) if i != axis)
    ), params


class Draws(Protocol):
    def choice(self, options: Sequence) -> Any: ...
    def integer(self, low: int, high: int) -> int: ...
    def boolean(self) -> bool: ...
    def permutation(self, items: Sequence) -> list: ...


class RandomDraws:
    """Draws from a seeded generator: the search's."""

    def __init__(self, seed):
        self.random = random.Random(seed)

    def choice(self, options):
        return options[self.random.randrange(len(options))]

    def integer(self, low, high):
        return self.random.randint(low, high)

    def boolean(self):
        return self.random.random() < 0.5

    def permutation(self, items):
        items = list(items)
        self.random.shuffle(items)
        return items


class HypothesisDraws:
    """Draws through hypothesis's ``draw``, which records each choice to
    shrink it: a choice shrinks towards its first option, a number towards
    its lowest."""

    def __init__(self, draw):
        self.draw = draw

    def choice(self, options):
        try:
            return self.draw(_sampled(tuple(options)))
        except TypeError:  # options that cannot key the cache
            return self.draw(st.sampled_from(tuple(options)))

    def integer(self, low, high):
        return self.draw(st.integers(low, high))

    def boolean(self):
        return self.draw(st.booleans())

    def permutation(self, items):
        return list(self.draw(st.permutations(list(items))))


@functools.lru_cache(maxsize=512)
def _sampled(options: tuple):
    return st.sampled_from(options)


def strategy(generate: Callable[..., Any], **kwargs):
    """The hypothesis strategy of ``generate(draws, **kwargs)``."""

    @st.composite
    def drawn(draw):
        return generate(HypothesisDraws(draw), **kwargs)

    return drawn()


SIZES = (2, 1, 3)  # shrinks to 2: a 1x1 matrix hides a transposition
WIDE = (2, 3)  # a length that a mistake along its axis cannot hide in


def shapes(d: Draws, min_dims=1, max_dims=2):
    return tuple(d.choice(SIZES) for _ in range(d.integer(min_dims, max_dims)))


def unary(d: Draws, b: Builder, x: int, ops) -> int:
    name = d.choice(ops)
    if name == "log" and not b.positive[x]:
        name = "exp"
    if name == "exp" and b.depth[x] >= 2:
        name = "tanh"  # no exp of exp of exp
    if name == "relu" and not b.safe[x]:
        name = "sigmoid"  # relu's kink: a value about 0 rounds to either side of it
    if name in ("mul_c", "add_c", "rsub_c"):
        return b.op(name, [x], const=d.choice(CONSTS))
    if name == "pow":
        powers = (2, 3, 0.5, -1) if b.positive[x] else (2, 3)
        return b.op(name, [x], const=d.choice(powers))
    return b.op(name, [x])


def done(b: Builder, case: str) -> dict:
    return {**b.program(), "case": case}

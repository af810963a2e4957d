"""The small probe programs ``explain_difference`` runs through a student's
engine to tell mistakes apart that show alike: the order nodes run in,
what a backward frees, how .grad accumulates, gradients at a fan-out.
Each is built once, at import, with ``Builder``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .builder import Builder

Program = dict[str, Any]


def _program(build: Callable[[Builder], None]) -> Program:
    b = Builder()
    build(b)
    return b.program()


def leaf_of(b: Builder, values: Any, shape: tuple[int, ...] | None = None, requires_grad: bool = True) -> int:
    return b.leaf(
        None,
        np.shape(values) if shape is None else shape,
        requires_grad=requires_grad,
        values=np.ravel(values).tolist(),
    )


# -- probe programs -----------------------------------------------------------


def _single(op: str, **params: Any) -> Program:
    """One node on a 0-d leaf, backward from it: nothing to order."""
    return _program(lambda b: b.backward(b.op(op, [leaf_of(b, 0.75)], **params)))


def _chain(*ops: tuple[str, dict[str, Any]]) -> Program:
    """Nodes in a row on a 0-d leaf, each taking the previous one's result."""

    def build(b: Builder) -> None:
        x = leaf_of(b, 0.75)
        for op, params in ops:
            x = b.op(op, [x], **params)
        b.backward(x)

    return _program(build)


MUL: tuple[str, dict[str, Any]] = ("mul_c", {"const": 2.0})
ADD: tuple[str, dict[str, Any]] = ("add_c", {"const": 1.5})
NEG: tuple[str, dict[str, Any]] = ("neg", {})
ORDER_SINGLES = [_single(op, **params) for op, params in (MUL, ADD, NEG)]
ORDER_CHAINS = [_chain(MUL, ADD), _chain(ADD, NEG, MUL)]


def _twice(ops: tuple[str, ...], retain: bool = False) -> Program:
    """Backward twice through ``ops`` on two leaves, then summed."""

    def build(b: Builder) -> None:
        x, y = leaf_of(b, [0.5, -1.5]), leaf_of(b, [2.0, 1.25])
        h = b.op(ops[0], [x, y])
        for op in ops[1:]:
            h = b.op(op, [h], const=2.0)
        out = b.op("sum", [h], axis=None)
        b.backward(out, retain_graph=retain)
        b.backward(out)

    return _program(build)


def _after_free(fresh: bool) -> Program:
    """A product freed by a first backward, then either a new forward pass
    (``fresh``: it runs) or a second output whose path meets the freed
    product (it raises)."""

    def build(b: Builder) -> None:
        x, y, w = leaf_of(b, [0.5, -1.5]), leaf_of(b, [2.0, 1.25]), leaf_of(b, [0.3, 0.8])
        m = b.op("mul", [x, y])
        b.backward(b.op("sum", [m], axis=None))
        other = b.op("mul", [x, y]) if fresh else b.op("add", [m, w])
        b.backward(b.op("sum", [other], axis=None))

    return _program(build)


# (the diagnosis, what torch does that the engine got wrong) for each probe
FREEING = {
    "never_freed": _twice(("mul",)),
    "free_per_node": _after_free(False),
    "free_per_node_fresh": _after_free(True),
    "nothing_saved_raises": _twice(("add", "add_c")),
}


def _accumulate(shared: bool) -> Program:
    def build(b: Builder) -> None:
        x, y = leaf_of(b, [0.5, -1.5]), leaf_of(b, [2.0, 1.25])
        h = b.op("add", [x, y]) if shared else b.op("mul_c", [x], const=3.0)
        out = b.op("sum", [b.op("mul_c", [h], const=2.0)], axis=None)
        b.backward(out, retain_graph=True)
        b.backward(out, retain_graph=True)

    return _program(build)


SHARING = [_accumulate(False), _accumulate(True)]


# Fan-out where the order of the nodes cannot matter: a leaf used twice by
# one op, and an intermediate used twice by one op (both gradients arrive
# together). An engine that adds the gradients gets these right whatever
# order it runs its nodes in.
def _fanout(through: bool) -> Program:
    def build(b: Builder) -> None:
        x = leaf_of(b, [0.5, -1.5])
        if through:
            x = b.op("tanh", [x])
        b.backward(b.op("sum", [b.op("mul" if through else "add", [x, x])], axis=None))

    return _program(build)


FANOUT_PROBES = [_fanout(False), _fanout(True)]

"""The generators for the autograd rules an engine's backward follows:
which tensors are leaves and keep .grad, how .grad accumulates, what a
backward frees, backward of non-scalar outputs. Each with named cases, as
``programs.py`` describes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .builder import CONSTS, GRADS, Builder, Draws, done, numel, shapes

# -- leaves and requires_grad ----------------------------------------------------------

LEAF_CASES = ("retain_grad", "no_grad", "detach", "constants", "retain_leaf", "retain_no_grad", "no_grad_root")


def leaf_programs(d: Draws, case=None):
    """Leaves with and without requires_grad, ops inside and outside
    no_grad, detach, retain_grad; backward; which tensors are leaves,
    which require grad, which have a grad_fn, and which get a .grad.
    Every value is used once at most (no fan-out: that is `engine`'s).
    A ``case`` draws one rule of the docstrings for sure."""
    b = Builder()
    shape = shapes(d)
    const = d.choice(CONSTS)
    scale = d.choice(("mul_c", "add_c"))
    if case == "retain_grad":  # a non-leaf that keeps its .grad
        x = b.leaf(d, shape)
        w = b.leaf(d, shape, requires_grad=d.boolean())
        h = b.op(scale, [x], const=const)
        b.steps.append({"kind": "retain_grad", "value": h})
        b.backward(b.scalar(b.op("mul", [h, w])))
    elif case == "no_grad":  # computed under no_grad: a leaf, whatever its inputs
        x, y = b.leaf(d, shape), b.leaf(d, shape, requires_grad=d.boolean())
        n = b.op(scale, [x], const=const, no_grad=True)
        out = b.op("mul", [n, y])
        if b.grad[out]:
            b.backward(b.scalar(out))
    elif case == "detach":  # a new leaf that nothing flows back through
        x, y = b.leaf(d, shape), b.leaf(d, shape)
        detached = b.op("detach", [b.op(scale, [x], const=const)])
        b.backward(b.scalar(b.op("mul", [detached, y])))
    elif case == "constants":  # ops on tensors that need no grad record nothing
        c, k, x = b.leaf(d, shape, requires_grad=False), b.leaf(d, shape, requires_grad=False), b.leaf(d, shape)
        joined = b.op(d.choice(("add", "mul", "sub")), [c, k])
        b.backward(b.scalar(b.op("mul", [joined, x])))
    elif case == "retain_leaf":  # a leaf that requires grad keeps .grad anyway: retain_grad changes nothing
        x = b.leaf(d, shape)
        b.steps.append({"kind": "retain_grad", "value": x})
        b.backward(b.scalar(b.op(scale, [x], const=const)))
    elif case == "retain_no_grad":  # no gradient will ever reach it: PyTorch refuses
        c = b.leaf(d, shape, requires_grad=False)
        h = b.op(scale, [c], const=const, no_grad=d.boolean())
        b.steps.append({"kind": "retain_grad", "value": d.choice((c, h))})
    elif case == "no_grad_root":  # backward from a tensor with no graph behind it raises
        c = b.leaf(d, shape, requires_grad=False)
        b.backward(b.scalar(b.op(scale, [c], const=const)))
    else:
        _random_leaf_program(d, b, shape)
    return done(b, case or "random")


def _random_leaf_program(d: Draws, b: Builder, shape):
    unused = [b.leaf(d, shape, requires_grad=not d.boolean()) for _ in range(d.integer(1, 3))]
    for _ in range(d.integer(1, 4)):
        x = unused.pop(len(unused) - 1 - d.integer(0, len(unused) - 1))
        kind = d.choice(("binary", "const", "detach", "sum"))
        no_grad = d.integer(0, 3) == 3
        if kind == "binary" and unused and b.shapes[unused[-1]] == b.shapes[x]:
            y = unused.pop()
            unused.append(b.op(d.choice(("add", "mul", "sub")), [x, y], no_grad=no_grad))
        elif kind in ("binary", "const"):
            unused.append(b.op("mul_c", [x], const=d.choice(CONSTS), no_grad=no_grad))
        elif kind == "detach":
            unused.append(b.op("detach", [x]))
        else:
            unused.append(b.op("sum", [x], no_grad=no_grad))
    out = len(b.shapes) - 1
    for value in range(out + 1):
        if not b.grad[value] and d.integer(0, 3) == 3:
            # PyTorch refuses to retain a gradient that will never exist
            b.steps.append({"kind": "retain_grad", "value": value})
    if b.grad[out]:
        for value in range(len(b.leaves), out + 1):
            if b.grad[value] and d.integer(0, 2) == 2:
                b.steps.append({"kind": "retain_grad", "value": value})
        b.backward(b.scalar(out))


# -- accumulation ----------------------------------------------------------------


def _plain_forward(d: Draws, b: Builder, leaves) -> int:
    x = leaves[0]
    for leaf in leaves[1:]:
        x = b.op(d.choice(("add", "mul", "sub")), [x, leaf])
    if len(leaves) == 1 or d.boolean():
        x = b.op(d.choice(("mul_c", "add_c")), [x], const=d.choice(CONSTS))
    return x


# a fresh forward pass before each backward (a training loop); one graph
# kept with retain_graph=True; zero_grad between two backward calls; two
# leaves added, which receive the very same gradient array
ACCUMULATION_CASES = ("fresh", "retained", "zero", "shared")


def accumulation_programs(d: Draws, case=None):
    """Backward calls into the same leaves (a fresh forward pass each
    time, or one graph kept with retain_graph=True), sometimes with
    zero_grad of a leaf in between: .grad adds up until cleared."""
    b = Builder()
    shape = shapes(d)
    if case == "shared":
        leaves = [b.leaf(d, shape), b.leaf(d, shape)]
        out = b.scalar(b.op("mul_c", [b.op("add", leaves)], const=d.choice(CONSTS)))
        for _ in range(2):
            b.backward(out, retain_graph=True)
        return done(b, case)
    leaves = [b.leaf(d, shape) for _ in range(d.integer(1, 2))]
    if case in ("fresh", "retained", "zero"):
        out = b.scalar(_plain_forward(d, b, leaves))
        b.backward(out, retain_graph=case == "retained")
        if case == "zero":
            b.steps.append({"kind": "zero_grad", "value": d.choice(leaves)})
        if case != "retained":
            out = b.scalar(_plain_forward(d, b, leaves))
        b.backward(out, retain_graph=case == "retained")
        return done(b, case)
    out = b.scalar(_plain_forward(d, b, leaves))
    for i in range(3):
        # the simplest program adds up two backward calls, then zeroes
        if i and d.boolean() == (i == 1):
            b.steps.append({"kind": "zero_grad", "value": d.choice(leaves)})
        if i and d.boolean():
            out = b.scalar(_plain_forward(d, b, leaves))
        b.backward(out, retain_graph=True)
    return done(b, "random")


# -- retain_graph ----------------------------------------------------------------

NOTHING_SAVED = ("add", "sub", "neg", "add_c", "rsub_c", "sum", "mean", "reshape", "T")
# a second backward through a freed product raises; retain_graph=True keeps
# it; a graph of nodes that saved nothing runs backward twice; a new forward
# pass after a free is a new graph; a second root through a freed node
# raises halfway, after the leaves it completed got their gradients
RETAIN_GRAPH_CASES = ("raise", "retained", "nothing_saved", "fresh", "partial")


def retain_graph_programs(d: Draws, case=None):
    """Backward twice (or three times) through one graph that saved values
    (a product), with and without retain_graph: PyTorch frees the saved
    values after a backward without it, and a later backward raises."""
    b = Builder()
    shape = shapes(d)
    if case == "nothing_saved":
        x, y = b.leaf(d, shape), b.leaf(d, shape)
        h = b.op(d.choice(("add", "sub")), [x, y])
        h = b.op(d.choice(("neg", "add_c", "rsub_c")), [h], const=d.choice(CONSTS))
        out = b.op(d.choice(("sum", "mean")), [h], axis=None)
        b.backward(out)
        for leaf in (x, y):  # what the second backward adds up is accumulation's
            b.steps.append({"kind": "zero_grad", "value": leaf})
        b.backward(out)
    elif case == "partial":
        # v * x is freed by the first backward; the second root reaches w
        # (one edge, complete before the freed node raises) and v (two
        # edges, one of them through the freed node): w gets its gradient,
        # v none. v is cleared first, so that only this backward's part shows.
        x, v, w = b.leaf(d, shape), b.leaf(d, shape), b.leaf(d, shape)
        m = b.op("mul", [v, x])
        b.backward(b.scalar(m))
        b.steps.append({"kind": "zero_grad", "value": v})
        r = b.op(d.choice(("add", "sub")), [b.op(d.choice(("add", "sub")), [m, w]), v])
        b.backward(b.scalar(r))
    elif case == "fresh":
        x, y = b.leaf(d, shape), b.leaf(d, shape)
        b.backward(b.scalar(b.op("mul", [x, y])))
        b.backward(b.scalar(b.op("mul", [x, y])))
    else:
        x, y = b.leaf(d, shape), b.leaf(d, shape)
        out = b.scalar(b.op("mul", [x, y]))
        if case in ("raise", "retained"):
            flags = [case == "retained", False]
        else:
            flags = [d.boolean() for _ in range(d.integer(2, 3))]
        for flag in flags:
            b.backward(out, retain_graph=flag)
    return done(b, case or "random")


# -- vector backward -------------------------------------------------------------

# beside a gradient given, none for a non-scalar (an error), several outputs
# and a gradient of the wrong shape: a one-element output that is not 0-d
# (an implicit gradient works); one output given twice, its gradients sent
# back in one traversal without retain_graph; a leaf among the outputs
VECTOR_CASES = ("gradient", "implicit", "many", "wrong_shape", "one_element", "many_shared", "leaf_root")


def vector_backward_programs(d: Draws, case: str | None = None) -> dict[str, Any]:
    """Backward from non-scalar outputs: with a ``gradient`` (a vector-
    Jacobian product), without one (an error unless the output has one
    element), or several outputs at once through the module-level
    ``backward(tensors, grad_tensors)``."""
    b = Builder()
    kind = case or d.choice(("gradient", "implicit", "many", "wrong_shape"))
    shape = _vector_shape(d, kind)
    if kind in ("many_shared", "leaf_root"):
        _shared_outputs(d, b, kind, shape)
        return done(b, kind)
    outputs = []
    for _ in range(2 if kind == "many" else 1):
        leaves = [b.leaf(d, shape) for _ in range(d.integer(1, 2))]
        outputs.append(_plain_forward(d, b, leaves))
    _VECTOR_BACKWARD.get(kind, _given_gradient)(d, b, outputs, shape)
    return done(b, kind)


def _vector_shape(d: Draws, kind: str) -> tuple[int, ...]:
    shape = shapes(d)
    if kind in ("implicit", "wrong_shape") and numel(shape) == 1:
        shape = (2,)
    if kind == "one_element":
        shape = d.choice(((1,), (1, 1)))
    return shape


def _shared_outputs(d: Draws, b: Builder, kind: str, shape: tuple[int, ...]) -> None:
    """One output given twice, or an output beside a leaf, in one backward call."""
    x, y = b.leaf(d, shape), b.leaf(d, shape)
    out = b.op("mul_c", [b.op("mul", [x, y])], const=d.choice(CONSTS))
    if kind == "many_shared":
        # one output given twice: both gradients go back in one traversal,
        # through a product that a first traversal of its own would free
        outputs = [out, out]
    else:
        outputs = d.permutation([out, b.leaf(d, shape)])
    grads = [b.gradient(d, o) for o in outputs]
    b.steps.append(
        {
            "kind": "backward_many",
            "values": list(outputs),
            "grad_tensors": grads,
            "retain_graph": False,
            "grad_shapes": [list(b.shapes[o]) for o in outputs],
        }
    )


# The backward calls of each kind, from its outputs.


def _many_outputs(d: Draws, b: Builder, outputs: list[int], shape: tuple[int, ...]) -> None:
    if d.boolean():
        outputs[1] = b.op("sum", [outputs[1]])
    grads = [None if b.shapes[o] == () and d.boolean() else b.gradient(d, o) for o in outputs]
    b.steps.append(
        {
            "kind": "backward_many",
            "values": outputs,
            "grad_tensors": grads,
            "retain_graph": True,
            "grad_shapes": [list(b.shapes[o]) for o in outputs],
        }
    )


def _wrong_shape(d: Draws, b: Builder, outputs: list[int], shape: tuple[int, ...]) -> None:
    # a gradient that is not the output's shape (one more element, or
    # the same elements laid out otherwise): PyTorch refuses it
    wrong = d.choice([(numel(shape) + 1,), (1, numel(shape)) if len(shape) == 1 else shape[::-1]])
    if tuple(wrong) == tuple(shape):
        wrong = (numel(shape) + 1,)
    gradient = [d.choice(GRADS) for _ in range(numel(wrong))]
    b.steps.append(
        {
            "kind": "backward",
            "value": outputs[0],
            "gradient": gradient,
            "retain_graph": True,
            "gradient_shape": list(wrong),
        }
    )
    b.backward(outputs[0], gradient=b.gradient(d, outputs[0]), retain_graph=True)


def _implicit(d: Draws, b: Builder, outputs: list[int], shape: tuple[int, ...]) -> None:
    b.backward(outputs[0], retain_graph=True)
    b.backward(outputs[0], gradient=b.gradient(d, outputs[0]), retain_graph=True)


def _one_element(d: Draws, b: Builder, outputs: list[int], shape: tuple[int, ...]) -> None:
    b.backward(outputs[0])


def _given_gradient(d: Draws, b: Builder, outputs: list[int], shape: tuple[int, ...]) -> None:
    b.backward(outputs[0], gradient=b.gradient(d, outputs[0]), retain_graph=True)


_VECTOR_BACKWARD: dict[str, Callable[[Draws, Builder, list[int], tuple[int, ...]], None]] = {
    "many": _many_outputs,
    "wrong_shape": _wrong_shape,
    "implicit": _implicit,
    "one_element": _one_element,
}

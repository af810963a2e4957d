"""The generators of the engine's programs, one per kind of check, each
with named cases: here the engine concept's (each op,
broadcasting, the traversal), in ``rules.py`` the autograd rules' (leaves,
accumulation, freeing, vector backward). Every batch of a kind holds one
program of each of its ``CASES`` (the behaviours the engine's docstrings
specify; ``behaviours.py`` checks that each is drawn) and random programs
of the kind beside them. The programs' format and their builder are
``builder.py``'s."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .builder import CONST, SIZES, UNARY, WIDE, Builder, Draws, done, numel, shapes, unary
from .rules import (
    ACCUMULATION_CASES,
    LEAF_CASES,
    RETAIN_GRAPH_CASES,
    VECTOR_CASES,
    accumulation_programs,
    leaf_programs,
    retain_graph_programs,
    vector_backward_programs,
)

Shape = tuple[int, ...]

# -- ops -----------------------------------------------------------------------

OPS = (
    "add",
    "sub",
    "mul",
    "div",
    "neg",
    "exp",
    "log",
    "tanh",
    "relu",
    "sigmoid",
    "add_c",
    "mul_c",
    "rsub_c",
    "pow",
    "sum",
    "mean",
    "reshape",
    "T",
    "matmul",
)
# beside one program per op: reductions over one axis (the last one, named
# by a negative or a positive index; keepdims; the middle one of a 3-D
# tensor), products with 1-D operands, x ** 0 at x = 0, where
# p * x ** (p - 1) is nan, x ** 3, where a power not lowered (p * x) is
# wrong (the pow case may draw only p = 2, where it is right), and relu at
# an exact 0, where its slope is 0
OP_CASES = OPS + (
    "sum_axis",
    "mean_axis",
    "sum_keepdims",
    "mean_keepdims",
    "sum_middle",
    "mv",
    "dot",
    "pow0",
    "pow3",
    "relu0",
)


def op_programs(d: Draws, case: str | None = None) -> dict[str, Any]:
    """One op (sometimes two) on leaves of one shape, weighted, summed and
    backpropagated: every op's local derivative, and every node's name.
    ``case`` fixes the first op (a sweep draws one program per case)."""
    b = Builder()
    name = case or d.choice(OPS)
    shape = shapes(d)
    x = _FIRST_OP.get(name, _reshape)(d, b, name, shape)
    if b.shapes[x] != ():
        # weights, so that a gradient spread or routed wrongly shows in the values
        x = b.op("mul", [x, b.leaf(d, b.shapes[x], requires_grad=False)])
    if d.boolean():
        x = unary(d, b, x, UNARY + CONST)
    b.backward(b.scalar(x))
    return done(b, name)


# The first op of each case, on new leaves; each returns the op's value id.
# (The draws each makes are the programs' seeds: their order is kept.)


def _product(d: Draws, b: Builder, name: str, shape: Shape) -> int:
    m, k, n = d.choice(SIZES), d.choice(WIDE), d.choice(SIZES)
    left = b.leaf(d, (k,) if name == "dot" else (m, k))
    return b.op("matmul", [left, b.leaf(d, (k, n) if name == "matmul" else (k,))])


def _binary(d: Draws, b: Builder, name: str, shape: Shape) -> int:
    left = b.leaf(d, shape)
    return b.op(name, [left, b.leaf(d, shape, positive=name == "div")])


def _pow0(d: Draws, b: Builder, name: str, shape: Shape) -> int:
    values = [0.0] + [d.choice((0.5, -1.5, 2.0)) for _ in range(numel(shape) - 1)]
    return b.op("pow", [b.leaf(d, shape, values=values)], const=0)


def _pow3(d: Draws, b: Builder, name: str, shape: Shape) -> int:
    return b.op("pow", [b.leaf(d, shape)], const=3)


def _relu0(d: Draws, b: Builder, name: str, shape: Shape) -> int:
    # exact zeros, straight from a leaf: a value that only rounds to about
    # 0 may land on either side of the kink, an exact one lands on it
    values = [0.0] + [d.choice((0.5, -1.5, 0.0, 2.0)) for _ in range(numel(shape) - 1)]
    return b.op("relu", [b.leaf(d, shape, values=values)])


def _elementwise(d: Draws, b: Builder, name: str, shape: Shape) -> int:
    return unary(d, b, b.leaf(d, shape, positive=name == "log" or (name == "pow" and d.boolean())), (name,))


def _full_reduction(d: Draws, b: Builder, name: str, shape: Shape) -> int:
    return b.op(name, [b.leaf(d, shape)], axis=None, keepdims=d.boolean())


def _last_axis(d: Draws, b: Builder, name: str, shape: Shape) -> int:
    # the last axis, without keepdims: the axis a forgotten expand_dims misplaces
    return b.op(name[:-5], [b.leaf(d, (d.choice(WIDE), d.choice(WIDE)))], axis=-1 if name == "sum_axis" else 1)


def _middle_axis(d: Draws, b: Builder, name: str, shape: Shape) -> int:
    # without keepdims: the axis put back in the middle, not at the end as a 2-D row sum's would be
    return b.op(d.choice(("sum", "mean")), [b.leaf(d, tuple(d.choice(WIDE) for _ in range(3)))], axis=d.choice((1, -2)))


def _keepdims(d: Draws, b: Builder, name: str, shape: Shape) -> int:
    return b.op(name[:-9], [b.leaf(d, (d.choice(WIDE), d.choice(WIDE)))], axis=d.choice((0, 1, -1, -2)), keepdims=True)


def _transpose(d: Draws, b: Builder, name: str, shape: Shape) -> int:
    return b.op("T", [b.leaf(d, shapes(d, 2, 2))])


def _reshape(d: Draws, b: Builder, name: str, shape: Shape) -> int:
    return b.op("reshape", [b.leaf(d, shape)], shape=d.choice(_reshapes(shape)))


_FIRST_OP: dict[str, Callable[[Draws, Builder, str, Shape], int]] = {
    **dict.fromkeys(("matmul", "mv", "dot"), _product),
    **dict.fromkeys(("add", "sub", "mul", "div"), _binary),
    "pow0": _pow0,
    "pow3": _pow3,
    "relu0": _relu0,
    **dict.fromkeys(UNARY + CONST, _elementwise),
    "sum": _full_reduction,
    "mean": _full_reduction,
    "sum_axis": _last_axis,
    "mean_axis": _last_axis,
    "sum_middle": _middle_axis,
    "sum_keepdims": _keepdims,
    "mean_keepdims": _keepdims,
    "T": _transpose,
    "reshape": _reshape,
}


def _reshapes(shape: Shape) -> list[Shape]:
    n = numel(shape)
    return [(n,), (1, n), (n, 1)] + ([(2, n // 2)] if n % 2 == 0 and n > 2 else [])


# -- broadcasting ----------------------------------------------------------------

BROADCAST_OPS = ("add", "sub", "mul", "div")
# the ways a shape broadcasts: axes added in front ((3,) against (2, 3)),
# an axis of length 1 stretched ((2, 1) against (2, 3)), a 0-d scalar, and
# both operands stretched at once ((2, 1) against (1, 3)); then, in 3-D,
# several axes of one operand: a middle one alone, the first and the last,
# the leading two, the trailing two, and an axis added in front beside a
# stretched one ((3, 1) against (2, 3, 4)). Each stretched axis a mistaken
# unbroadcast may skip (only the first, only axes 0 and -1, one whose index
# shifted after a sum without keepdims) is one of these.
STRETCHED = {"middle": (1,), "outer": (0, 2), "front": (0, 1), "back": (1, 2), "added": (2,)}
BROADCAST_CASES = ("leading", "ones", "scalar", "both") + tuple(STRETCHED)


def broadcast_programs(d: Draws, case: str | None = None, ops: Sequence[str] = BROADCAST_OPS) -> dict[str, Any]:
    """A binary op (or two) between a tensor and one whose shape
    broadcasts to it: each input's gradient must be summed back to its
    shape. ``ops``: the binary ops to use (the ones the student's engine
    gets right without broadcasting, so that a wrong derivative is not also
    told as a broadcasting mistake)."""
    b = Builder()
    form = case or "random"
    name = d.choice(ops)
    big: Shape
    small: Shape
    if form == "leading":
        big = (d.choice(WIDE), d.choice(WIDE))
        small = big[1:]
    elif form == "ones":
        big = (d.choice(WIDE), d.choice(WIDE))
        small = d.choice(((big[0], 1), (1, big[1])))
    elif form == "scalar":
        big, small = shapes(d), ()
    elif form == "both":
        big, small = (d.choice(WIDE), 1), (1, d.choice(WIDE))
    elif form in STRETCHED:
        big = tuple(d.choice(WIDE) for _ in range(3))
        small = tuple(1 if i in STRETCHED[form] else n for i, n in enumerate(big))
        small = small[1:] if form == "added" else small
    else:
        big = shapes(d, 1, 3)
        small = _smaller(d, big)
    first = b.leaf(d, big)
    other = b.leaf(d, small, positive=name == "div")
    args = [first, other] if name == "div" or d.boolean() else [other, first]
    x = b.op(name, args)
    if form == "random" and d.boolean():
        x = b.op(
            d.choice([o for o in ops if o != "div"] or ops), [x, b.leaf(d, _smaller(d, b.shapes[x]), positive=True)]
        )
    x = b.op("mul", [x, b.leaf(d, b.shapes[x])])  # weights: a wrong sum shows in the values
    b.backward(b.scalar(x))
    return done(b, form)


def _smaller(d: Draws, shape):
    """A shape that broadcasts to ``shape`` and differs from it: axes
    dropped in front, then any of the rest set to length 1."""
    kept = shape[d.integer(0, len(shape)) :] if shape else ()
    ones = d.integer(0, (1 << len(kept)) - 1) if kept else 0
    small = tuple(1 if ones >> i & 1 else n for i, n in enumerate(kept))
    return small if small != tuple(shape) else ()


def broadcast_sweep(d: Draws, ops=BROADCAST_OPS):
    """One program for every way of broadcasting, each op in turn among
    them, so that an engine that undoes broadcasting in some ops' backward
    and not in others' is caught too."""
    order = d.permutation(ops)
    return [broadcast_programs(d, case=form, ops=(order[i % len(order)],)) for i, form in enumerate(BROADCAST_CASES)]


# -- traversal -------------------------------------------------------------------

TRAVERSAL_OPS = ("tanh", "mul_c", "sigmoid", "neg")
TRAVERSAL_JOINS = ("add", "mul", "sub")  # the ops that join two paths
# a leaf used by two ops along paths of different lengths; an intermediate
# used twice (a diamond); random graphs with reused values
TRAVERSAL_CASES = ("fanout", "diamond", "random", "random")


def traversal_programs(d: Draws, case=None, ops=TRAVERSAL_OPS, joins=TRAVERSAL_JOINS):
    """Elementwise ops whose arguments are earlier values: fan-out of a
    leaf, diamonds (an intermediate used by two later ops) and random
    graphs with reused intermediates. ``ops`` and ``joins``: the unary and
    binary ops to build them from (the ones the student's engine gets
    right, so that a wrong derivative is not also told as a wrong traversal)."""
    b = Builder()
    structure = case or d.choice(("random", "diamond", "fanout"))
    shape = shapes(d)

    def step(x):  # a unary op, or a value joined with itself where no unary op can be trusted
        return unary(d, b, x, ops) if ops else b.op(d.choice(joins), [x, x])

    if structure == "fanout":
        x = b.leaf(d, shape)
        b.op(d.choice(joins), [step(x), x])
    elif structure == "diamond":
        x = b.leaf(d, shape)
        h = step(x)
        p = step(h)
        q = b.op(d.choice(joins), [h, p]) if d.boolean() else step(h)
        b.op(d.choice(joins), [p, q])
    else:
        for _ in range(d.integer(1, 3)):
            b.leaf(d, shape)
        for _ in range(d.integer(1, 5)):
            count = len(b.shapes)
            if d.boolean() or not ops:
                i, j = d.integer(0, count - 1), d.integer(0, count - 1)
                b.op(d.choice(joins), [count - 1 - i, count - 1 - j])
            else:
                step(count - 1 - d.integer(0, count - 1))
    b.backward(b.scalar(len(b.shapes) - 1))
    return done(b, structure)


def op_probe(d: Draws) -> list[dict]:
    """One program per op a traversal or a broadcast is built from: which
    of them the student's engine gets right."""
    cases = TRAVERSAL_OPS + tuple(dict.fromkeys(TRAVERSAL_JOINS + BROADCAST_OPS))
    return [op_programs(d, case=op) for op in cases]


# the generator of each kind of check: generate(draws, case=None, **options) -> program
GENERATORS = {
    "ops": op_programs,
    "broadcasting": broadcast_programs,
    "traversal": traversal_programs,
    "leaf": leaf_programs,
    "accumulation": accumulation_programs,
    "retain_graph": retain_graph_programs,
    "vector_backward": vector_backward_programs,
}
# the cases every batch of a kind holds, one program each
CASES = {
    "ops": OP_CASES,
    "broadcasting": BROADCAST_CASES,
    "traversal": TRAVERSAL_CASES,
    "leaf": LEAF_CASES,
    "accumulation": ACCUMULATION_CASES,
    "retain_graph": RETAIN_GRAPH_CASES,
    "vector_backward": VECTOR_CASES,
}
# a batch that covers the cases of a kind otherwise than one program per case
SWEEPS = {"broadcasting": broadcast_sweep}

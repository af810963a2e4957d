"""The hypothesis strategies that draw the engine's programs, one per
kind of check, each with named cases: here the engine concept's (each op,
broadcasting, the traversal), in ``rules.py`` the autograd rules' (leaves,
accumulation, freeing, vector backward). Every batch of a kind holds one
program of each of its ``CASES`` (the behaviours the engine's docstrings
specify; ``behaviours.py`` checks that each is drawn) and random programs
of the kind beside them. The programs' format and their builder are
``builder.py``'s."""

from __future__ import annotations

from hypothesis import strategies as st

from .builder import CONST, UNARY, WIDE, Builder, SIZES, done, numel, shapes, unary
from .rules import (ACCUMULATION_CASES, LEAF_CASES, RETAIN_GRAPH_CASES, VECTOR_CASES, accumulation_programs,
                    leaf_programs, retain_graph_programs, vector_backward_programs)


# -- ops -----------------------------------------------------------------------

OPS = ("add", "sub", "mul", "div", "neg", "exp", "log", "tanh", "relu", "sigmoid", "add_c", "mul_c", "rsub_c",
       "pow", "sum", "mean", "reshape", "T", "matmul")
# beside one program per op: reductions over one axis (the last one, named
# by a negative or a positive index; keepdims), products with 1-D operands,
# and x ** 0 at x = 0, where p * x ** (p - 1) is nan
OP_CASES = OPS + ("sum_axis", "mean_axis", "sum_keepdims", "mean_keepdims", "mv", "dot", "pow0")


@st.composite
def op_programs(draw, case=None):
    """One op (sometimes two) on leaves of one shape, weighted, summed and
    backpropagated: every op's local derivative, and every node's name.
    ``case`` fixes the first op (a sweep draws one program per case)."""
    b = Builder()
    name = case or draw(st.sampled_from(OPS))
    shape = draw(shapes())
    if name in ("matmul", "mv", "dot"):
        m, k, n = draw(SIZES), draw(WIDE), draw(SIZES)
        left = b.leaf(draw, (k,) if name == "dot" else (m, k))
        x = b.op("matmul", [left, b.leaf(draw, (k, n) if name == "matmul" else (k,))])
    elif name in ("add", "sub", "mul", "div"):
        left = b.leaf(draw, shape)
        x = b.op(name, [left, b.leaf(draw, shape, positive=name == "div")])
    elif name == "pow0":
        values = [0.0] + [draw(st.sampled_from((0.5, -1.5, 2.0))) for _ in range(numel(shape) - 1)]
        x = b.op("pow", [b.leaf(draw, shape, values=values)], const=0)
    elif name in UNARY or name in CONST:
        x = unary(draw, b, b.leaf(draw, shape, positive=name == "log" or (name == "pow" and draw(st.booleans()))),
                   (name,))
    elif name in ("sum", "mean"):
        x = b.op(name, [b.leaf(draw, shape)], axis=None, keepdims=draw(st.booleans()))
    elif name.endswith("_axis"):
        # the last axis, without keepdims: the axis a forgotten expand_dims misplaces
        x = b.op(name[:-5], [b.leaf(draw, (draw(WIDE), draw(WIDE)))], axis=-1 if name == "sum_axis" else 1)
    elif name.endswith("_keepdims"):
        x = b.op(name[:-9], [b.leaf(draw, (draw(WIDE), draw(WIDE)))], axis=draw(st.sampled_from((0, 1, -1, -2))),
                 keepdims=True)
    elif name == "T":
        x = b.op("T", [b.leaf(draw, draw(shapes(2, 2)))])
    else:
        x = b.op("reshape", [b.leaf(draw, shape)], shape=draw(st.sampled_from(_reshapes(shape))))
    if b.shapes[x] != ():
        # weights, so that a gradient spread or routed wrongly shows in the values
        x = b.op("mul", [x, b.leaf(draw, b.shapes[x], requires_grad=False)])
    if draw(st.booleans()):
        x = unary(draw, b, x, UNARY + CONST)
    b.backward(b.scalar(x))
    return done(b, name)


def _reshapes(shape):
    n = numel(shape)
    return [(n,), (1, n), (n, 1)] + ([(2, n // 2)] if n % 2 == 0 and n > 2 else [])


# -- broadcasting ----------------------------------------------------------------

BROADCAST_OPS = ("add", "sub", "mul", "div")
# the ways a shape broadcasts: axes added in front ((3,) against (2, 3)),
# an axis of length 1 stretched ((2, 1) against (2, 3)), a 0-d scalar, and
# both operands stretched at once ((2, 1) against (1, 3))
BROADCAST_CASES = ("leading", "ones", "scalar", "both")


@st.composite
def broadcast_programs(draw, case=None, ops=BROADCAST_OPS):
    """A binary op (or two) between a tensor and one whose shape
    broadcasts to it: each input's gradient must be summed back to its
    shape. ``ops``: the binary ops to use (the ones the student's engine
    gets right without broadcasting, so that a wrong derivative is not also
    told as a broadcasting mistake)."""
    b = Builder()
    form = case or "random"
    name = draw(st.sampled_from(ops))
    if form == "leading":
        big, small = (draw(WIDE), draw(WIDE)), None
        small = big[1:]
    elif form == "ones":
        big = (draw(WIDE), draw(WIDE))
        small = draw(st.sampled_from(((big[0], 1), (1, big[1]))))
    elif form == "scalar":
        big, small = draw(shapes()), ()
    elif form == "both":
        big, small = (draw(WIDE), 1), (1, draw(WIDE))
    else:
        big = draw(shapes(2, 2)) if draw(st.booleans()) else draw(shapes(1, 1))
        small = _smaller(draw, big)
    first = b.leaf(draw, big)
    other = b.leaf(draw, small, positive=name == "div")
    args = [first, other] if name == "div" or draw(st.booleans()) else [other, first]
    x = b.op(name, args)
    if form == "random" and draw(st.booleans()):
        x = b.op(draw(st.sampled_from([o for o in ops if o != "div"] or ops)),
                 [x, b.leaf(draw, _smaller(draw, b.shapes[x]), positive=True)])
    x = b.op("mul", [x, b.leaf(draw, b.shapes[x])])  # weights: a wrong sum shows in the values
    b.backward(b.scalar(x))
    return done(b, form)


def _smaller(draw, shape):
    """A shape that broadcasts to ``shape`` and differs from it."""
    options = [()] + [tuple(shape[i:]) for i in range(1, len(shape))]
    options += [tuple(1 if i == j else n for i, n in enumerate(shape)) for j in range(len(shape)) if shape[j] > 1]
    options = [o for o in options if tuple(o) != tuple(shape)] or [()]
    return draw(st.sampled_from(options))


@st.composite
def broadcast_sweep(draw, ops=BROADCAST_OPS):
    """One program for every way of broadcasting, each op in turn among
    them, so that an engine that undoes broadcasting in some ops' backward
    and not in others' is caught too."""
    order = draw(st.permutations(ops))
    return [draw(broadcast_programs(case=form, ops=(order[i % len(order)],)))
            for i, form in enumerate(BROADCAST_CASES)]


# -- traversal -------------------------------------------------------------------

TRAVERSAL_OPS = ("tanh", "mul_c", "sigmoid", "neg")
TRAVERSAL_JOINS = ("add", "mul", "sub")  # the ops that join two paths
# a leaf used by two ops along paths of different lengths; an intermediate
# used twice (a diamond); random graphs with reused values
TRAVERSAL_CASES = ("fanout", "diamond", "random", "random")


@st.composite
def traversal_programs(draw, case=None, ops=TRAVERSAL_OPS, joins=TRAVERSAL_JOINS):
    """Elementwise ops whose arguments are earlier values: fan-out of a
    leaf, diamonds (an intermediate used by two later ops) and random
    graphs with reused intermediates. ``ops`` and ``joins``: the unary and
    binary ops to build them from (the ones the student's engine gets
    right, so that a wrong derivative is not also told as a wrong traversal)."""
    b = Builder()
    structure = case or draw(st.sampled_from(("random", "diamond", "fanout")))
    shape = draw(shapes())

    def step(x):  # a unary op, or a value joined with itself where no unary op can be trusted
        return unary(draw, b, x, ops) if ops else b.op(draw(st.sampled_from(joins)), [x, x])

    if structure == "fanout":
        x = b.leaf(draw, shape)
        b.op(draw(st.sampled_from(joins)), [step(x), x])
    elif structure == "diamond":
        x = b.leaf(draw, shape)
        h = step(x)
        p = step(h)
        q = b.op(draw(st.sampled_from(joins)), [h, p]) if draw(st.booleans()) else step(h)
        b.op(draw(st.sampled_from(joins)), [p, q])
    else:
        for _ in range(draw(st.integers(1, 3))):
            b.leaf(draw, shape)
        for _ in range(draw(st.integers(1, 5))):
            count = len(b.shapes)
            if draw(st.booleans()) or not ops:
                i, j = draw(st.integers(0, count - 1)), draw(st.integers(0, count - 1))
                b.op(draw(st.sampled_from(joins)), [count - 1 - i, count - 1 - j])
            else:
                step(count - 1 - draw(st.integers(0, count - 1)))
    b.backward(b.scalar(len(b.shapes) - 1))
    return done(b, structure)


def op_probe():
    """One program per op a traversal or a broadcast is built from: which
    of them the student's engine gets right."""
    cases = TRAVERSAL_OPS + tuple(dict.fromkeys(TRAVERSAL_JOINS + BROADCAST_OPS))
    return st.tuples(*(op_programs(case=op) for op in cases)).map(list)


STRATEGIES = {
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

"""The hypothesis strategies that draw the engine's programs, one per
kind of check, and which cases every batch of a kind holds. The programs'
format and their builder are ``builder.py``'s."""

from __future__ import annotations

from hypothesis import strategies as st

from .builder import CONST, CONSTS, GRADS, UNARY, Builder, broadcast, numel

SIZES = st.sampled_from((2, 1, 3))  # shrinks to 2: a 1x1 matrix hides a transposition


@st.composite
def shapes(draw, min_dims=1, max_dims=2):
    return tuple(draw(SIZES) for _ in range(draw(st.integers(min_dims, max_dims))))


def _unary(draw, b: Builder, x: int, ops) -> int:
    name = draw(st.sampled_from(ops))
    if name == "log" and not b.positive[x]:
        name = "exp"
    if name == "exp" and b.depth[x] >= 2:
        name = "tanh"  # no exp of exp of exp
    if name in ("mul_c", "add_c", "rsub_c"):
        return b.op(name, [x], const=draw(st.sampled_from(CONSTS)))
    if name == "pow":
        powers = (2, 3, 0.5, -1) if b.positive[x] else (2, 3)
        return b.op(name, [x], const=draw(st.sampled_from(powers)))
    return b.op(name, [x])


OPS = ("add", "sub", "mul", "div", "neg", "exp", "log", "tanh", "relu", "sigmoid", "add_c", "mul_c", "rsub_c",
       "pow", "sum", "mean", "reshape", "T", "matmul")


@st.composite
def op_programs(draw, case=None):
    """One op (sometimes two) on leaves of one shape, weighted, summed and
    backpropagated: every op's local derivative, and every node's name.
    ``op`` fixes the first op (the sweep batches draw one program per op)."""
    b = Builder()
    name = case or draw(st.sampled_from(OPS))
    shape = draw(shapes())
    if name == "matmul":
        m, k, n = draw(SIZES), draw(SIZES), draw(SIZES)
        x = b.op("matmul", [b.leaf(draw, (m, k)), b.leaf(draw, (k, n))])
    elif name in ("add", "sub", "mul", "div"):
        left = b.leaf(draw, shape)
        x = b.op(name, [left, b.leaf(draw, shape, positive=name == "div")])
    elif name in UNARY or name in CONST:
        x = _unary(draw, b, b.leaf(draw, shape, positive=name == "log" or (name == "pow" and draw(st.booleans()))),
                   (name,))
    elif name in ("sum", "mean"):
        leaf = b.leaf(draw, shape)
        axis = draw(st.sampled_from((None,) + tuple(range(len(shape)))))
        x = b.op(name, [leaf], axis=axis, keepdims=draw(st.booleans()))
    elif name == "T":
        x = b.op("T", [b.leaf(draw, draw(shapes(2, 2)))])
    else:
        x = b.op("reshape", [b.leaf(draw, shape)], shape=draw(st.sampled_from(_reshapes(shape))))
    if x != 0 and b.shapes[x] != ():
        # weights, so that a gradient spread or routed wrongly shows in the values
        x = b.op("mul", [x, b.leaf(draw, b.shapes[x], requires_grad=False)])
    if draw(st.booleans()):
        x = _unary(draw, b, x, UNARY + CONST)
    b.backward(b.scalar(x))
    return {**b.program(), "case": name}


def op_sweep():
    """One program for every op: a batch that leaves no op untried."""
    return st.tuples(*(op_programs(case=op) for op in OPS)).map(list)


def _reshapes(shape):
    n = numel(shape)
    return [(n,), (1, n), (n, 1)] + ([(2, n // 2)] if n % 2 == 0 and n > 2 else [])


@st.composite
def broadcast_programs(draw):
    """A binary op (or two) between a tensor and one whose shape
    broadcasts to it: each input's gradient must be summed back to its shape."""
    b = Builder()
    shape = draw(shapes(2, 2)) if draw(st.booleans()) else draw(shapes(1, 1))
    small = _smaller(draw, shape)
    name = draw(st.sampled_from(("add", "mul", "sub", "div")))
    big = b.leaf(draw, shape)
    other = b.leaf(draw, small, positive=name == "div")
    args = [big, other] if name == "div" or draw(st.booleans()) else [other, big]
    x = b.op(name, args)
    if draw(st.booleans()):
        y = b.leaf(draw, _smaller(draw, b.shapes[x]))
        x = b.op(draw(st.sampled_from(("add", "mul"))), [x, y])
    x = b.op("mul", [x, b.leaf(draw, b.shapes[x])])  # weights: a wrong sum shows in the values
    b.backward(b.scalar(x))
    return b.program()


def _smaller(draw, shape):
    """A shape that broadcasts to ``shape`` and differs from it."""
    options = [()] + [tuple(shape[i:]) for i in range(1, len(shape))]
    options += [tuple(1 if i == j else n for i, n in enumerate(shape)) for j in range(len(shape)) if shape[j] > 1]
    options = [o for o in options if tuple(o) != tuple(shape)] or [()]
    return draw(st.sampled_from(options))


TRAVERSAL_OPS = ("tanh", "mul_c", "sigmoid", "neg")
TRAVERSAL_JOINS = ("add", "mul", "sub")  # the ops that join two paths


@st.composite
def traversal_programs(draw, case=None, ops=TRAVERSAL_OPS, joins=TRAVERSAL_JOINS):
    """Elementwise ops whose arguments are earlier values: fan-out of a
    leaf, diamonds (an intermediate used by two later ops) and random
    graphs with reused intermediates. ``ops`` and ``joins``: the unary and
    binary ops to build them from (the ones the student's engine gets
    right, so that a wrong derivative is not also told as a wrong traversal)."""
    b = Builder()
    structure = case or draw(st.sampled_from(("random", "diamond")))
    shape = draw(shapes())

    def step(x):  # a unary op, or a value joined with itself where no unary op can be trusted
        return _unary(draw, b, x, ops) if ops else b.op(draw(st.sampled_from(joins)), [x, x])

    if structure == "diamond":
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
    return {**b.program(), "case": structure}


def traversal_sweep(ops=TRAVERSAL_OPS, joins=TRAVERSAL_JOINS):
    return st.tuples(*(traversal_programs(case=c, ops=ops, joins=joins)
                       for c in ("random", "diamond", "random", "diamond"))).map(list)


def op_probe():
    """One program per op a traversal is built from: which of them the
    student's engine gets right."""
    return st.tuples(*(op_programs(case=op) for op in TRAVERSAL_OPS + TRAVERSAL_JOINS)).map(list)


@st.composite
def leaf_programs(draw, case=None):
    """Leaves with and without requires_grad, ops inside and outside
    no_grad, detach, retain_grad; backward; which tensors are leaves,
    which require grad, which have a grad_fn, and which get a .grad.
    Every value is used once at most (no fan-out: that is `engine`'s).
    ``case="retain_grad"``: a non-leaf that retains its grad, always."""
    b = Builder()
    shape = draw(shapes())
    if case == "retain_grad":
        x = b.leaf(draw, shape, requires_grad=True)
        w = b.leaf(draw, shape, requires_grad=draw(st.booleans()))  # every leaf before the first op
        h = b.op(draw(st.sampled_from(("mul_c", "add_c"))), [x], const=draw(st.sampled_from(CONSTS)))
        b.steps.append({"kind": "retain_grad", "value": h})
        out = b.op("mul", [h, w])
        b.backward(b.scalar(out))
        return {**b.program(), "case": "retain_grad"}
    unused = [b.leaf(draw, shape, requires_grad=not draw(st.booleans())) for _ in range(draw(st.integers(1, 3)))]
    for _ in range(draw(st.integers(1, 4))):
        x = unused.pop(len(unused) - 1 - draw(st.integers(0, len(unused) - 1)))
        kind = draw(st.sampled_from(("binary", "const", "detach", "sum")))
        no_grad = draw(st.integers(0, 3)) == 3
        if kind == "binary" and unused and b.shapes[unused[-1]] == b.shapes[x]:
            y = unused.pop()
            unused.append(b.op(draw(st.sampled_from(("add", "mul", "sub"))), [x, y], no_grad=no_grad))
        elif kind in ("binary", "const"):
            unused.append(b.op("mul_c", [x], const=draw(st.sampled_from(CONSTS)), no_grad=no_grad))
        elif kind == "detach":
            unused.append(b.op("detach", [x]))
        else:
            unused.append(b.op("sum", [x], no_grad=no_grad))
    out = len(b.shapes) - 1
    for value in range(out + 1):
        if not b.grad[value] and draw(st.integers(0, 3)) == 3:
            # PyTorch refuses to retain a gradient that will never exist
            b.steps.append({"kind": "retain_grad", "value": value})
    if b.grad[out]:
        for value in range(len(b.leaves), out + 1):
            if b.grad[value] and draw(st.integers(0, 2)) == 2:
                b.steps.append({"kind": "retain_grad", "value": value})
        b.backward(b.scalar(out))
    return {**b.program(), "case": "random"}


def _plain_forward(draw, b: Builder, leaves) -> int:
    x = leaves[0]
    for leaf in leaves[1:]:
        x = b.op(draw(st.sampled_from(("add", "mul", "sub"))), [x, leaf])
    if len(leaves) == 1 or draw(st.booleans()):
        x = b.op(draw(st.sampled_from(("mul_c", "add_c"))), [x], const=draw(st.sampled_from(CONSTS)))
    return x


@st.composite
def accumulation_programs(draw):
    """Three backward calls into the same leaves (a fresh forward
    pass each time, or one graph kept with retain_graph=True), sometimes
    with zero_grad of a leaf in between: .grad adds up until cleared."""
    b = Builder()
    shape = draw(shapes())
    leaves = [b.leaf(draw, shape) for _ in range(draw(st.integers(1, 2)))]
    out = b.scalar(_plain_forward(draw, b, leaves))
    for i in range(3):
        # the simplest program adds up two backward calls, then zeroes
        if i and draw(st.booleans()) == (i == 1):
            b.steps.append({"kind": "zero_grad", "value": draw(st.sampled_from(leaves))})
        if i and draw(st.booleans()):
            out = b.scalar(_plain_forward(draw, b, leaves))
        b.backward(out, retain_graph=True)
    return b.program()


@st.composite
def retain_graph_programs(draw):
    """Backward twice (or three times) through one graph that saved values
    (a product), with and without retain_graph: PyTorch frees the saved
    values after a backward without it, and a later backward raises."""
    b = Builder()
    shape = draw(shapes())
    x, y = b.leaf(draw, shape), b.leaf(draw, shape)
    out = b.scalar(b.op("mul", [x, y]))
    for _ in range(draw(st.integers(2, 3))):
        b.backward(out, retain_graph=draw(st.booleans()))
    return b.program()


@st.composite
def vector_backward_programs(draw, case=None):
    """Backward from non-scalar outputs: with a ``gradient`` (a vector-
    Jacobian product), without one (an error unless the output has one
    element), or several outputs at once through the module-level
    ``backward(tensors, grad_tensors)``."""
    b = Builder()
    kind = case or draw(st.sampled_from(("gradient", "implicit", "many", "wrong_shape")))
    shape = draw(shapes())
    if kind in ("implicit", "wrong_shape") and numel(shape) == 1:
        shape = (2,)
    outputs = []
    for _ in range(2 if kind == "many" else 1):
        leaves = [b.leaf(draw, shape) for _ in range(draw(st.integers(1, 2)))]
        outputs.append(_plain_forward(draw, b, leaves))
    if kind == "many":
        if draw(st.booleans()):
            outputs[1] = b.op("sum", [outputs[1]])
        grads = [None if b.shapes[o] == () and draw(st.booleans()) else b.gradient(draw, o) for o in outputs]
        b.steps.append({"kind": "backward_many", "values": outputs, "grad_tensors": grads, "retain_graph": True,
                        "grad_shapes": [list(b.shapes[o]) for o in outputs]})
    elif kind == "wrong_shape":
        # a gradient that is not the output's shape (one more element, or
        # the same elements laid out otherwise): PyTorch refuses it
        wrong = draw(st.sampled_from([(numel(shape) + 1,), (1, numel(shape)) if len(shape) == 1 else shape[::-1]]))
        if tuple(wrong) == tuple(shape):
            wrong = (numel(shape) + 1,)
        gradient = [draw(st.sampled_from(GRADS)) for _ in range(numel(wrong))]
        b.steps.append({"kind": "backward", "value": outputs[0], "gradient": gradient, "retain_graph": True,
                        "gradient_shape": list(wrong)})
        b.backward(outputs[0], gradient=b.gradient(draw, outputs[0]), retain_graph=True)
    elif kind == "implicit":
        b.backward(outputs[0], retain_graph=True)
        b.backward(outputs[0], gradient=b.gradient(draw, outputs[0]), retain_graph=True)
    else:
        b.backward(outputs[0], gradient=b.gradient(draw, outputs[0]), retain_graph=True)
    return {**b.program(), "case": kind}


# batches that cover every case of a kind at least once
SWEEPS = {"ops": op_sweep, "traversal": traversal_sweep}
# the strategies that take ``case``: a disagreement is shrunk within its case
CASES = ("ops", "traversal", "vector_backward", "leaf")
# cases every batch of a kind holds, beside its random programs: behaviours
# the docstrings specify that random draws could miss on some seed
MUST = {"leaf": ("retain_grad",)}

STRATEGIES = {
    "ops": op_programs,
    "broadcasting": broadcast_programs,
    "traversal": traversal_programs,
    "leaf": leaf_programs,
    "accumulation": accumulation_programs,
    "retain_graph": retain_graph_programs,
    "vector_backward": vector_backward_programs,
}

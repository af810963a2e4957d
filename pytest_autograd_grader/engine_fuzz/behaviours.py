"""What the engine's docstrings specify, one behaviour at a time, each as a
test of a program: does it exercise this behaviour or not. The fuzzer's
cases (``programs.CASES``) are made to draw every one of them in every
batch; ``missing(kind, programs)`` says which of a kind's behaviours a set
of programs leaves out, so that the suite can assert, seed by seed, that
none is left to chance.

The tests read the programs only, never their results: they hold for a
right engine and a wrong one alike."""

from __future__ import annotations

from collections.abc import Callable

from .builder import numel
from .program_graph import Graph, backward_after, freeing, steps_of, twice_without_zeroing, unequal_paths
from .programs import BROADCAST_OPS, OPS


def _ops(name: str, check: Callable[[Graph, dict], bool] = lambda g, s: True):
    return lambda g: any(s["op"] == name and check(g, s) for s in g.ops)


def _reduction(name: str, axis_rule: Callable[[int, tuple], bool], keepdims: bool):
    def check(g, s):
        shape = g.shapes[s["args"][0]]
        return (
            len(shape) == 2
            and min(shape) > 1
            and s.get("axis") is not None
            and axis_rule(s["axis"], shape)
            and bool(s.get("keepdims")) == keepdims
        )

    return _ops(name, check)


def _matmul(dims):
    return _ops("matmul", lambda g, s: tuple(len(g.shapes[a]) for a in s["args"]) == dims)


def _broadcast(rule):
    def test(g):
        for v, s in g.step_of.items():
            if (
                s["op"] in BROADCAST_OPS
                and len({g.shapes[a] for a in s["args"]} | {g.shapes[v]}) > 1
                and rule(g, s, [g.shapes[a] for a in s["args"]], g.shapes[v])
            ):
                return True
        return False

    return test


def _stretched_ones(shape, out):
    return len(shape) == len(out) and any(n == 1 < m for n, m in zip(shape, out))


def _stretched(shapes, out, rule) -> bool:
    """An operand of a 3-D result whose stretched axes (of length 1 in it,
    longer in the result; numbered as the result's) are ``rule``'s, and
    which has ``rule``'s number of axes added in front."""
    for shape in shapes:
        added = len(out) - len(shape)
        axes = tuple(added + i for i, n in enumerate(shape) if n == 1 < out[added + i])
        if len(out) == 3 and shape != () and rule(added, axes):
            return True
    return False


def _several(rule):
    return _broadcast(lambda g, s, shapes, out: _stretched(shapes, out, rule))


B = Callable[[Graph], bool]
BEHAVIOURS: dict[str, dict[str, tuple[str, B]]] = {
    "ops": {
        **{
            f"op {name}": (f"the forward, node name and derivative of {name}", _ops(name))
            for name in OPS
            if name != "matmul"
        },
        "op matmul": ("matrix @ matrix (MmBackward0)", _matmul((2, 2))),
        "matrix @ vector": ("a 1-D operand on the right (MvBackward0)", _matmul((2, 1))),
        "vector @ vector": ("two 1-D operands (DotBackward0)", _matmul((1, 1))),
        "sum over the last axis": (
            "sum(axis=-1) of a 2-D tensor: the axis put back before broadcasting",
            _reduction("sum", lambda axis, shape: axis % 2 == 1, False),
        ),
        "mean over one axis": (
            "mean(axis=1): divided by the axis's length, not every element",
            _reduction("mean", lambda axis, shape: True, False),
        ),
        "sum with keepdims": ("sum(axis, keepdims=True)", _reduction("sum", lambda axis, shape: True, True)),
        "mean with keepdims": ("mean(axis, keepdims=True)", _reduction("mean", lambda axis, shape: True, True)),
        "a negative axis": (
            "a reduction over axis -1 or -2",
            lambda g: any(s["op"] in ("sum", "mean") and (s.get("axis") or 0) < 0 for s in g.ops),
        ),
        "x ** 0 at x = 0": (
            "the derivative 0, not p * x ** (p - 1) = nan",
            _ops("pow", lambda g, s: s["const"] == 0 and 0.0 in g.leaf_values(s["args"][0])),
        ),
        "relu at x = 0": (
            "an exact 0 on the kink: the derivative 0, as PyTorch's, not 1",
            _ops("relu", lambda g, s: 0.0 in g.leaf_values(s["args"][0])),
        ),
        "a middle axis of a 3-D tensor": (
            "sum or mean over axis 1 (or -2) of a 3-D tensor: put back in the middle",
            lambda g: any(
                s["op"] in ("sum", "mean")
                and len(g.shapes[s["args"][0]]) == 3
                and s.get("axis") is not None
                and s["axis"] % 3 == 1
                and not s.get("keepdims")
                for s in g.ops
            ),
        ),
    },
    "broadcasting": {
        **{
            f"{name} broadcast": (
                f"{name} between tensors of different shapes",
                _ops(name, lambda g, s: g.shapes[s["args"][0]] != g.shapes[s["args"][1]]),
            )
            for name in BROADCAST_OPS
        },
        "axes added in front": (
            "(3,) against (2, 3): the gradient summed over axis 0",
            _broadcast(lambda g, s, shapes, out: any(0 < len(x) < len(out) for x in shapes)),
        ),
        "an axis of length 1": (
            "(2, 1) against (2, 3): summed over axis 1, keepdims",
            _broadcast(lambda g, s, shapes, out: any(_stretched_ones(x, out) for x in shapes)),
        ),
        "a 0-d operand": (
            "a scalar tensor against any shape",
            _broadcast(lambda g, s, shapes, out: () in shapes and out != ()),
        ),
        "both operands": (
            "(2, 1) against (1, 3): each stretched along its own axis",
            _broadcast(lambda g, s, shapes, out: all(x != out for x in shapes)),
        ),
        "a middle axis": (
            "(2, 1, 4) against (2, 3, 4): neither the first axis nor the last",
            _several(lambda added, axes: not added and axes == (1,)),
        ),
        "the first and the last axis": (
            "(1, 3, 1) against (2, 3, 4): two axes of one operand, apart",
            _several(lambda added, axes: not added and axes == (0, 2)),
        ),
        "the leading two axes": (
            "(1, 1, 4) against (2, 3, 4): two axes of one operand, side by side",
            _several(lambda added, axes: not added and axes == (0, 1)),
        ),
        "the trailing two axes": (
            "(2, 1, 1) against (2, 3, 4): the middle one and the last",
            _several(lambda added, axes: not added and axes == (1, 2)),
        ),
        "an axis added and one stretched": (
            "(3, 1) against (2, 3, 4): summed over axis 0, then axis 1 keepdims",
            _several(lambda added, axes: added == 1 and axes == (2,)),
        ),
    },
    "traversal": {
        "a leaf used twice": (
            "fan-out of a leaf: the gradients of its uses add up",
            lambda g: any(g.uses.get(v, 0) >= 2 and g.grad[v] for v in range(g.n_leaves)),
        ),
        "an intermediate used twice": (
            "a diamond: a node runs once, after both uses sent it gradient",
            lambda g: any(c >= 2 and v >= g.n_leaves for v, c in g.uses.items()),
        ),
        "paths of different lengths": (
            "a value reached along a short and a long path (the order of the nodes)",
            unequal_paths,
        ),
    },
    "leaf": {
        "an op under no_grad": (
            "its result is a leaf that requires no grad, whatever its inputs",
            lambda g: any(s.get("no_grad") and any(g.grad[a] for a in s["args"]) for s in g.ops),
        ),
        "detach": (
            "a new leaf without grad_fn that requires no grad",
            lambda g: any(s["op"] == "detach" and g.grad[s["args"][0]] for s in g.ops),
        ),
        "an op on tensors that need no grad": (
            "records no node: a leaf",
            lambda g: any(
                not s.get("no_grad") and s["op"] != "detach" and not any(g.grad[a] for a in s["args"]) for s in g.ops
            ),
        ),
        "retain_grad on a non-leaf": (
            "it keeps its .grad after backward",
            lambda g: backward_after(
                g, lambda s: s["kind"] == "retain_grad" and s["value"] >= g.n_leaves and g.grad[s["value"]]
            ),
        ),
        "retain_grad on a leaf": (
            "changes nothing: retains_grad stays False",
            lambda g: any(s["value"] < g.n_leaves and g.grad[s["value"]] for s in steps_of(g, "retain_grad")),
        ),
        "retain_grad without grad": (
            "raises PyTorch's error",
            lambda g: any(not g.grad[s["value"]] for s in steps_of(g, "retain_grad")),
        ),
        "backward from a tensor without grad": (
            "raises PyTorch's error",
            lambda g: any(not g.grad[s["value"]] for s in steps_of(g, "backward")),
        ),
    },
    "accumulation": {
        "two backward calls, new forward passes": (
            "a training step without zero_grad: .grad adds up",
            lambda g: twice_without_zeroing(g, True),
        ),
        "two backward calls, one graph": (
            "retain_graph=True, then again: .grad adds up",
            lambda g: twice_without_zeroing(g, False),
        ),
        "zero_grad, then backward": (
            "a new gradient, from None",
            lambda g: backward_after(g, lambda s: s["kind"] == "zero_grad"),
        ),
        "two leaves added, twice": (
            "x + y hands both the same gradient array: each .grad a copy",
            lambda g: (
                len(list(g.backwards())) >= 2
                and any(
                    s["op"] == "add"
                    and all(a < g.n_leaves and g.grad[a] for a in s["args"])
                    and len(set(s["args"])) == 2
                    for s in g.ops
                )
            ),
        ),
    },
    "retain_graph": {
        "a second backward through a freed node": (
            "raises PyTorch's error",
            lambda g: any(freed for freed, *_ in freeing(g)),
        ),
        "retain_graph=True, then backward": (
            "the graph is kept: the second backward runs",
            lambda g: any(not freed and any(g.saves(n) for n in ran) for freed, _, ran, _ in freeing(g)),
        ),
        "twice through nodes that saved nothing": (
            "runs again without retain_graph",
            lambda g: any(ran and not any(g.saves(n) for n in ran) for _, _, ran, _ in freeing(g)),
        ),
        "a new graph after a free": (
            "a new forward pass builds nodes that run",
            lambda g: any(
                before and not freed and any(g.saves(n) for n in unfreed - ran)
                for freed, unfreed, ran, before in freeing(g)
            ),
        ),
        "a backward that raises halfway": (
            "the leaves it completed first keep their gradients",
            lambda g: any(freed and unfreed for freed, unfreed, *_ in freeing(g)),
        ),
    },
    "vector_backward": {
        "a gradient given": (
            "backward(gradient) of a non-scalar: a vector-Jacobian product",
            lambda g: any(
                s.get("gradient") is not None
                and numel(g.shapes[s["value"]]) > 1
                and list(g.shapes[s["value"]]) == s["gradient_shape"]
                for s in steps_of(g, "backward")
            ),
        ),
        "no gradient for a non-scalar": (
            "raises PyTorch's error",
            lambda g: any(
                s.get("gradient") is None and numel(g.shapes[s["value"]]) > 1 for s in steps_of(g, "backward")
            ),
        ),
        "no gradient for one element": (
            "shape (1,) or (1, 1): ones, as for a 0-d output",
            lambda g: any(
                s.get("gradient") is None and g.shapes[s["value"]] in ((1,), (1, 1)) for s in steps_of(g, "backward")
            ),
        ),
        "a gradient of the wrong shape": (
            "raises PyTorch's error",
            lambda g: any(
                s.get("gradient") is not None and list(g.shapes[s["value"]]) != s["gradient_shape"]
                for s in steps_of(g, "backward")
            ),
        ),
        "several outputs": (
            "backward(tensors, grad_tensors): contributions add up",
            lambda g: any(len(set(s["values"])) >= 2 for s in steps_of(g, "backward_many")),
        ),
        "one traversal for all outputs": (
            "an output given twice without retain_graph: no second traversal",
            lambda g: any(
                len(set(s["values"])) < len(s["values"]) and not s["retain_graph"] for s in steps_of(g, "backward_many")
            ),
        ),
        "a leaf among the outputs": (
            "it receives its gradient directly",
            lambda g: any(v < g.n_leaves for s in steps_of(g, "backward_many") for v in s["values"]),
        ),
    },
}


def exercised(kind: str, programs) -> set[str]:
    """The behaviours of ``kind`` that at least one of ``programs`` exercises."""
    graphs = [Graph(p) for p in programs]
    return {name for name, (_, test) in BEHAVIOURS[kind].items() if any(test(g) for g in graphs)}


def missing(kind: str, programs) -> list[str]:
    """The behaviours of ``kind`` that none of ``programs`` exercises."""
    found = exercised(kind, programs)
    return [name for name in BEHAVIOURS[kind] if name not in found]

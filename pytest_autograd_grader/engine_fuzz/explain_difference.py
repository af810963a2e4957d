"""Which misconception explains a disagreement between a student's engine
and torch.autograd: read off the program and what differed where that is
enough, else found by running small probe programs through the student's
engine (one worker call a set; ``Fuzzer.results`` runs each program once).

The probes separate mistakes that show alike: a node run before its
gradient is complete and a wrong derivative both give wrong gradients; an
engine that frees too little, too much or in the wrong place raises at the
wrong backward; an ``unbroadcast`` may undo one way of broadcasting and not
the other."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..i18n import msg
from . import unbroadcast
from .builder import Builder, numel
from .differences import OP_TEXT, close_enough, compare, error_key, wrong_only_at_zeros
from .probes import FANOUT_PROBES, FREEING, ORDER_CHAINS, ORDER_SINGLES, SHARING, leaf_of
from .render import op_names, shapes_of

Program = dict[str, Any]  # a program, or a run's result (``interpret``)
Step = dict[str, Any]
Diff = dict[str, Any]  # one disagreement (``differences.compare``)


def _fails(fuzzer, programs) -> list[bool] | None:
    """Which of ``programs`` the student's engine gets wrong; None when the
    engine could not run them (the proxy's failure is the check's own)."""
    try:
        return [bool(compare("probe", p, e, r)) for p, e, r in fuzzer.results(programs)]
    except BaseException:
        return None


def alone(op_step, inputs) -> dict:
    """A program of one node: ``op_step`` on leaves holding ``inputs``, its
    result sent back with fixed weights as the gradient (implicit for a 0-d
    result), so that nothing but the op's own backward is tested."""
    b = Builder()
    args = [leaf_of(b, np.asarray(x, dtype=np.float64)) for x in inputs]
    params = {k: v for k, v in op_step.items() if k not in ("kind", "op", "args", "no_grad", "detach_args")}
    out = b.op(op_step["op"], args, **params)
    weights = [0.5 + 0.25 * (i % 5) for i in range(numel(b.shapes[out]))]
    b.backward(out, gradient=None if b.shapes[out] == () else weights)
    return b.program()


def wrong_ops(fuzzer, program, expected) -> list[tuple[dict, tuple]]:
    """The op steps of ``program`` whose local derivative is wrong, each
    with (its probe program, torch's result, the engine's): each op is run
    alone on the engine (in one more worker call), on the very inputs it
    had in the program."""
    steps, probes = [], []
    for step in program["steps"]:
        if step["kind"] != "op" or step["op"] == "detach":
            continue
        if all(expected["values"][a] is not None for a in step["args"]):
            steps.append(step)
            probes.append(alone(step, [expected["values"][a]["data"] for a in step["args"]]))
    if not probes:
        return []
    try:
        results = fuzzer.results(probes)
    except BaseException:
        return []
    return [(step, result) for step, result in zip(steps, results) if compare("probe", *result)]


# -- reading the disagreement ------------------------------------------------------


def _uses(program) -> dict[int, int]:
    uses: dict[int, int] = {}
    for step in program["steps"]:
        if step["kind"] == "op":
            for a in step["args"]:
                uses[a] = uses.get(a, 0) + 1
    return uses


def _broadcasts(program) -> bool:
    shapes = shapes_of(program)
    return any(
        s["kind"] == "op"
        and len(s["args"]) == 2
        and s["op"] != "matmul"
        and shapes[s["args"][0]] != shapes[s["args"][1]]
        for s in program["steps"]
    )


def _order(fuzzer) -> bool:
    """Nodes in a row go wrong where each of them alone goes right: the
    engine runs a node before the gradient of the node after it arrived."""
    singles = _fails(fuzzer, ORDER_SINGLES)
    if singles is None or any(singles):
        return False
    return any(_fails(fuzzer, ORDER_CHAINS) or ())


def _freeing(fuzzer) -> str | None:
    """Which freeing rule the engine breaks, told by how it fails the
    probes: it never frees (a second backward runs), frees per output or
    for the whole engine instead of per node (another output's backward
    through a freed node runs, or a new graph raises), or raises at nodes
    that saved nothing."""
    try:
        results = fuzzer.results(list(FREEING.values()))
    except BaseException:
        return None
    how = {}
    for name, (program, expected, produced) in zip(FREEING, results):
        errors = [d for d in compare("probe", program, expected, produced) if d["what"] == "error"]
        how[name] = None if not errors else "silent" if errors[0]["produced"] is None else "raises"
    if how["never_freed"] == "silent":
        return msg("diag.engine.never_freed")
    if how["free_per_node"] == "silent" or how["free_per_node_fresh"] == "raises":
        return msg("diag.engine.free_per_node")
    if how["nothing_saved_raises"] == "raises":
        return msg("diag.engine.nothing_saved_raises")
    return None


def backward_broken(fuzzer) -> bool:
    """The engine's backward goes wrong beyond any op's derivative: nodes
    in a row, or freeing."""
    return _order(fuzzer) or _freeing(fuzzer) is not None


def _op_mistake(wrong) -> str:
    """The message for the ops whose derivative the probes found wrong."""
    for step, (_, expected, produced) in wrong:
        op = step["op"]
        if op == "matmul":
            one_d = any(np.ndim(expected["values"][a]["data"]) == 1 for a in range(2))
            return msg("diag.engine.matmul_vector" if one_d else "diag.engine.matmul_transposed")
        if op == "pow" and step.get("const") == 0:
            return msg("diag.engine.pow_zero")
        if op == "relu" and wrong_only_at_zeros(
            expected["values"][0]["data"], expected["steps"][-1]["grads"][0], produced["steps"][-1]["grads"][0]
        ):
            return msg("diag.engine.relu_zero")
        if op in ("sum", "mean") and (step.get("axis") is not None or step.get("keepdims")):
            if op == "mean" and _scaled_by_count(step, expected, produced):
                return msg("diag.engine.mean_count")
            return msg("diag.engine.reduction_axis", op=op)
    named = list(dict.fromkeys(step["op"] for step, _ in wrong))
    if len(named) == 1:
        return msg("diag.engine.wrong_derivative", op=OP_TEXT.get(named[0], named[0]))
    return msg("diag.engine.wrong_derivative_of", ops=", ".join(OP_TEXT.get(o, o) for o in named))


def _scaled_by_count(step, expected, produced) -> bool:
    """A mean over an axis whose gradient is divided by every element, not
    by the elements that went into each mean."""
    e, p = expected["steps"][-1]["grads"][0], produced["steps"][-1]["grads"][0]
    if step.get("axis") is None or e is None or p is None or isinstance(p, str) or np.shape(e) != np.shape(p):
        return False
    shape = np.shape(e)
    axis = step["axis"] % len(shape)
    return close_enough(np.asarray(e) * shape[axis] / numel(shape), p)


def diagnose(kind, program, expected, produced, diffs, device="cpu", fuzzer=None) -> str | None:
    """The likely mistake behind the first of ``diffs`` (the catalogue's
    diag.engine.* text), or None where none fits."""
    first = diffs[0]
    if first["what"] == "error":
        return _error(kind, program, expected, first, fuzzer)
    if first["what"] == "meta":
        return _meta(program, first)
    if first["what"] == "value":
        step = program["steps"][first["step"]]
        return msg("diag.engine.forward", op=OP_TEXT.get(step["op"], step["op"]))
    if first["what"] == "received":
        nothing = first["produced"] is None or not np.any(first["produced"])
        return msg("diag.engine.leaves_after_error" if nothing else "diag.engine.leaves_before_complete")
    return _gradient(kind, program, expected, first, device, fuzzer)


def _error(kind: str, program: Program, expected: Program, first: Diff, fuzzer: Any) -> str | None:
    e, p = first["expected"], first["produced"]
    ek, pk = error_key(e), error_key(p)
    steps = program["steps"]
    step = steps[first["step"]] if first["step"] >= 0 else None
    found = _error_rule(ek, pk, e, p)
    if found:
        return found
    if "backward_twice" in (ek, pk):
        earlier = [s for s in steps[: max(first["step"], 0)] if s["kind"] in ("backward", "backward_many")]
        return _freed_graph(e, p, step, earlier, fuzzer)
    if p is not None and "read-only" in p[1]:
        return msg("diag.engine.shared_grad")
    if e is None and step is not None and step["kind"] != "op":
        return _backward_mistake(kind, program, expected, fuzzer)
    return None


def _error_rule(ek: str | None, pk: str | None, e: Any, p: Any) -> str | None:
    """An error PyTorch raises that the engine did not (or the other way
    round), which one rule of autograd explains."""
    if ek == "no_grad_root" and pk != ek:
        return msg("diag.engine.no_grad_root")
    if ek == "implicit_grad" and p is None:
        return msg("diag.engine.implicit_accepted")
    if pk == "implicit_grad" and e is None:
        return msg("diag.engine.one_element")
    if ek == "retain_grad_no_grad" and p is None:
        return msg("diag.engine.retain_grad_no_grad")
    if ek == "shape_mismatch" and pk != "shape_mismatch":
        # no error, or a numpy error further down: the shape was never checked
        return msg("diag.engine.shape_accepted")
    return None


def _freed_graph(e: Any, p: Any, step: Step | None, earlier: list[Step], fuzzer: Any) -> str:
    """A second backward through a graph: freed when it should not be, or
    not when it should."""
    found = _freeing(fuzzer) if fuzzer is not None else None
    if found:
        return found
    if e is None and step is not None and step["kind"] == "backward_many" and not earlier:
        return msg("diag.engine.many_one_traversal")
    if e is None and any(s.get("retain_graph") for s in earlier):
        return msg("diag.engine.freed_despite_retain")
    return msg("diag.engine.never_freed" if p is None else "diag.engine.nothing_saved_raises")


def _meta(program, first) -> str:
    step = program["steps"][first["step"]] if first["step"] >= 0 else None
    field = first["field"]
    if field == "grad_fn":
        return msg("diag.engine.node_name", expected=first["expected"])
    if field == "is_leaf":
        return msg("diag.engine.leaf_rule")
    if field == "retains_grad":
        return msg("diag.engine.retain_grad_leaf")
    if step is not None and step.get("no_grad"):
        return msg("diag.engine.no_grad_recorded")
    if step is not None and step.get("op") == "detach":
        return msg("diag.engine.detach")
    return msg("diag.engine.requires_grad_rule")


def _gradient(kind: str, program: Program, expected: Program, first: Diff, device: str, fuzzer: Any) -> str | None:
    value, e, p = first["value"], first["expected"], first["produced"]
    if value >= len(program["leaves"]) and e is None and p is not None:
        return msg("diag.engine.nonleaf_grad")
    if isinstance(p, str):
        return None
    found = (
        _which_grad(program, first)
        or _gradient_mistake(program, first, device)
        or _clearing(program, first)
        or _accumulation(kind, program, expected, first, fuzzer)
    )
    if found:
        return found
    if kind in ("ops", "broadcasting", "traversal"):
        return _backward_mistake(kind, program, expected, fuzzer)
    if fuzzer is not None and _order(fuzzer):
        return msg("diag.engine.order")
    return None


def _which_grad(program: Program, first: Diff) -> str | None:
    """A .grad kept where it should not be, or not kept where it should."""
    steps, n_leaves = program["steps"], len(program["leaves"])
    value, e, p = first["value"], first["expected"], first["produced"]
    step = steps[first["step"]]
    retained = [i for i in range(first["step"]) if steps[i]["kind"] == "retain_grad" and steps[i]["value"] == value]
    if value >= n_leaves and e is not None and p is None and retained:
        return msg("diag.engine.retain_grad_ignored")
    if step["kind"] == "backward_many" and value in step["values"] and value < n_leaves:
        return msg("diag.engine.leaf_root")
    return None


def _clearing(program: Program, first: Diff) -> str | None:
    """A zero_grad that left zeros, or a .grad not cleared."""
    steps, value, e, p = program["steps"], first["value"], first["expected"], first["produced"]
    step = steps[first["step"]]
    if step["kind"] == "zero_grad" and e is None and p is not None and not np.any(p):
        return msg("diag.engine.zeros_not_none")
    zeroing = [i for i in range(first["step"] + 1) if steps[i]["kind"] == "zero_grad" and steps[i]["value"] == value]
    if zeroing and e is not None or step["kind"] == "zero_grad":
        return msg("diag.engine.not_cleared")
    return None


def _accumulation(kind: str, program: Program, expected: Program, first: Diff, fuzzer: Any) -> str | None:
    """A second backward's gradient that replaced the first, or a .grad
    shared between tensors (accumulation's checks only)."""
    steps, value, e, p = program["steps"], first["value"], first["expected"], first["produced"]
    earlier = [i for i in range(first["step"]) if steps[i]["kind"] in ("backward", "backward_many")]
    if not (earlier and e is not None and p is not None and kind == "accumulation"):
        return None
    sharing = _fails(fuzzer, SHARING) if fuzzer is not None else None
    if sharing == [False, True]:
        return msg("diag.engine.shared_grad")
    before = expected["steps"][earlier[-1]]["grads"][value]
    if before is not None and close_enough(np.asarray(e) - np.asarray(before), p):
        return msg("diag.engine.not_accumulated")
    return None


def _backward_mistake(kind, program, expected, fuzzer) -> str | None:
    """A wrong gradient, or an error in a backward, that no rule of the
    program explains: nodes run in the wrong order (any check), broadcasting
    not undone, an op's derivative, gradients lost at a fan-out."""
    if fuzzer is None:
        return None
    if _order(fuzzer):
        return msg("diag.engine.order")
    if kind == "broadcasting" and _broadcasts(program):
        return unbroadcast.mistake(fuzzer, program)
    wrong = wrong_ops(fuzzer, program, expected)
    if wrong:
        return _op_mistake(wrong)
    if kind == "traversal" and any(c >= 2 for c in _uses(program).values()):
        # gradients meet at a fan-out: either they overwrite each other,
        # or a node ran before all of them had arrived (or ran twice)
        if any(_fails(fuzzer, FANOUT_PROBES) or ()):
            return msg("diag.engine.fanout_overwrite")
        return msg("diag.engine.order")
    if kind not in ("ops", "broadcasting"):
        return None
    named = list(dict.fromkeys(op_names(program)))
    if len(named) > 1 and named[-1] == "sum":
        named = named[:-1]
    if len(named) == 1:
        return msg("diag.engine.wrong_derivative", op=OP_TEXT.get(named[0], named[0]))
    return msg("diag.engine.wrong_derivative_of", ops=", ".join(OP_TEXT.get(o, o) for o in named))


def _gradient_mistake(program, first, device) -> str | None:
    """A backward given gradients (``gradient``, ``grad_tensors``) that the
    engine ignored (it used ones) or applied twice (g * g): torch run again
    with those gradients gives exactly what the engine gave."""
    from .interpret import run_torch

    if first["produced"] is None or first["step"] < 0:
        return None

    def changed(step, change):
        if step["kind"] == "backward" and step.get("gradient"):
            return {**step, "gradient": change(step["gradient"])}
        if step["kind"] == "backward_many":
            return {**step, "grad_tensors": [None if g is None else change(g) for g in step["grad_tensors"]]}
        return step

    for key, change in (
        ("diag.engine.gradient_ignored", lambda g: [1.0] * len(g)),
        ("diag.engine.gradient_twice", lambda g: [x * x for x in g]),
    ):
        steps = [changed(s, change) if i <= first["step"] else s for i, s in enumerate(program["steps"])]
        if steps == program["steps"]:
            continue  # no gradient given, or ones (0s and 1s) that cannot tell these apart
        try:
            grad = run_torch({**program, "steps": steps}, device)["steps"][first["step"]]["grads"][first["value"]]
        except (IndexError, KeyError, TypeError, RuntimeError, ValueError):
            continue
        if grad is not None and not isinstance(grad, str) and close_enough(grad, first["produced"]):
            return msg(key)
    return None

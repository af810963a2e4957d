"""What the student reads when their engine disagrees: the program, what
differed, and the misconception that fits (found by running small probe
programs through the engine).
"""

from __future__ import annotations

import numpy as np

from ..i18n import msg
from . import programs as P
from .builder import Builder, numel
from .differences import OP_TEXT, close_enough, compare, error_key
from .render import names as names_of
from .render import op_names, render, shapes_of

# -- feedback --------------------------------------------------------------------

def show(x, other=None) -> str:
    if x is None:
        return "None"
    if isinstance(x, str):
        return x
    a = np.asarray(x, dtype=np.float64)
    text = str(float(np.round(a, 4))) if a.ndim == 0 else str(np.round(a, 4).tolist())
    if other is not None and not isinstance(other, str) and np.shape(other) != a.shape:
        text += " " + msg("engine.shape", shape=tuple(a.shape))
    return text


def _lines(program) -> list[str]:
    """The rendered line of each step (the line a leaf's creation is on for -1)."""
    names = names_of(program)
    text = render(program).splitlines()
    body = [line for line in text[3:] if not line.startswith("with no_grad")]
    return body[len(program["leaves"]):], names


def describe(program, diff) -> str:
    body, names = _lines(program)
    step = diff["step"]
    line = body[step].strip() if 0 <= step < len(body) else ""
    if diff["what"] == "error":
        e, p = diff["expected"], diff["produced"]
        if e is None:
            return msg("engine.error_unexpected", line=line, produced=f"{p[0]}: {p[1]}")
        if p is None:
            return msg("engine.error_missing", line=line, expected=f"{e[0]}: {e[1].split('.')[0]}")
        return msg("engine.error_other", line=line, expected=f"{e[0]}: {e[1].split('.')[0]}",
                   produced=f"{p[0]}: {p[1]}")
    name = names[diff["value"]]
    if diff["what"] == "value":
        return msg("engine.value", name=name, line=line, expected=show(diff["expected"], diff["produced"]),
                   produced=show(diff["produced"], diff["expected"]))
    if diff["what"] == "meta":
        field = "grad_fn is not None" if diff["field"] == "has_grad_fn" else diff["field"]
        return msg("engine.meta", name=name, field=field, expected=diff["expected"], produced=diff["produced"])
    return msg("engine.grad", name=name, line=line, expected=show(diff["expected"], diff["produced"]),
               produced=show(diff["produced"], diff["expected"]))


def _prints(program, diffs) -> dict[int, list[str]]:
    """After the step where each difference shows: a print of what the
    student's engine holds, with torch's answer beside it as a comment."""
    names = names_of(program)
    out: dict[int, list[str]] = {}
    for diff in diffs[:3]:
        if diff["what"] == "error" or diff["step"] < 0:
            continue
        name = names[diff["value"]]
        target = {"grad": f"{name}.grad", "value": f"{name}.data"}.get(
            diff["what"], f"{name}.{diff.get('field', '')}".replace(".has_grad_fn", ".grad_fn"))
        expected = show(diff["expected"], diff["produced"]).replace("\n", " ")
        out.setdefault(diff["step"], []).append(f"print({target!r}, {target})  # torch.autograd: {expected}")
    return out


def feedback(kind, program, expected, produced, diffs, device="cpu", fuzzer=None) -> str:
    ops = len(op_names(program))
    # the student's module by the name it was loaded under
    module = getattr(getattr(fuzzer, "proxy", None), "module", None) or "engine"
    # a script the student can run as it is: their engine's module imported, the differences printed
    code = render(program, module=module, prints=_prints(program, diffs))
    parts = [msg("engine.header", ops=ops), code, ""]
    parts += [describe(program, d) for d in diffs[:3]]
    if len(diffs) > 3:
        parts.append(msg("engine.more", count=len(diffs) - 3))
    diagnosis = diagnose(kind, program, expected, produced, diffs, device, fuzzer)
    if diagnosis:
        parts.append(diagnosis)
    return "\n".join(parts)


# -- diagnosis -------------------------------------------------------------------

def _uses(program) -> dict[int, int]:
    uses: dict[int, int] = {}
    for step in program["steps"]:
        if step["kind"] == "op":
            for a in step["args"]:
                uses[a] = uses.get(a, 0) + 1
    return uses


def _broadcasts(program) -> bool:
    shapes = shapes_of(program)
    return any(s["kind"] == "op" and len(s["args"]) == 2 and s["op"] != "matmul"
               and shapes[s["args"][0]] != shapes[s["args"][1]] for s in program["steps"])


def diagnose(kind, program, expected, produced, diffs, device="cpu", fuzzer=None) -> str | None:
    first = diffs[0]
    steps = program["steps"]
    ops = op_names(program)
    n_leaves = len(program["leaves"])
    step = steps[first["step"]] if first["step"] >= 0 else None
    if first["what"] == "error":
        ek = error_key(first["expected"])
        if ek == "backward_twice" and first["produced"] is None:
            return msg("diag.engine.never_freed")
        if ek == "implicit_grad" and first["produced"] is None:
            return msg("diag.engine.implicit_accepted")
        if ek == "retain_grad_no_grad" and first["produced"] is None:
            return msg("diag.engine.retain_grad_no_grad")
        if first["expected"] is None and error_key(first["produced"]) == "backward_twice" and any(
                steps[i].get("retain_graph") for i in range(first["step"])
                if steps[i]["kind"] in ("backward", "backward_many")):
            return msg("diag.engine.freed_despite_retain")
        if ek == "shape_mismatch" and error_key(first["produced"]) != "shape_mismatch":
            # no error, or a numpy error further down: the shape was never checked
            return msg("diag.engine.shape_accepted")
        if first["expected"] is None and step is not None and step["kind"] != "op":
            if "matmul" in ops and kind == "ops":
                return msg("diag.engine.matmul_transposed")
            if _broadcasts(program) and kind == "broadcasting":
                return msg("diag.engine.no_unbroadcast")
        return None
    if first["what"] == "meta":
        field = first["field"]
        if field == "grad_fn":
            return msg("diag.engine.node_name", expected=first["expected"])
        if field == "is_leaf":
            return msg("diag.engine.leaf_rule")
        if step is not None and step.get("no_grad"):
            return msg("diag.engine.no_grad_recorded")
        if step is not None and step.get("op") == "detach":
            return msg("diag.engine.detach")
        return msg("diag.engine.requires_grad_rule")
    if first["what"] == "value":
        return msg("diag.engine.forward", op=OP_TEXT.get(step["op"], step["op"]))
    # a gradient
    value, e, p = first["value"], first["expected"], first["produced"]
    if value >= n_leaves and e is None and p is not None:
        return msg("diag.engine.nonleaf_grad")
    if isinstance(p, str):
        return None
    retained = [i for i in range(first["step"]) if steps[i]["kind"] == "retain_grad" and steps[i]["value"] == value]
    if value >= n_leaves and e is not None and p is None and retained:
        return msg("diag.engine.retain_grad_ignored")
    gradient = _gradient_mistake(program, first, device)
    if gradient:
        return gradient
    if "matmul" in ops and (p is None or np.shape(p) != np.shape(e)):
        return msg("diag.engine.matmul_transposed")
    if _broadcasts(program) and (p is None or e is None or np.shape(p) != np.shape(e)):
        return msg("diag.engine.no_unbroadcast")
    earlier = [i for i in range(first["step"]) if steps[i]["kind"] in ("backward", "backward_many")]
    zeroing = [i for i in range(first["step"] + 1) if steps[i]["kind"] == "zero_grad" and steps[i]["value"] == value]
    if steps[first["step"]]["kind"] == "zero_grad" and e is None and p is not None and not np.any(p):
        return msg("diag.engine.zeros_not_none")
    if zeroing and e is not None or (steps[first["step"]]["kind"] == "zero_grad"):
        return msg("diag.engine.not_cleared")
    if earlier and e is not None and p is not None:
        before = expected["steps"][earlier[-1]]["grads"][value]
        if before is not None and close_enough(np.asarray(e) - np.asarray(before), p):
            return msg("diag.engine.not_accumulated")
    if kind in ("ops", "broadcasting", "traversal"):
        if _broadcasts(program) and kind == "broadcasting":
            return msg("diag.engine.no_unbroadcast")
        wrong = probe(fuzzer, program, expected) if fuzzer is not None else None
        if wrong:
            if "matmul" in wrong:
                return msg("diag.engine.matmul_transposed")
            if len(wrong) == 1:
                return msg("diag.engine.wrong_derivative", op=OP_TEXT.get(wrong[0], wrong[0]))
            return msg("diag.engine.wrong_derivative_of", ops=", ".join(OP_TEXT.get(o, o) for o in wrong))
        if any(c >= 2 for c in _uses(program).values()):
            # gradients meet at a fan-out: either they overwrite each other,
            # or a node ran before all of them had arrived (or ran twice)
            if fuzzer is not None and _fanout_fails(fuzzer):
                return msg("diag.engine.fanout_overwrite")
            return msg("diag.engine.order")
        named = []
        for op in ops:
            if op not in named:
                named.append(op)
        if len(named) > 1 and named[-1] == "sum":
            named = named[:-1]
        if len(named) == 1:
            return msg("diag.engine.wrong_derivative", op=OP_TEXT.get(named[0], named[0]))
        return msg("diag.engine.wrong_derivative_of", ops=", ".join(OP_TEXT.get(o, o) for o in named))
    return None


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

    for key, change in (("diag.engine.gradient_ignored", lambda g: [1.0] * len(g)),
                        ("diag.engine.gradient_twice", lambda g: [x * x for x in g])):
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


def probe(fuzzer, program, expected) -> list[str]:
    """The ops of ``program`` whose local derivative is wrong: each op is run
    alone on the engine (in one more worker call), on the very inputs it had
    in the program, times fixed weights, summed and backpropagated."""
    probes, named = [], []
    value = len(program["leaves"])
    for step in program["steps"]:
        if step["kind"] != "op":
            continue
        if step["op"] != "detach" and all(expected["values"][a] is not None for a in step["args"]):
            b = Builder()
            args = []
            for a in step["args"]:
                data = np.asarray(expected["values"][a]["data"], dtype=np.float64)
                b.leaves.append({"shape": list(data.shape), "values": [float(x) for x in data.ravel()],
                                 "requires_grad": True})
                b.shapes.append(tuple(data.shape))
                b.positive.append(False)
                b.grad.append(True)
                b.depth.append(0)
                args.append(len(b.shapes) - 1)
            params = {k: v for k, v in step.items() if k not in ("kind", "op", "args", "no_grad", "detach_args")}
            out = b.op(step["op"], args, **params)
            weights = [0.5 + 0.25 * (i % 5) for i in range(numel(b.shapes[out]))]
            b.leaves.append({"shape": list(b.shapes[out]), "values": weights, "requires_grad": False})
            # the weights leaf is numbered after the op's result: renumber
            program_ = b.program()
            n = len(program_["leaves"])
            program_["steps"][0]["args"] = [a for a in args]
            program_["steps"].append({"kind": "op", "op": "mul", "args": [n, n - 1]})
            program_["steps"].append({"kind": "op", "op": "sum", "args": [n + 1], "axis": None, "keepdims": False})
            program_["steps"].append({"kind": "backward", "value": n + 2, "gradient": None, "retain_graph": False})
            probes.append(program_)
            named.append(step["op"])
        value += 1
    if not probes:
        return []
    try:
        results = fuzzer.results(probes)
    except BaseException:
        return []
    wrong = []
    for name, (p, e, r) in zip(named, results):
        if compare("probe", p, e, r) and name not in wrong:
            wrong.append(name)
    return wrong


# Fan-out where the order of the nodes cannot matter: a leaf used twice by
# one op, and an intermediate used twice by one op (both gradients arrive
# together). An engine that adds the gradients gets these right whatever
# order it runs its nodes in.
FANOUT_PROBES = [
    {"leaves": [{"shape": [2], "values": [0.5, -1.5], "requires_grad": True}],
     "steps": [{"kind": "op", "op": "add", "args": [0, 0]},
               {"kind": "op", "op": "sum", "args": [1], "axis": None, "keepdims": False},
               {"kind": "backward", "value": 2, "gradient": None, "retain_graph": False}]},
    {"leaves": [{"shape": [2], "values": [0.5, -1.5], "requires_grad": True}],
     "steps": [{"kind": "op", "op": "tanh", "args": [0]},
               {"kind": "op", "op": "mul", "args": [1, 1]},
               {"kind": "op", "op": "sum", "args": [2], "axis": None, "keepdims": False},
               {"kind": "backward", "value": 3, "gradient": None, "retain_graph": False}]},
]


def _fanout_fails(fuzzer) -> bool:
    try:
        return any(compare("probe", p, e, r) for p, e, r in fuzzer.results(FANOUT_PROBES))
    except BaseException:
        return False

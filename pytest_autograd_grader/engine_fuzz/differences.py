"""Where an engine's run of a program differs from torch's: errors, outputs,
gradients and graph facts, each within float64's tolerances.
"""

from __future__ import annotations

import numpy as np

RTOL = ATOL = 1e-7  # torch.testing.assert_close's float64 tolerances

# names PyTorch gives a node, and the names of the same node an engine may use
ALIASES = {
    "MmBackward0": {"MatMulBackward0", "MmBackward0"},
    "ViewBackward0": {"ViewBackward0", "ReshapeBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0"},
    "PermuteBackward0": {"PermuteBackward0", "TBackward0", "TransposeBackward0"},
    "RsubBackward1": {"RsubBackward1", "RsubBackward0", "SubBackward0"},
    "SumBackward0": {"SumBackward0", "SumBackward1"},
    "SumBackward1": {"SumBackward0", "SumBackward1"},
    "MeanBackward0": {"MeanBackward0", "MeanBackward1"},
    "MeanBackward1": {"MeanBackward0", "MeanBackward1"},
}

# PyTorch's stable texts of the errors a program may raise
ERRORS = {
    "backward_twice": "backward through the graph a second time",
    "implicit_grad": "grad can be implicitly created only for scalar outputs",
    "shape_mismatch": "Mismatch in shape",
    "retain_grad_no_grad": "can't retain_grad on Tensor that has requires_grad=False",
    "no_grad_root": "does not require grad and does not have a grad_fn",
}

# what each kind of check compares besides errors, outputs and leaf grads
META = {"ops": ("grad_fn",), "leaf": ("requires_grad", "is_leaf", "has_grad_fn", "retains_grad")}
ALL_GRADS = ("leaf",)
# retain_graph is about which backward calls raise: its gradients are
# accumulation's, but for what a backward that raises halfway hands out
ERRORS_ONLY = ("retain_graph",)

OP_TEXT = {"add": "+", "sub": "-", "mul": "*", "div": "/", "matmul": "@", "add_c": "+ (a number)",
           "mul_c": "* (a number)", "rsub_c": "(a number) -", "pow": "**", "neg": "- (negation)",
           "T": ".T", "sum": "sum", "mean": "mean", "reshape": "reshape", "exp": "exp", "log": "log",
           "tanh": "tanh", "relu": "relu", "sigmoid": "sigmoid"}


def error_key(error) -> str | None:
    if error is None:
        return None
    for key, text in ERRORS.items():
        if text in error[1]:
            return key
    return "other"


def close_enough(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return False
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    # the same bytes: most values of a right engine, at a tenth of
    # np.allclose's cost on arrays this small
    return a.tobytes() == b.tobytes() or bool(np.allclose(b, a, rtol=RTOL, atol=ATOL, equal_nan=True))


def wrong_only_at_zeros(x, expected, produced) -> bool:
    """A gradient that differs from torch's exactly where the input ``x``
    is 0, and somewhere: the slope at a kink."""
    if expected is None or produced is None or isinstance(produced, str):
        return False
    try:  # what the student's engine gave may be any array at all
        produced = np.asarray(produced, dtype=np.float64)
        if produced.shape != np.shape(expected):
            return False
        off = ~np.isclose(np.asarray(expected, dtype=np.float64), produced)
    except (TypeError, ValueError):
        return False
    return bool(off.any()) and not (off & (np.asarray(x) != 0)).any()


def _same_grad(expected, produced) -> bool:
    # one rule for zero_grad, PyTorch's: .grad is None after it, not zeros
    if expected is None or produced is None:
        return expected is None and produced is None
    return close_enough(expected, produced)


def _names_match(expected, produced) -> bool:
    return produced == expected or produced in ALIASES.get(expected, ())


def compare(kind: str, program: dict, expected: dict, produced: dict) -> list[dict]:
    """Every disagreement between the torch result and the engine result,
    in program order; each a dict with ``what`` (error, value, meta, grad),
    the step index (-1 for a leaf's creation) and the value concerned."""
    out: list[dict] = []
    n_leaves = len(program["leaves"])
    if len(produced.get("steps", ())) != len(program["steps"]) or \
            len(produced.get("values", ())) != len(expected["values"]):
        # the engine failed while creating a leaf
        err = next((s["error"] for s in produced.get("steps", ()) if s.get("leaf")), ["Error", ""])
        return [{"what": "error", "step": -1, "expected": None, "produced": err, "value": 0}]
    meta = META.get(kind, ())
    value = n_leaves
    for v in range(n_leaves):
        out += _meta_diffs(meta, v, -1, expected["values"][v], produced["values"][v])
    zeroed: set[int] = set()
    for i, (step, e, p) in enumerate(zip(program["steps"], expected["steps"], produced["steps"])):
        ek, pk = error_key(e["error"]), error_key(p["error"])
        skipped = e["error"] and e["error"][0] == "Skipped"
        if ek != pk and not (ek == "other" and pk is not None and not skipped):
            out.append({"what": "error", "step": i, "expected": e["error"], "produced": p["error"],
                        "value": step.get("value")})
        if step["kind"] == "op":
            ev, pv = expected["values"][value], produced["values"][value]
            if ev is not None and pv is not None:
                if not close_enough(ev["data"], pv["data"]):
                    out.append({"what": "value", "step": i, "value": value, "expected": ev["data"],
                                "produced": pv["data"]})
                out += _meta_diffs(meta, value, i, ev, pv)
            value += 1
        if step["kind"] == "retain_grad" and "retains_grad" in meta and \
                e.get("retains_grad", False) != p.get("retains_grad", False):
            out.append({"what": "meta", "field": "retains_grad", "step": i, "value": step["value"],
                        "expected": e.get("retains_grad", False), "produced": p.get("retains_grad", False)})
        if step["kind"] == "zero_grad":
            zeroed.add(step["value"])
        if kind in ERRORS_ONLY and ek == pk == "backward_twice" and e["grads"] is not None and \
                p["grads"] is not None:
            out += _partial_diffs(i, n_leaves, expected["steps"], produced["steps"])
        if e["grads"] is not None and p["grads"] is not None and kind not in ERRORS_ONLY:
            ids = range(len(e["grads"])) if kind in ALL_GRADS else range(n_leaves)
            for v in ids:
                if not _same_grad(e["grads"][v], p["grads"][v]):
                    out.append({"what": "grad", "step": i, "value": v, "expected": e["grads"][v],
                                "produced": p["grads"][v]})
        if step["kind"] in ("backward", "backward_many"):
            zeroed.clear()
    return out


def _partial_diffs(i, n_leaves, expected, produced) -> list[dict]:
    """At a backward that raised halfway (a freed node), what each leaf
    received before the error: its .grad after the step less its .grad
    before (None counting as 0), so that an accumulation or zeroing
    mistake does not show here as well."""
    def before(steps, v):
        return next((s["grads"][v] for s in reversed(steps[:i]) if s["grads"] is not None), None)

    def received(steps, v):  # None: nothing
        after, earlier = steps[i]["grads"][v], before(steps, v)
        if isinstance(after, str) or isinstance(earlier, str) or after is None:
            return after
        return np.asarray(after) - (0 if earlier is None else np.asarray(earlier))

    out = []
    for v in range(n_leaves):
        e, p = received(expected, v), received(produced, v)
        nothing = [x is None or (not isinstance(x, str) and not np.any(x)) for x in (e, p)]
        if not (all(nothing) or close_enough(e, p)):
            out.append({"what": "received", "step": i, "value": v, "expected": e, "produced": p})
    return out


def _meta_diffs(meta, value, step, e, p):
    out = []
    if e is None or p is None:
        return out
    for field in meta:
        if field == "retains_grad":
            continue  # read after retain_grad(), not at creation
        if field == "has_grad_fn":
            ef, pf = e["grad_fn"] is not None, p["grad_fn"] is not None
        elif field == "grad_fn":
            ef, pf = e["grad_fn"], p["grad_fn"]
            if ef is not None and _names_match(ef, pf):
                continue
        else:
            ef, pf = e[field], p[field]
        if ef != pf:
            out.append({"what": "meta", "field": field, "step": step, "value": value, "expected": ef,
                        "produced": pf})
    return out

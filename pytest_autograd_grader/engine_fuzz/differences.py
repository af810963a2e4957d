"""Where an engine's run of a program differs from torch's: errors, outputs,
gradients and graph facts, each within float64's tolerances.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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

OP_TEXT = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "div": "/",
    "matmul": "@",
    "add_c": "+ (a number)",
    "mul_c": "* (a number)",
    "rsub_c": "(a number) -",
    "pow": "**",
    "neg": "- (negation)",
    "T": ".T",
    "sum": "sum",
    "mean": "mean",
    "reshape": "reshape",
    "exp": "exp",
    "log": "log",
    "tanh": "tanh",
    "relu": "relu",
    "sigmoid": "sigmoid",
}


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


Diff = dict[str, Any]  # one disagreement: what, step, value, expected, produced (and field for meta)


def compare(kind: str, program: dict[str, Any], expected: dict[str, Any], produced: dict[str, Any]) -> list[Diff]:
    """Every disagreement between the torch result and the engine result,
    in program order; each a dict with ``what`` (error, value, meta, grad),
    the step index (-1 for a leaf's creation) and the value concerned."""
    n_leaves = len(program["leaves"])
    if len(produced.get("steps", ())) != len(program["steps"]) or len(produced.get("values", ())) != len(
        expected["values"]
    ):
        # the engine failed while creating a leaf
        err = next((s["error"] for s in produced.get("steps", ()) if s.get("leaf")), ["Error", ""])
        return [{"what": "error", "step": -1, "expected": None, "produced": err, "value": 0}]
    meta = META.get(kind, ())
    out: list[Diff] = []
    for v in range(n_leaves):
        out += _meta_diffs(meta, v, -1, expected["values"][v], produced["values"][v])
    value = n_leaves  # the id of the value the next op makes
    for i, (step, e, p) in enumerate(zip(program["steps"], expected["steps"], produced["steps"])):
        out += _error_diffs(i, step, e, p)
        if step["kind"] == "op":
            out += _op_diffs(meta, i, value, expected["values"][value], produced["values"][value])
            value += 1
        if step["kind"] == "retain_grad":
            out += _retains_grad_diffs(meta, i, step, e, p)
        out += _grad_diffs(kind, i, n_leaves, expected["steps"], produced["steps"])
    return out


def _error_diffs(i: int, step: dict[str, Any], e: dict[str, Any], p: dict[str, Any]) -> list[Diff]:
    """A step that raised where torch's did not, or the other way round, or
    another known error; any unknown error of the engine's matches torch's
    own unknown one (not a skipped step's)."""
    ek, pk = error_key(e["error"]), error_key(p["error"])
    skipped = e["error"] and e["error"][0] == "Skipped"
    if ek != pk and not (ek == "other" and pk is not None and not skipped):
        return [
            {"what": "error", "step": i, "expected": e["error"], "produced": p["error"], "value": step.get("value")}
        ]
    return []


def _op_diffs(
    meta: Sequence[str], i: int, value: int, ev: dict[str, Any] | None, pv: dict[str, Any] | None
) -> list[Diff]:
    """The value an op made: its data, then its graph facts."""
    if ev is None or pv is None:
        return []
    out: list[Diff] = []
    if not close_enough(ev["data"], pv["data"]):
        out.append({"what": "value", "step": i, "value": value, "expected": ev["data"], "produced": pv["data"]})
    return out + _meta_diffs(meta, value, i, ev, pv)


def _retains_grad_diffs(
    meta: Sequence[str], i: int, step: dict[str, Any], e: dict[str, Any], p: dict[str, Any]
) -> list[Diff]:
    if "retains_grad" in meta and e.get("retains_grad", False) != p.get("retains_grad", False):
        return [
            {
                "what": "meta",
                "field": "retains_grad",
                "step": i,
                "value": step["value"],
                "expected": e.get("retains_grad", False),
                "produced": p.get("retains_grad", False),
            }
        ]
    return []


def _grad_diffs(
    kind: str, i: int, n_leaves: int, expected: list[dict[str, Any]], produced: list[dict[str, Any]]
) -> list[Diff]:
    """The .grads read after step ``i`` (the leaves', or every value's for
    the kinds in ``ALL_GRADS``); for the kinds in ``ERRORS_ONLY`` only what
    a backward that raised halfway handed out."""
    e, p = expected[i], produced[i]
    if e["grads"] is None or p["grads"] is None:
        return []
    if kind in ERRORS_ONLY:
        if error_key(e["error"]) == error_key(p["error"]) == "backward_twice":
            return _partial_diffs(i, n_leaves, expected, produced)
        return []
    ids = range(len(e["grads"])) if kind in ALL_GRADS else range(n_leaves)
    return [
        {"what": "grad", "step": i, "value": v, "expected": e["grads"][v], "produced": p["grads"][v]}
        for v in ids
        if not _same_grad(e["grads"][v], p["grads"][v])
    ]


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

    out: list[Diff] = []
    for v in range(n_leaves):
        e, p = received(expected, v), received(produced, v)
        nothing = [x is None or (not isinstance(x, str) and not np.any(x)) for x in (e, p)]
        if not (all(nothing) or close_enough(e, p)):
            out.append({"what": "received", "step": i, "value": v, "expected": e, "produced": p})
    return out


def _meta_diffs(
    meta: Sequence[str], value: int, step: int, e: dict[str, Any] | None, p: dict[str, Any] | None
) -> list[Diff]:
    out: list[Diff] = []
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
            out.append({"what": "meta", "field": field, "step": step, "value": value, "expected": ef, "produced": pf})
    return out

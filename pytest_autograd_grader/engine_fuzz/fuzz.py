"""Differential fuzzing of a student's engine against torch.autograd.

``fuzz(proxy, kind, grade_rng, device)`` draws batches of programs of one
kind (``programs.STRATEGIES``) with hypothesis, runs each batch on the
student's engine in the worker (one call per batch) and in torch.autograd
here, and when a program disagrees lets hypothesis shrink the batch to the
smallest disagreeing program. It returns None (no disagreement) or the
feedback: the program as Python, expected against produced, a diagnosis.

Reproducible: no example database, hypothesis's random generator seeded
from the check's ``grade_rng``; the number of examples and of shrink
steps is bounded by counts, never by time."""

from __future__ import annotations

import json
import random
import time

import numpy as np

from ..messages import msg
from . import programs as P
from .interpret import run_engine_batch, run_torch, unpack

BATCH = 12          # programs per worker call
MAX_EXAMPLES = 5    # batches tried when every program agrees
SWEEP_EXAMPLES = 3  # sweeps tried (a sweep: one program for each op or graph shape)
SHRINK_SEARCH = 40  # single programs tried to find one to shrink, once a batch disagreed
SHRINK_CALLS = 30   # worker calls spent shrinking a disagreement at most
SHRINK_TRIES = 200  # candidates hypothesis's shrinker may try at most

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
}

# what each kind of check compares besides errors, outputs and leaf grads
META = {"ops": ("grad_fn",), "leaf": ("requires_grad", "is_leaf", "has_grad_fn")}
ALL_GRADS = ("leaf",)
# retain_graph is about which backward calls raise: its gradients are accumulation's
ERRORS_ONLY = ("retain_graph",)

OP_TEXT = {"add": "+", "sub": "-", "mul": "*", "div": "/", "matmul": "@", "add_c": "+ (a number)",
           "mul_c": "* (a number)", "rsub_c": "(a number) -", "pow": "**", "neg": "- (negation)",
           "T": ".T", "sum": "sum", "mean": "mean", "reshape": "reshape", "exp": "exp", "log": "log",
           "tanh": "tanh", "relu": "relu", "sigmoid": "sigmoid"}


def _reference(function):
    """``function`` by module and name: the worker imports it from the
    package (sending a plain function costs an inspect.getsource, ~0.3 s)."""
    from ..records import FunctionRef

    return FunctionRef(module=function.__module__, qualname=function.__qualname__)


RUN_ENGINE_BATCH = _reference(run_engine_batch)


class _Stop(BaseException):
    """The shrinking budget is spent: the smallest failing batch so far stands."""


class _Abort(BaseException):
    """The student's code failed as a whole (not implemented, hang, crash):
    carried through hypothesis untouched and re-raised as it was."""

    def __init__(self, failure):
        super().__init__()
        self.failure = failure


def error_key(error) -> str | None:
    if error is None:
        return None
    for key, text in ERRORS.items():
        if text in error[1]:
            return key
    return "other"


def _close(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return False
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.allclose(b, a, rtol=RTOL, atol=ATOL, equal_nan=True))


def _same_grad(expected, produced, zeroed: bool) -> bool:
    if zeroed:  # after zero_grad: None and zeros are the same answer
        expected = None if expected is None or (not isinstance(expected, str) and not np.any(expected)) \
            else expected
        produced = None if produced is None or (not isinstance(produced, str) and not np.any(produced)) \
            else produced
    if expected is None or produced is None:
        return expected is None and produced is None
    return _close(expected, produced)


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
                if not _close(ev["data"], pv["data"]):
                    out.append({"what": "value", "step": i, "value": value, "expected": ev["data"],
                                "produced": pv["data"]})
                out += _meta_diffs(meta, value, i, ev, pv)
            value += 1
        if step["kind"] == "zero_grad":
            zeroed.add(step["value"])
        if e["grads"] is not None and p["grads"] is not None and kind not in ERRORS_ONLY:
            ids = range(len(e["grads"])) if kind in ALL_GRADS else range(n_leaves)
            for v in ids:
                if not _same_grad(e["grads"][v], p["grads"][v], step["kind"] == "zero_grad"):
                    out.append({"what": "grad", "step": i, "value": v, "expected": e["grads"][v],
                                "produced": p["grads"][v]})
        if step["kind"] in ("backward", "backward_many"):
            zeroed.clear()
    return out


def _meta_diffs(meta, value, step, e, p):
    out = []
    if e is None or p is None:
        return out
    for field in meta:
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


# -- the search and the shrinking ------------------------------------------------

class Fuzzer:
    def __init__(self, proxy, kind: str, seed: int, device: str):
        self.proxy, self.kind, self.seed, self.device = proxy, kind, seed, device
        self.engine: dict[str, dict] = {}
        self.torch: dict[str, dict] = {}
        self.verdicts: dict[str, bool] = {}
        self.tried = 0
        self.calls = 0
        self.failing_calls = None  # worker calls when the first disagreement was found
        self.tries = 0
        self.best = None
        self.worker_s = self.torch_s = 0.0  # time in worker calls and in torch (for bench/)

    def results(self, batch):
        """(program, torch result, engine result) for each program of the
        batch; each program runs once (shrinking repeats most of a batch)."""
        keys = [json.dumps(p, sort_keys=True) for p in batch]
        missing = {}
        for key, program in zip(keys, batch):
            if key not in self.engine:
                missing.setdefault(key, program)
        if missing:
            start = time.perf_counter()
            try:
                produced = self.proxy.run(RUN_ENGINE_BATCH, list(missing.values()))
            except Exception as failure:  # the proxy's StudentFailure: not implemented, hang, crash
                raise _Abort(failure) from None
            self.calls += 1
            self.tried += len(missing)
            middle = time.perf_counter()
            for (key, program), result in zip(missing.items(), produced):
                self.engine[key] = unpack(json.loads(result) if isinstance(result, str) else result)
                self.torch[key] = run_torch(program, self.device)
            self.worker_s += middle - start
            self.torch_s += time.perf_counter() - middle
        return [(p, self.torch[k], self.engine[k]) for p, k in zip(batch, keys)]

    def disagrees(self, batch) -> bool:
        key = json.dumps(batch, sort_keys=True)
        if self.failing_calls is not None:
            self.tries += 1
            if self.tries > SHRINK_TRIES or (self.calls - self.failing_calls >= SHRINK_CALLS and any(
                    json.dumps(p, sort_keys=True) not in self.engine for p in batch)):
                raise _Stop()
        if key not in self.verdicts:
            self.verdicts[key] = any(compare(self.kind, p, e, r) for p, e, r in self.results(batch))
        found = self.verdicts[key]
        if found:
            # the shrinker only tries candidates smaller than the best so far
            self.best = batch
            if self.failing_calls is None:
                self.failing_calls = self.calls
        return found

    def _find(self, strategy, condition, max_examples, phases):
        from hypothesis import HealthCheck, Verbosity, find, settings

        config = settings(database=None, deadline=None, max_examples=max_examples,
                          suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet, phases=phases)
        return find(strategy, condition, settings=config, random=random.Random(self.seed))

    def run(self):
        """Search in batches (one worker call each, no shrinking); when a
        batch disagrees, search again program by program, from hypothesis's
        simplest programs on, and shrink the first that disagrees."""
        from hypothesis import Phase
        from hypothesis import strategies as st
        from hypothesis.errors import NoSuchExample

        single = P.STRATEGIES[self.kind]()
        if self.kind in P.SWEEPS:
            batches, examples = P.SWEEPS[self.kind](), SWEEP_EXAMPLES
        else:
            batches, examples = st.lists(single, min_size=1, max_size=BATCH), MAX_EXAMPLES
        try:
            batch = self._find(batches, self.disagrees, examples, (Phase.generate,))
        except NoSuchExample:
            return None
        except _Abort as abort:
            raise abort.failure from None
        fallback = next(p for p, e, r in self.results(batch) if compare(self.kind, p, e, r))
        self.failing_calls, self.best = None, None
        if self.kind in P.CASES and "case" in fallback:
            single = P.STRATEGIES[self.kind](case=fallback["case"])
        try:
            program = self._find(single, lambda p: self.disagrees([p]), SHRINK_SEARCH,
                                 (Phase.generate, Phase.shrink))
        except NoSuchExample:
            program = fallback
        except _Stop:
            program = self.best[0]
        except _Abort as abort:
            raise abort.failure from None
        ((program, expected, produced),) = self.results([program])
        return program, expected, produced, compare(self.kind, program, expected, produced)


def fuzz(proxy, kind: str, grade_rng, device: str = "cpu"):
    """None when the student's engine agrees with torch.autograd on every
    program tried, else the feedback for the smallest program that shows
    a disagreement."""
    fuzzer = Fuzzer(proxy, kind, int(grade_rng.seed), device)
    found = fuzzer.run()
    if found is None:
        return None
    program, expected, produced, diffs = found
    return feedback(kind, program, expected, produced, diffs, device, fuzzer)


def check(proxy, kind: str, grade_rng, device: str = "cpu") -> None:
    """Fail the check with the feedback of ``fuzz`` when there is one."""
    from ..outcomes import GradeFailure

    text = fuzz(proxy, kind, grade_rng, device)
    if text is not None:
        raise GradeFailure(text)


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
    names = P.names(program)
    text = P.render(program).splitlines()
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


def feedback(kind, program, expected, produced, diffs, device="cpu", fuzzer=None) -> str:
    ops = len(P.op_names(program))
    code = "\n".join("    " + line for line in P.render(program).splitlines()[3:])
    parts = [msg("engine.header", ops=ops), code]
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
    shapes = P.shapes_of(program)
    return any(s["kind"] == "op" and len(s["args"]) == 2 and s["op"] != "matmul"
               and shapes[s["args"][0]] != shapes[s["args"][1]] for s in program["steps"])


def diagnose(kind, program, expected, produced, diffs, device="cpu", fuzzer=None) -> str | None:
    first = diffs[0]
    steps = program["steps"]
    ops = P.op_names(program)
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
    if "matmul" in ops and (p is None or np.shape(p) != np.shape(e)):
        return msg("diag.engine.matmul_transposed")
    if _broadcasts(program) and (p is None or e is None or np.shape(p) != np.shape(e)):
        return msg("diag.engine.no_unbroadcast")
    earlier = [i for i in range(first["step"]) if steps[i]["kind"] in ("backward", "backward_many")]
    zeroing = [i for i in range(first["step"] + 1) if steps[i]["kind"] == "zero_grad" and steps[i]["value"] == value]
    if zeroing and e is not None or (steps[first["step"]]["kind"] == "zero_grad"):
        return msg("diag.engine.not_cleared")
    if earlier and e is not None and p is not None:
        before = expected["steps"][earlier[-1]]["grads"][value]
        if before is not None and _close(np.asarray(e) - np.asarray(before), p):
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
            b = P.Builder()
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
            weights = [0.5 + 0.25 * (i % 5) for i in range(P.numel(b.shapes[out]))]
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

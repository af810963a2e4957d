"""Run a program (``programs``) on the student's engine or in torch.autograd
and return what happened as plain data::

    {"values": [{"data": array | str, "requires_grad": bool, "is_leaf": bool,
                 "grad_fn": name | None} | None, ...],        # per value id, at creation
     "steps": [{"error": None | [type, message],
                "grads": [array | None | str, ...]}, ...]}   # per step; grads after backward / zero_grad

``run_engine`` runs in the student's worker and imports numpy only (not
torch, not hypothesis): the engine exercise is numpy-only, and its worker
may have neither. An
exception of the student's engine is data, except ``NotImplementedError``,
which propagates so that the proxy reports "not implemented yet"."""

from __future__ import annotations

import contextlib
import operator
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from ..boundary.shortening import shorten

Step = dict[str, Any]  # a program, a step or leaf of one, or a step's record: plain JSON data
Result = dict[str, list[Any]]  # {"values": [...], "steps": [...]}


def _array(x):
    """A float64 numpy array of a student's data or grad (an engine Tensor is
    unwrapped), or a short text saying what it was."""
    if x is None:
        return None
    inner = getattr(x, "data", None)
    if inner is not None and not isinstance(x, np.ndarray) and hasattr(x, "requires_grad"):
        x = inner
    try:
        return np.array(x, dtype=np.float64)
    except Exception:
        return f"<{type(x).__name__}>"


def _node_name(node):
    if node is None:
        return None
    if isinstance(node, str):
        return node
    return type(node).__name__


class _Engine:
    """The student's engine module, driven through its public API."""

    def __init__(self, module):
        self.m = module

    def leaf(self, values, shape, requires_grad):
        return self.m.Tensor(np.array(values, dtype=np.float64).reshape(shape), requires_grad=requires_grad)

    def const_tensor(self, values, shape):
        return self.m.Tensor(np.array(values, dtype=np.float64).reshape(shape))

    def no_grad(self):
        return self.m.no_grad()

    def sum(self, x, op, axis, keepdims):
        method = getattr(x, op)
        if axis is None and not keepdims:
            return method()
        return method(axis=axis, keepdims=keepdims)

    def reshape(self, x, shape):
        return x.reshape(*shape)

    def unary(self, x, op):
        if op == "T":
            return x.T
        return getattr(x, op)()

    def backward(self, x, gradient, retain_graph):
        kwargs = {}
        if gradient is not None:
            kwargs["gradient"] = gradient
        if retain_graph:
            kwargs["retain_graph"] = True
        x.backward(**kwargs)

    def backward_many(self, xs, grads, retain_graph):
        kwargs = {"retain_graph": True} if retain_graph else {}
        self.m.backward(xs, grad_tensors=grads, **kwargs)

    def zero_grad(self, x):
        x.zero_grad()

    def meta(self, x):
        return {
            "data": _array(x.data),
            "requires_grad": bool(x.requires_grad),
            "is_leaf": bool(x.is_leaf),
            "grad_fn": _node_name(x.grad_fn),
        }

    def grad(self, x):
        return _array(x.grad)


class _Torch(_Engine):
    def __init__(self, device):
        import torch

        self.torch = torch
        self.device = device

    def leaf(self, values, shape, requires_grad):
        t = self.torch.tensor(values, dtype=self.torch.float64, device=self.device).reshape(shape)
        return t.requires_grad_(requires_grad)

    def const_tensor(self, values, shape):
        return self.torch.tensor(values, dtype=self.torch.float64, device=self.device).reshape(shape)

    def no_grad(self):
        return self.torch.no_grad()

    def sum(self, x, op, axis, keepdims):
        method = getattr(x, op)
        if axis is None:
            return method() if not keepdims else method(dim=tuple(range(x.dim())), keepdim=True)
        return method(dim=axis, keepdim=keepdims)

    # A given gradient g is sent as the backward of (y * g).sum(), which
    # puts exactly g into y's backward: torch.autograd.backward with
    # grad_tensors imports sympy on its first call (~0.6 s, once per grading
    # process), a third of the topic's time budget.
    def backward(self, x, gradient, retain_graph):
        if gradient is not None and tuple(gradient.shape) != tuple(x.shape):
            x.backward(gradient, retain_graph=retain_graph or None)  # torch's own "Mismatch in shape"
            return
        self.backward_many([x], [gradient], retain_graph)

    def backward_many(self, xs, grads, retain_graph):
        roots = [x if g is None else (x * g).sum() for x, g in zip(xs, grads)]
        self.torch.autograd.backward(roots, retain_graph=retain_graph or None)

    def zero_grad(self, x):
        x.grad = None

    def meta(self, x):
        return {
            "data": x.detach().cpu().numpy().astype(np.float64),
            "requires_grad": x.requires_grad,
            "is_leaf": x.is_leaf,
            "grad_fn": _node_name(x.grad_fn),
        }

    def grad(self, x):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = x.grad
        return None if g is None else g.detach().cpu().numpy().astype(np.float64)


# the ops of a program, as the student's code would write them
_BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "matmul": operator.matmul,
}
_WITH_CONST = {"add_c": operator.add, "mul_c": operator.mul, "pow": operator.pow, "rsub_c": lambda x, c: c - x}


def _apply(api: _Engine, step: Step, args: list[Any]) -> Any:
    op = step["op"]
    if op in _BINARY:
        return _BINARY[op](args[0], args[1])
    if op in _WITH_CONST:
        return _WITH_CONST[op](args[0], step["const"])
    if op == "neg":
        return -args[0]
    if op in ("sum", "mean"):
        return api.sum(args[0], op, step.get("axis"), step.get("keepdims", False))
    if op == "reshape":
        return api.reshape(args[0], step["shape"])
    return api.unary(args[0], op)


def _error(e: Exception) -> list[str]:
    return [type(e).__name__, shorten(str(e), 300)]


def _make_leaf(api: _Engine, leaf: Step, values: list[Any], out: Result) -> None:
    try:
        t = api.leaf(leaf["values"], leaf["shape"], leaf["requires_grad"])
        values.append(t)
        out["values"].append(api.meta(t))
    except NotImplementedError:
        raise
    except Exception as e:  # the student's engine failed: that is data
        values.append(None)
        out["values"].append(None)
        out["steps"].append({"error": _error(e), "grads": None, "leaf": True})


def _op_step(api: _Engine, step: Step, values: list[Any], out: Result, record: Step) -> None:
    args = [values[i] for i in step["args"]]
    for k in step.get("detach_args", ()):  # the grader's diagnosis only: that use cut off
        args[k] = args[k].detach()
    values.append(None)
    out["values"].append(None)
    if any(a is None for a in args):
        record["error"] = ["Skipped", ""]
        return
    with api.no_grad() if step.get("no_grad") else contextlib.nullcontext():
        result = _apply(api, step, args)
    values[-1] = result
    out["values"][-1] = api.meta(result)


def _backward_step(api: _Engine, step: Step, values: list[Any], out: Result, record: Step) -> None:
    x = values[step["value"]]
    g = step.get("gradient")
    if g is not None:
        g = api.const_tensor(g, step["gradient_shape"])
    api.backward(x, g, step.get("retain_graph", False))


def _backward_many_step(api: _Engine, step: Step, values: list[Any], out: Result, record: Step) -> None:
    xs = [values[i] for i in step["values"]]
    grads = [
        None if g is None else api.const_tensor(g, shape) for shape, g in zip(step["grad_shapes"], step["grad_tensors"])
    ]
    api.backward_many(xs, grads, step.get("retain_graph", False))


def _zero_grad_step(api: _Engine, step: Step, values: list[Any], out: Result, record: Step) -> None:
    api.zero_grad(values[step["value"]])


def _retain_grad_step(api: _Engine, step: Step, values: list[Any], out: Result, record: Step) -> None:
    values[step["value"]].retain_grad()
    record["retains_grad"] = bool(values[step["value"]].retains_grad)


_STEPS: dict[str, Callable[[_Engine, Step, list[Any], Result, Step], None]] = {
    "op": _op_step,
    "backward": _backward_step,
    "backward_many": _backward_many_step,
    "zero_grad": _zero_grad_step,
    "retain_grad": _retain_grad_step,
}
_CHANGES_GRADS = ("backward", "backward_many", "zero_grad")  # steps after which every .grad is read


def _grads(api: _Engine, values: list[Any]) -> list[Any]:
    """Every value's .grad (None for a value never made), or a short text
    of the error reading it raised."""
    grads: list[Any] = []
    for t in values:
        try:
            grads.append(None if t is None else api.grad(t))
        except NotImplementedError:
            raise
        except Exception as e:
            grads.append(f"<{type(e).__name__}>")
    return grads


def _interpret(api: _Engine, program: Step) -> Result:
    values: list[Any] = []
    out: Result = {"values": [], "steps": []}
    for leaf in program["leaves"]:
        _make_leaf(api, leaf, values, out)
    for step in program["steps"]:
        record: Step = {"error": None, "grads": None}
        try:
            run = _STEPS.get(step["kind"])
            if run is not None:
                run(api, step, values, out, record)
        except NotImplementedError:
            raise
        except Exception as e:
            record["error"] = _error(e)
        if step["kind"] in _CHANGES_GRADS:
            record["grads"] = _grads(api, values)
        out["steps"].append(record)
    return out


def pack(tree: Any) -> Any:
    """Arrays as {"shape": [...], "flat": [...]}: plain data that crosses the
    worker boundary with its shape (0-d included) intact."""
    if isinstance(tree, np.ndarray):
        return {"shape": list(tree.shape), "flat": [float(x) for x in tree.ravel()]}
    if isinstance(tree, dict):
        return {k: pack(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [pack(v) for v in tree]
    return tree


def unpack(tree: Any) -> Any:
    """The inverse of ``pack`` (in the grader)."""
    if isinstance(tree, dict):
        if set(tree) == {"shape", "flat"}:
            return np.array(tree["flat"], dtype=np.float64).reshape(tree["shape"])
        return {k: unpack(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [unpack(v) for v in tree]
    return tree


def unpack_text(text: str) -> Any:
    """``unpack(json.loads(text))``, the arrays made as the parser meets
    them: a third of the time of walking the parsed tree again."""
    import json

    return json.loads(text, object_hook=_unpack_object)


def _unpack_object(tree: dict[str, Any]) -> Any:
    if len(tree) == 2 and "shape" in tree and "flat" in tree:
        return np.array(tree["flat"], dtype=np.float64).reshape(tree["shape"])
    return tree


def run_engine(module: ModuleType, program: Step) -> Any:
    """``program`` on the student's engine ``module`` (in the worker)."""
    return pack(_run_engine(module, program))


def _run_engine(module: ModuleType, program: Step) -> Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return _interpret(_Engine(module), program)


def _packed_array(value: Any) -> dict[str, Any]:
    """``json.dumps``'s ``default``: an array as ``pack`` gives it, so that
    the encoder walks the rest of the result in C (``pack`` in Python was a
    fifth of the worker's time). Anything else JSON cannot hold fails as
    it would after ``pack``."""
    if isinstance(value, np.ndarray):
        flat = value.ravel()
        if flat.dtype.kind in "fiub":  # numbers: converted in C, to the same floats float() gives
            return {"shape": list(value.shape), "flat": flat.astype(np.float64).tolist()}
        return {"shape": list(value.shape), "flat": [float(x) for x in flat]}
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def run_engine_batch(module: ModuleType, programs: str | list[Step]) -> list[str]:
    """Several programs in one worker call, given as one JSON text and each
    result as one JSON text: a string crosses the worker boundary in one
    piece where nested lists and dicts are encoded and checked node by node
    (a third of an engine check's time in the grader), and ``json.loads``
    runs no code."""
    import json

    batch: list[Step] = json.loads(programs) if isinstance(programs, str) else programs
    return [json.dumps(_run_engine(module, p), default=_packed_array) for p in batch]


def run_torch(program: Step, device: str = "cpu") -> Result:
    """``program`` in torch.autograd, float64 on ``device`` (in the grader)."""
    return _interpret(_Torch(device), program)

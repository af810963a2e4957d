"""How a student's answer was computed: the autograd trace of one call.

The worker records, while a student function runs, every torch function it
calls (through a ``TorchFunctionMode``, torch's own hook for this, which
also sees ``Tensor.backward``, ``torch.autograd.grad``, property reads and
factory functions), with the grad mode in force and the graph node each
op created. The trace travels back as plain data beside the answer; the
grader reads it under limits into a ``Trace``, which checks use to enforce
what a docstring asks ("by hand", "one backward over both losses") and
diagnoses use to name a mistake ("the first backward kept the graph").

The trace is what the student's process reports: code that rewrites the
worker can hide calls from it. It is evidence about honest work, never a
substitute for the values the grader recomputes. The cheapest ways to hide
a call are caught in the worker at the end of the call (``TAMPERED``: the
recording mode gone from torch's stack, torch's backward or grad replaced,
the recorder's code changed, the autograd engine run more often than the
mode saw backward and grad called), and a check that reads such a trace
loses its instruction's share.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from . import call_facts
from .call_facts import RaisedError, Retained

MAX_OPS = 5000  # ops kept in order; later ones are only counted
MAX_CALLS = 200  # backward / autograd.grad calls kept
MAX_OPS_TEXT = 60_000  # characters of the ops' text (one string: a trace costs the answer few items)

# torch functions that make a tensor out of nothing (or out of Python data)
FACTORIES = frozenset({
    "tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "empty", "full", "rand", "randn", "randint",
    "randperm", "arange", "linspace", "logspace", "eye", "zeros_like", "ones_like", "empty_like", "full_like",
    "rand_like", "randn_like", "randint_like", "scalar_tensor", "normal",
})
_BACKWARD = {"backward": "backward", "grad": "autograd.grad"}  # call kind -> its op name
# what the worker finds changed at the end of a call, when the student's code
# reached into the recording (its cheapest forgeries)
TAMPERED = ("mode_removed", "entry_points", "recorder_patched", "engine_unseen")
_ENTRY_POINTS: tuple = ()  # torch's backward and grad as the worker found them, before any student code
_BACKWARD_NAMES = frozenset({"backward", "grad"})  # __name__ of Tensor.backward, autograd.backward/grad


@dataclass(frozen=True)
class Op:
    """One torch function the student's code called: its name (a property
    read is its attribute's name, a property write ``name=``), whether
    gradients were being recorded, and the class name of the graph node the
    op created ("" when it created none)."""

    name: str
    grad_enabled: bool
    node: str = ""


@dataclass(frozen=True)
class BackwardCall:
    """One ``Tensor.backward``/``torch.autograd.backward`` (``kind``
    "backward") or ``torch.autograd.grad`` (``kind`` "grad") call."""

    kind: str
    retain_graph: bool | None  # as passed; None when left out (then it follows create_graph)
    create_graph: bool
    outputs: int  # tensors differentiated
    gradient: bool  # a gradient / grad_outputs / grad_tensors argument was passed
    inputs: int | None  # tensors asked for (autograd.grad's inputs, backward's inputs=)
    raised: str = ""  # the exception's type name when the call raised
    scalar: bool = True  # every tensor differentiated was real and had one element
    no_graph: bool = False  # a tensor differentiated did not require grad
    # per positional argument of the student function: the gradient this
    # call added to that leaf's .grad (autograd.grad: returned for it), None
    # where it added none (or the trace's budget for them ran out)
    added: tuple = ()
    # when it raised: whether a graph an earlier call freed (no retain_graph)
    # shares a node with its own; None when that was too large to tell
    through_freed: bool | None = None

    @property
    def keeps_graph(self) -> bool:
        """Whether the graph survived this call (``retain_graph`` defaults to
        ``create_graph``)."""
        return bool(self.create_graph if self.retain_graph is None else self.retain_graph)


@dataclass(frozen=True)
class Trace:
    """The autograd trace of one student call (``submission.trace``)."""

    ops: tuple[Op, ...] = ()
    calls: tuple[BackwardCall, ...] = ()
    dropped: int = 0  # ops past MAX_OPS, counted but not kept
    grad_mode_end: bool = True  # whether gradients were on when the function returned
    tampered: tuple[str, ...] = ()  # what the student's code changed of the recording (TAMPERED)
    errors: tuple[RaisedError, ...] = ()  # torch calls that raised (ErrorRecord.raised_at points here)
    retained: tuple[Retained, ...] = ()  # what retain_grad() was called on, one entry per tensor

    @property
    def backward_calls(self) -> tuple[BackwardCall, ...]:
        return tuple(c for c in self.calls if c.kind == "backward")

    @property
    def completed_calls(self) -> int:
        """Backward and autograd.grad calls that did not raise."""
        return sum(not call.raised for call in self.calls)

    @property
    def grad_calls(self) -> tuple[BackwardCall, ...]:
        return tuple(c for c in self.calls if c.kind == "grad")

    @property
    def nodes(self) -> tuple[str, ...]:
        """Class names of the graph nodes the call created, in order."""
        return tuple(op.node for op in self.ops if op.node)

    def count(self, *names: str) -> int:
        """How many ops had one of these names (``trace.count("detach")``)."""
        return sum(op.name in names for op in self.ops)

    def nodes_named(self, *names: str) -> int:
        return sum(node in names for node in self.nodes)

    @property
    def tensors_created(self) -> int:
        """Calls of factory functions (torch.tensor, zeros, randn, ...)."""
        return sum(op.name in FACTORIES for op in self.ops)

    @property
    def ops_without_grad(self) -> tuple[Op, ...]:
        """Ops run while gradients were off (under ``torch.no_grad()``)."""
        return tuple(op for op in self.ops if not op.grad_enabled and op.name not in _MODE_SWITCHES)

    @property
    def updated_in_place_without_grad(self) -> bool:
        """Whether some tensor was changed in place with gradients off (a
        parameter update under ``torch.no_grad()``, or an optimizer's step)."""
        return any((op.name.endswith("_") and not op.name.endswith("__") and op.name != "zero_")
                   or op.name in ("__setitem__", "__isub__", "__iadd__") for op in self.ops_without_grad)

    @property
    def tensor_ops(self) -> tuple[Op, ...]:
        """Ops that compute or create tensors: everything but property reads,
        grad-mode switches and backward calls."""
        return tuple(op for op in self.ops if op.name not in _NOT_TENSOR_OPS and not op.name.endswith("="))


_MODE_SWITCHES = frozenset({"_set_grad_enabled", "set_grad_enabled"})
_PROPERTIES = frozenset({"grad", "grad_fn", "is_leaf", "requires_grad", "data", "shape", "dtype", "device",
                         "retains_grad", "_version", "T", "mT", "H", "mH", "ndim", "names", "layout", "output_nr",
                         "_base", "is_cuda", "_cdata", "__get__", "__len__", "dim", "size", "numel", "item",
                         "tolist", "__bool__", "__float__", "__int__", "__index__", "__format__", "__repr__",
                         "__hash__", "__iter__", "__contains__", "__array__", "numpy", "retain_grad", "element_size",
                         "is_floating_point", "is_complex", "stride", "storage_offset", "data_ptr", "__reduce_ex__",
                         "__deepcopy__", "register_hook", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"})
_NOT_TENSOR_OPS = _PROPERTIES | _MODE_SWITCHES | frozenset(_BACKWARD.values())


# -- the worker's side ----------------------------------------------------------

def _name(func: Any) -> str:
    name = getattr(func, "__name__", None) or type(func).__name__
    if name in ("__get__", "__set__"):
        owner = getattr(getattr(func, "__self__", None), "__name__", None)
        if owner:
            return owner + ("=" if name == "__set__" else "")
    return str(name)


def _flatten(value: Any, out: list, depth: int = 0) -> list:
    if depth < 3:
        if isinstance(value, (tuple, list)):
            for item in value[:64]:
                _flatten(item, out, depth + 1)
        elif isinstance(value, dict):
            for item in list(value.values())[:64]:
                _flatten(item, out, depth + 1)
        else:
            out.append(value)
    return out


def _count_tensors(value: Any) -> int:
    import torch

    return sum(isinstance(t, torch.Tensor) for t in _flatten(value, []))


def _backward_call(kind: str, args: tuple, kwargs: dict) -> tuple[dict, dict]:
    """What a backward or autograd.grad call asked for, read from its
    arguments as torch's own signatures name them; and those arguments."""
    if kind == "backward":  # Tensor.backward(self, gradient, retain_graph, create_graph, inputs)
        names = ("tensors", "grad_tensors", "retain_graph", "create_graph", "grad_variables", "inputs")
        if kwargs.get("gradient") is not None or ("gradient" in kwargs):
            kwargs = {**kwargs, "grad_tensors": kwargs.get("gradient")}
    else:  # autograd.grad(outputs, inputs, grad_outputs, retain_graph, create_graph, ...)
        names = ("outputs", "inputs", "grad_outputs", "retain_graph", "create_graph")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    gradient = bound.get("grad_tensors") if kind == "backward" else bound.get("grad_outputs")
    retain = bound.get("retain_graph")
    inputs = bound.get("inputs")
    return {
        "kind": kind,
        "retain_graph": None if retain is None else bool(retain),
        "create_graph": bool(bound.get("create_graph") or False),
        "outputs": _count_tensors(bound.get("tensors" if kind == "backward" else "outputs")),
        "gradient": gradient is not None and any(g is not None for g in _flatten(gradient, [])),
        "inputs": None if inputs is None else _count_tensors(inputs),
        "raised": "",
    }, bound


def recorder():
    """A ``TorchFunctionMode`` that records into ``.ops``/``.calls``; used
    as ``with recorder() as rec: ...`` around one student call. It runs on
    every torch call the student makes, so its common path does little:
    top-level arguments only, names cached, text made once at the end."""
    import torch
    from torch.autograd import Variable
    from torch.overrides import TorchFunctionMode

    def entry_points() -> tuple:
        return (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad,
                type(Variable._execution_engine), torch._C._ImperativeEngine)

    global _ENTRY_POINTS
    if not _ENTRY_POINTS:
        # the zygote's warm-up makes the first recorder, before student code runs
        counting = call_facts.count_engine_runs(torch)
        _ENTRY_POINTS = entry_points()
        assert _ENTRY_POINTS[3:] == (counting, counting)
    kinds = dict(zip(_ENTRY_POINTS, ("backward", "backward", "grad")))
    engine_codes = frozenset({_ENTRY_POINTS[3].run_backward.__code__})
    tensor = torch.Tensor
    is_grad_enabled = torch.is_grad_enabled
    names: dict = {}

    class Recorder(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.ops: list = []
            self.calls: list = []
            self.dropped = 0
            self.size = 0
            self.left_stack = False  # set by student._traced: the recorder was gone at the end
            self.engine_runs = 0  # set by student._traced: the engine's runs during the call
            self.seen_runs = 0  # the engine's runs inside the backward and grad calls recorded
            self.facts = call_facts.start()

        def watch(self, args: tuple) -> None:
            """The student function's positional arguments: what each
            backward call adds to those that are leaves is kept."""
            self.facts.watch(args)

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            try:
                name = names[func]
            except (KeyError, TypeError):
                name = _name(func)
                if len(names) < 4096:
                    try:
                        names[func] = name
                    except TypeError:
                        pass
            enabled = is_grad_enabled()
            kind = kinds.get(func) if name in _BACKWARD_NAMES else None
            if kind or name in _PROPERTIES or name.endswith("="):
                return self._call(func, args, kwargs, kind, name, enabled)
            # a node is new unless an argument already had it (in-place ops
            # replace their tensor's grad_fn, views of views keep theirs)
            before = [a.grad_fn for a in args if isinstance(a, tensor)]
            try:
                result = func(*args, **kwargs)
            except Exception as exc:
                _safely(self.facts.raised, exc, name, args)
                raise
            out = result
            if not isinstance(out, tensor) and isinstance(out, (tuple, list)) and out:
                out = out[0]
            node = ""
            if isinstance(out, tensor):
                fn = out.grad_fn
                if fn is not None and all(fn is not b for b in before):
                    node = type(fn).__name__
            self._op(name, enabled, node)
            return result

        def _call(self, func, args, kwargs, kind, name, enabled):
            if name == "retain_grad":
                _safely(self.facts.retain, args)
            call, bound = _backward_call(kind, args, kwargs) if kind else (None, None)
            index = -1
            if call is not None:
                index = len(self.calls) if len(self.calls) < MAX_CALLS else -1
                self.calls.append(call)
                name = _BACKWARD[kind]
                state = _safely(self.facts.before, call, kind, bound.get("tensors", bound.get("outputs")))
            runs = call_facts.ENGINE_RUNS[0]
            try:
                result = func(*args, **kwargs)
            except BaseException as exc:
                if call is not None:
                    call["raised"] = type(exc).__name__
                    if state is not None:
                        call["through_freed"] = _safely(self.facts.through_freed, state[0])
                if isinstance(exc, Exception):
                    _safely(self.facts.raised, exc, name, args, index, sys._getframe(), engine_codes)
                raise
            finally:
                # with nested runs: a custom backward that calls grad runs while this mode is off
                self.seen_runs += call_facts.ENGINE_RUNS[0] - runs
                self._op(name, enabled, "")
            if call is not None and state is not None:
                keeps = bool(call["create_graph"] if call["retain_graph"] is None else call["retain_graph"])
                _safely(self.facts.after, call, kind, state, bound.get("inputs"), result, keeps)
            return result

        def _op(self, name: str, enabled: bool, node: str) -> None:
            size = self.size + len(name) + len(node) + 4
            if len(self.ops) < MAX_OPS and size <= MAX_OPS_TEXT:
                self.ops.append((name, enabled, node))
                self.size = size
            else:
                self.dropped += 1

        def plain(self, value: Any = None) -> dict:  # value: what the student function returned
            ops = "\n".join(f"{name[:64]}\t{int(enabled)}\t{node[:64]}" for name, enabled, node in self.ops)
            return {"ops": ops, "calls": self.calls[:MAX_CALLS], "dropped": self.dropped,
                    "grad_mode_end": torch.is_grad_enabled(), "tampered": self.tampered(),
                    "errors": self.facts.errors, "retained": _safely(self.facts.retained_on, value) or []}

        def tampered(self) -> list[str]:
            """What the student's code changed of the recording: a cheap
            forgery fails here; code that rewrites this check too is not
            caught, which is why the trace decides instructions, never values."""
            found = []
            if self.left_stack:
                found.append("mode_removed")
            if entry_points() != _ENTRY_POINTS:
                found.append("entry_points")
            if any(name in vars(self) or getattr(type(self), name) is not original
                   for name, original in originals.items()):
                found.append("recorder_patched")
            if self.engine_runs > self.seen_runs:
                found.append("engine_unseen")
            return found

    # the recorder's own methods, as defined: replaced on its class or shadowed on it, they record nothing
    originals = {name: getattr(Recorder, name) for name in ("__torch_function__", "_call", "_op", "plain", "tampered")}
    return Recorder()


def _safely(step, *args):
    """A fact the recorder gathers for the grader never breaks the student's call."""
    try:
        return step(*args)
    except Exception:
        return None


engine_runs = call_facts.engine_runs


# -- the grader's side -------------------------------------------------------------

class TraceError(ValueError):
    """A trace that is not in the recorder's format (forged or broken)."""


def _field(value: Any, kinds: tuple, what: str) -> Any:
    return call_facts._typed(value, kinds, what, TraceError)


def read(tree: Any) -> Trace:
    """The ``Trace`` of a plain tree from the worker; anything malformed
    raises ``TraceError``. Sizes are already bounded by ``records.Limits``
    (the trace is part of the answer)."""
    if tree is None:
        return Trace()
    _field(tree, (dict,), "trace")
    ops = []
    text = _field(tree.get("ops", ""), (str,), "ops")
    for line in text.split("\n")[:MAX_OPS] if text else ():
        parts = line.split("\t")
        if len(parts) != 3 or parts[1] not in ("0", "1"):
            raise TraceError("op")
        ops.append(Op(parts[0][:64], parts[1] == "1", parts[2][:64]))
    calls = []
    for entry in _field(tree.get("calls", []), (list,), "calls")[:MAX_CALLS]:
        _field(entry, (dict,), "call")
        kind = _field(entry.get("kind"), (str,), "kind")
        if kind not in _BACKWARD:
            raise TraceError("kind")
        calls.append(BackwardCall(
            kind=kind,
            retain_graph=_field(entry.get("retain_graph"), (bool, type(None)), "retain_graph"),
            create_graph=_field(entry.get("create_graph", False), (bool,), "create_graph"),
            outputs=_field(entry.get("outputs", 0), (int,), "outputs"),
            gradient=_field(entry.get("gradient", False), (bool,), "gradient"),
            inputs=_field(entry.get("inputs"), (int, type(None)), "inputs"),
            raised=_field(entry.get("raised", ""), (str,), "raised")[:64],
            scalar=_field(entry.get("scalar", True), (bool,), "scalar"),
            no_graph=_field(entry.get("no_graph", False), (bool,), "no_graph"),
            added=call_facts.read_added(entry.get("added", []), TraceError),
            through_freed=_field(entry.get("through_freed"), (bool, type(None)), "through_freed"),
        ))
    tampered = _field(tree.get("tampered", []), (list,), "tampered")
    if any(how not in TAMPERED for how in tampered):
        raise TraceError("tampered")
    return Trace(ops=tuple(ops), calls=tuple(calls), dropped=_field(tree.get("dropped", 0), (int,), "dropped"),
                 grad_mode_end=_field(tree.get("grad_mode_end", True), (bool,), "grad_mode_end"),
                 tampered=tuple(dict.fromkeys(tampered)),
                 errors=call_facts.read_errors(tree.get("errors", []), TraceError),
                 retained=call_facts.read_retained(tree.get("retained", []), TraceError))

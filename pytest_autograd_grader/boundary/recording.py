"""The worker's side of the trace (``tracing.py``): the recorder that sees,
while a student function runs, every torch function it calls, and hands the
grader the plain data ``tracing.read`` turns into a ``Trace``.

It runs inside the student's process, on every torch call the student
makes: its common path does little, and what the student's code can change
of it is checked at the end of the call (``TAMPERED``).
"""

from __future__ import annotations

import sys
from typing import Any

from . import call_facts

MAX_OPS = 5000  # ops kept in order; later ones are only counted
MAX_CALLS = 200  # backward / autograd.grad calls kept
MAX_OPS_TEXT = 60_000  # characters of the ops' text (one string: a trace costs the answer few items)
BACKWARD_OPS = {"backward": "backward", "grad": "autograd.grad"}  # call kind -> its op name
# what the worker finds changed at the end of a call, when the student's code
# reached into the recording (its cheapest forgeries)
TAMPERED = ("mode_removed", "entry_points", "recorder_patched", "engine_unseen")
_ENTRY_POINTS: tuple = ()  # torch's backward and grad as the worker found them, before any student code
_BACKWARD_NAMES = frozenset({"backward", "grad"})  # __name__ of Tensor.backward, autograd.backward/grad
# ops recorded without a graph node: property reads and what does not compute a tensor
PROPERTIES = frozenset(
    {
        "grad",
        "grad_fn",
        "is_leaf",
        "requires_grad",
        "data",
        "shape",
        "dtype",
        "device",
        "retains_grad",
        "_version",
        "T",
        "mT",
        "H",
        "mH",
        "ndim",
        "names",
        "layout",
        "output_nr",
        "_base",
        "is_cuda",
        "_cdata",
        "__get__",
        "__len__",
        "dim",
        "size",
        "numel",
        "item",
        "tolist",
        "__bool__",
        "__float__",
        "__int__",
        "__index__",
        "__format__",
        "__repr__",
        "__hash__",
        "__iter__",
        "__contains__",
        "__array__",
        "numpy",
        "retain_grad",
        "element_size",
        "is_floating_point",
        "is_complex",
        "stride",
        "storage_offset",
        "data_ptr",
        "__reduce_ex__",
        "__deepcopy__",
        "register_hook",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
    }
)


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
    names: tuple[str, ...]
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


def _entry_points(torch: Any, variable: Any) -> tuple:
    """torch's backward and grad, and the autograd engine's classes, as they stand now."""
    return (
        torch.Tensor.backward,
        torch.autograd.backward,
        torch.autograd.grad,
        type(variable._execution_engine),
        torch._C._ImperativeEngine,
    )


def recorder() -> Any:
    """A ``TorchFunctionMode`` that records into ``.ops``/``.calls``; used
    as ``with recorder() as rec: ...`` around one student call. It runs on
    every torch call the student makes, so its common path does little:
    top-level arguments only, names cached, text made once at the end."""
    import torch
    from torch.autograd import Variable
    from torch.overrides import TorchFunctionMode

    global _ENTRY_POINTS
    if not _ENTRY_POINTS:
        # the zygote's warm-up makes the first recorder, before student code runs
        counting = call_facts.count_engine_runs(torch)
        _ENTRY_POINTS = _entry_points(torch, Variable)
        assert _ENTRY_POINTS[3:] == (counting, counting)
    # a class of its own for each recorder, the methods on it: code that patches
    # the class it finds on torch's mode stack changes this recorder only, and
    # the patch shows against _RECORDING
    return type("Recorder", (_Recording, TorchFunctionMode), dict(_METHODS))(torch, Variable)


class _Recording:
    """What a recorder holds and does; ``recorder`` puts its methods on a
    ``TorchFunctionMode`` (torch is imported only there)."""

    def __init__(self, torch: Any, variable: Any) -> None:
        super().__init__()
        self.ops: list = []
        self.calls: list = []
        self.dropped = 0
        self.size = 0
        self.left_stack = False  # set by student._traced: the recorder was gone at the end
        self.engine_runs = 0  # set by student._traced: the engine's runs during the call
        self.seen_runs = 0  # the engine's runs inside the backward and grad calls recorded
        self.facts = call_facts.start()
        self._torch, self._variable = torch, variable
        # looked up once: the common path runs on every torch call the student makes
        self._tensor, self._is_grad_enabled = torch.Tensor, torch.is_grad_enabled
        self._names: dict = {}
        self._kinds = dict(zip(_ENTRY_POINTS, ("backward", "backward", "grad")))
        self._engine_codes = frozenset({_ENTRY_POINTS[3].run_backward.__code__})

    def watch(self, args: tuple) -> None:
        """The student function's positional arguments: what each
        backward call adds to those that are leaves is kept."""
        self.facts.watch(args)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = self._name_of(func)
        enabled = self._is_grad_enabled()
        kind = self._kinds.get(func) if name in _BACKWARD_NAMES else None
        if kind or name in PROPERTIES or name.endswith("="):
            return self._call(func, args, kwargs, kind, name, enabled)
        # a node is new unless an argument already had it (in-place ops
        # replace their tensor's grad_fn, views of views keep theirs)
        before = [a.grad_fn for a in args if isinstance(a, self._tensor)]
        try:
            result = func(*args, **kwargs)
        except Exception as exc:
            _safely(self.facts.raised, exc, name, args)
            raise
        self._op(name, enabled, self._new_node(result, before))
        return result

    def _name_of(self, func: Any) -> str:
        names = self._names
        try:
            return names[func]
        except (KeyError, TypeError):
            name = _name(func)
            if len(names) < 4096:
                try:
                    names[func] = name
                except TypeError:
                    pass
            return name

    def _new_node(self, result: Any, before: list) -> str:
        """The class name of the graph node the op's result (its first item)
        got from the op; "" when none, or an argument had it already."""
        out = result
        if not isinstance(out, self._tensor) and isinstance(out, (tuple, list)) and out:
            out = out[0]
        if isinstance(out, self._tensor):
            fn = out.grad_fn
            if fn is not None and all(fn is not b for b in before):
                return type(fn).__name__
        return ""

    def _call(self, func, args, kwargs, kind, name, enabled):
        if name == "retain_grad":
            _safely(self.facts.retain, args)
        started = self._start_backward(kind, args, kwargs) if kind else None
        if started is not None:
            name = BACKWARD_OPS[kind]
        runs = call_facts.ENGINE_RUNS[0]
        try:
            result = func(*args, **kwargs)
        except BaseException as exc:
            # this frame is where the call was made: own_code_raised reads the frames below it
            self._call_raised(exc, started, name, args, sys._getframe())
            raise
        finally:
            # with nested runs: a custom backward that calls grad runs while this mode is off
            self.seen_runs += call_facts.ENGINE_RUNS[0] - runs
            self._op(name, enabled, "")
        if started is not None:
            self._end_backward(started, result)
        return result

    def _start_backward(self, kind: str, args: tuple, kwargs: dict) -> tuple:
        """A backward or autograd.grad call about to run: its entry in
        ``calls``, its arguments, its index (-1 past MAX_CALLS), its kind and
        the facts' state before it."""
        call, bound = _backward_call(kind, args, kwargs)
        index = len(self.calls) if len(self.calls) < MAX_CALLS else -1
        self.calls.append(call)
        state = _safely(self.facts.before, call, kind, bound.get("tensors", bound.get("outputs")))
        return call, bound, index, kind, state

    def _call_raised(self, exc: BaseException, started: tuple | None, name: str, args: tuple, frame: Any) -> None:
        index = -1
        if started is not None:
            call, _, index, _, state = started
            call["raised"] = type(exc).__name__
            if state is not None:
                call["through_freed"] = _safely(self.facts.through_freed, state[0])
        if isinstance(exc, Exception):
            _safely(self.facts.raised, exc, name, args, index, frame, self._engine_codes)

    def _end_backward(self, started: tuple, result: Any) -> None:
        call, bound, _, kind, state = started
        if state is not None:
            keeps = bool(call["create_graph"] if call["retain_graph"] is None else call["retain_graph"])
            _safely(self.facts.after, call, kind, state, bound.get("inputs"), result, keeps)

    def _op(self, name: str, enabled: bool, node: str) -> None:
        size = self.size + len(name) + len(node) + 4
        if len(self.ops) < MAX_OPS and size <= MAX_OPS_TEXT:
            self.ops.append((name, enabled, node))
            self.size = size
        else:
            self.dropped += 1

    def plain(self, value: Any = None) -> dict:  # value: what the student function returned
        ops = "\n".join(f"{name[:64]}\t{int(enabled)}\t{node[:64]}" for name, enabled, node in self.ops)
        return {
            "ops": ops,
            "calls": self.calls[:MAX_CALLS],
            "dropped": self.dropped,
            "grad_mode_end": self._torch.is_grad_enabled(),
            "tampered": self.tampered(),
            "errors": self.facts.errors,
            "retained": _safely(self.facts.retained_on, value) or [],
        }

    def tampered(self) -> list[str]:
        """What the student's code changed of the recording: a cheap
        forgery fails here; code that rewrites this check too is not
        caught, which is why the trace decides instructions, never values."""
        found = []
        if self.left_stack:
            found.append("mode_removed")
        if _entry_points(self._torch, self._variable) != _ENTRY_POINTS:
            found.append("entry_points")
        if any(
            name in vars(self) or getattr(type(self), name) is not original for name, original in _RECORDING.items()
        ):
            found.append("recorder_patched")
        if self.engine_runs > self.seen_runs:
            found.append("engine_unseen")
        return found


# the recorder's methods, as defined (before any student code ran); those
# that record, replaced on its class or shadowed on it, record nothing
_METHODS = {name: value for name, value in vars(_Recording).items() if callable(value)}
_RECORDING = {
    name: _METHODS[name]
    for name in (
        "__torch_function__",
        "_name_of",
        "_new_node",
        "_call",
        "_start_backward",
        "_call_raised",
        "_end_backward",
        "_op",
        "plain",
        "tampered",
    )
}


def _safely(step, *args):
    """A fact the recorder gathers for the grader never breaks the student's call."""
    try:
        return step(*args)
    except Exception:
        return None


engine_runs = call_facts.engine_runs

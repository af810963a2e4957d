"""How a student's answer was computed: the autograd trace of one call.

The worker records, while a student function runs, every torch function it
calls (through a ``TorchFunctionMode``, torch's own hook for this, which
also sees ``Tensor.backward``, ``torch.autograd.grad``, property reads and
factory functions), with the grad mode in force and the graph node each
op created (``recording.py``, whose ``recorder`` is re-exported here). The
trace travels back as plain data beside the answer; the grader reads it
under limits into a ``Trace``, which checks use to enforce what a
docstring asks ("by hand", "one backward over both losses") and
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

from dataclasses import dataclass
from typing import Any

from . import call_facts
from .call_facts import RaisedError, Retained

# the worker's side (re-exported: the worker calls tracing.recorder), and the
# recording's limits and words the grader reads a trace by
from .recording import BACKWARD_OPS as _BACKWARD
from .recording import MAX_CALLS, MAX_OPS, TAMPERED
from .recording import PROPERTIES as _PROPERTIES
from .recording import engine_runs as engine_runs
from .recording import recorder as recorder

# torch functions that make a tensor out of nothing (or out of Python data)
FACTORIES = frozenset(
    {
        "tensor",
        "as_tensor",
        "asarray",
        "from_numpy",
        "zeros",
        "ones",
        "empty",
        "full",
        "rand",
        "randn",
        "randint",
        "randperm",
        "arange",
        "linspace",
        "logspace",
        "eye",
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "rand_like",
        "randn_like",
        "randint_like",
        "scalar_tensor",
        "normal",
    }
)


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
    added: tuple[Any, ...] = ()  # torch tensors, or None
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
        return any(
            (op.name.endswith("_") and not op.name.endswith("__") and op.name != "zero_")
            or op.name in ("__setitem__", "__isub__", "__iadd__")
            for op in self.ops_without_grad
        )

    @property
    def tensor_ops(self) -> tuple[Op, ...]:
        """Ops that compute or create tensors: everything but property reads,
        grad-mode switches and backward calls."""
        return tuple(op for op in self.ops if op.name not in _NOT_TENSOR_OPS and not op.name.endswith("="))


_MODE_SWITCHES = frozenset({"_set_grad_enabled", "set_grad_enabled"})
_NOT_TENSOR_OPS = _PROPERTIES | _MODE_SWITCHES | frozenset(_BACKWARD.values())


# -- the grader's side -------------------------------------------------------------


class TraceError(ValueError):
    """A trace that is not in the recorder's format (forged or broken)."""


def _field(value: Any, kinds: tuple[type, ...], what: str) -> Any:
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
        calls.append(
            BackwardCall(
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
            )
        )
    tampered = _field(tree.get("tampered", []), (list,), "tampered")
    if any(how not in TAMPERED for how in tampered):
        raise TraceError("tampered")
    return Trace(
        ops=tuple(ops),
        calls=tuple(calls),
        dropped=_field(tree.get("dropped", 0), (int,), "dropped"),
        grad_mode_end=_field(tree.get("grad_mode_end", True), (bool,), "grad_mode_end"),
        tampered=tuple(dict.fromkeys(tampered)),
        errors=call_facts.read_errors(tree.get("errors", []), TraceError),
        retained=call_facts.read_retained(tree.get("retained", []), TraceError),
    )

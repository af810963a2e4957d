"""What each autograd call of the student's did, beyond the arguments it
was given: the gradient it added to each of the student function's leaves,
whether it ran into a graph an earlier call had freed, which torch call
raised an error the student hands back, and which tensors retain_grad() was
called on (an argument, a returned tensor, or one made next to one).

Gathered in the worker beside ``tracing``'s recorder (``Facts``) and read
on the grader's side into ``BackwardCall`` fields and ``RaisedError``
records, so that a check judges a call by what it did (``autograd.
calls_added``) and an error by the call that raised it
(``autograd.expect_error``). Like the rest of the trace this is the
student process's word: it makes a forgery tell several lies that agree
with each other, it does not make one impossible. Everything kept is
bounded: a trace stays a small part of an answer.
"""

from __future__ import annotations

import dis
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from . import encode

MAX_ERRORS = 64  # raising torch calls remembered per student call
MAX_ADDED = 100_000  # elements of added gradients one trace carries
MAX_WALK = 20_000  # graph nodes visited, over all calls, to tell whether a graph was freed
MAX_FREED = 200  # graphs freed by earlier calls that are remembered
MAX_ARGS = 64  # positional arguments of the student function watched
MAX_RETAINED = 64  # tensors retain_grad() was called on, described per student call
# a custom Function's backward that reads its saved tensors after they were
# freed: PyTorch's own error, raised in the student's frame
_SAVED = frozenset({"saved_tensors", "saved_variables"})


@dataclass(frozen=True)
class RaisedError:
    """A torch call of the student's code that raised: its name as the trace
    names ops ("backward", "autograd.grad", "add_", "requires_grad="), the
    exception's type name, its index in ``Trace.calls`` when it was a
    backward or autograd.grad call (else -1), whether the student's own
    code that the call ran (a hook, a custom Function's backward, a tensor
    subclass) raised it, and whether a tensor it was given was a leaf that
    requires grad."""

    op: str
    type: str
    call: int = -1
    own_code: bool = False
    leaf: bool = False


@dataclass(frozen=True)
class Retained:
    """A tensor the student's code called retain_grad() on, as it stood when
    the function returned: its position among the function's positional
    arguments and among the tensors it returned (-1: not there, by
    identity), its grad_fn's class name ("" for a leaf), and the returned
    tensor it was made from by one op (``source``: a copy of it, say) or
    that one op made from it (``feeds``: h = tanh(z) for the z retained)."""

    arg: int = -1
    returned: int = -1
    node: str = ""
    source: int = -1
    feeds: int = -1


# -- the worker's side ----------------------------------------------------------


def flat_tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value[:MAX_ARGS] for t in flat_tensors(item)]
    return []


class Facts:
    """The facts of one student call, gathered while the recorder runs."""

    def __init__(self) -> None:
        self.watched: tuple[tuple[int, Any], ...] = ()  # (position, tensor): the function's leaves that require grad
        self.positions = 0
        self.args: tuple[Any, ...] = ()  # the function's positional arguments
        self.retained: list[Any] = []  # the tensors retain_grad() was called on, first call first
        self.freed: list[Any] = []  # root nodes of the graphs completed calls freed
        self.errors: list[dict[str, Any]] = []  # plain RaisedError entries
        self.exceptions: dict[int, tuple[BaseException, int]] = {}  # id(exception) -> (exception, index in errors)
        self.budget = MAX_ADDED
        self.walk_budget = MAX_WALK

    def watch(self, args: tuple[Any, ...]) -> None:
        import torch

        args = tuple(args)[:MAX_ARGS]
        self.positions = len(args)
        self.args = args
        self.watched = tuple(
            (i, a) for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.is_leaf and a.requires_grad
        )

    # -- a backward or autograd.grad call -------------------------------------
    def before(self, call: dict[str, Any], kind: str, outputs: Any) -> tuple[list[Any], list[Any]]:
        """Note what the call is given; returns what ``after`` compares with."""
        outs = flat_tensors(outputs)
        call["scalar"] = all(t.numel() == 1 and not t.is_complex() for t in outs)  # what backward() needs
        call["no_graph"] = any(not t.requires_grad for t in outs)
        roots = [t.grad_fn for t in outs if t.grad_fn is not None]
        grads: list[Any] = []
        if kind == "backward":
            for _, t in self.watched:
                g = t.grad
                # a copy to subtract, not sent: kept only while a difference could still be
                copy = g.detach().clone() if g is not None and g.numel() <= self.budget else None
                grads.append((g, -1 if g is None else g._version, copy))
        return roots, grads

    def after(
        self,
        call: dict[str, Any],
        kind: str,
        state: tuple[list[Any], list[Any]],
        inputs: Any,
        result: Any,
        keeps_graph: bool,
    ) -> None:
        roots, grads = state
        added: list[Any] = [None] * self.positions
        if kind == "backward":
            for (position, t), (g0, version, copy) in zip(self.watched, grads):
                g = t.grad
                if g is None or (g is g0 and g._version == version):
                    continue  # the call sent this leaf no gradient
                if g0 is None:
                    added[position] = self._keep(g)
                elif copy is not None:  # None: over the budget, the amount is not known
                    added[position] = self._keep(g - copy)
        else:
            results = result if isinstance(result, (tuple, list)) else (result,)
            for position, t in self.watched:
                for given, r in zip(flat_tensors(inputs), results):
                    if given is t and r is not None:
                        added[position] = self._keep(r)
        call["added"] = added
        if not keeps_graph and len(self.freed) < MAX_FREED:
            self.freed.extend(roots[: MAX_FREED - len(self.freed)])

    def _keep(self, t: Any) -> Any:
        """A copy of a gradient, while the trace's budget lasts."""
        n = t.numel()
        if n > self.budget:
            return None
        self.budget -= n
        return t.detach().clone()

    def through_freed(self, roots: list[Any]) -> bool | None:
        """Whether a graph an earlier call freed shares a node with the graph
        from ``roots``; None when that took more than the walk's budget."""
        if not self.freed:
            return False
        mine = self._walk(roots)
        if mine is None:
            return None
        theirs = self._walk(self.freed)
        if theirs is None:
            return None
        return any(key in mine and mine[key] is node for key, node in theirs.items())

    def _walk(self, roots: list[Any]) -> dict[int, Any] | None:
        seen: dict[int, Any] = {}
        stack = [r for r in roots if r is not None]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            self.walk_budget -= 1
            if self.walk_budget < 0:
                return None
            seen[id(node)] = node  # held, so the id stays this node's while compared
            stack.extend(n for n, _ in getattr(node, "next_functions", ()) if n is not None)
        return seen

    # -- retain_grad() -----------------------------------------------------------
    def retain(self, args: tuple[Any, ...]) -> None:
        """A retain_grad() call: its tensor is held until the call's end."""
        import torch

        t = args[0] if args else None
        if isinstance(t, torch.Tensor) and len(self.retained) < MAX_RETAINED and all(t is not r for r in self.retained):
            self.retained.append(t)

    def retained_on(self, value: Any) -> list[dict[str, Any]]:
        """Plain ``Retained`` entries of the tensors retain_grad() was called
        on, told apart by what the student function returned (``value``)."""
        if not self.retained:
            return []  # the returned value is not looked at without a reason
        import torch

        # one level only: the positions the check names (a nested value is not walked)
        returned = list(value[:MAX_ARGS]) if isinstance(value, (tuple, list)) else [value]
        nodes = [r.grad_fn if isinstance(r, torch.Tensor) else None for r in returned]
        found = []
        for t in self.retained:
            node = t.grad_fn
            found.append(
                {
                    "arg": _position(self.args, t),
                    "returned": _position(returned, t),
                    "node": type(node).__name__[:64] if node is not None else "",
                    "source": _next_to(node, nodes, upstream=True),
                    "feeds": _next_to(node, nodes, upstream=False),
                }
            )
        return found

    # -- an error a torch call raised -----------------------------------------
    def raised(
        self,
        exc: BaseException,
        name: str,
        args: tuple[Any, ...],
        call: int = -1,
        frame: Any = None,
        engine_codes: frozenset[Any] = frozenset(),
    ) -> None:
        if id(exc) in self.exceptions or len(self.errors) >= MAX_ERRORS:
            return  # the innermost call that raised it is the one that counts
        import torch

        leaf = any(isinstance(a, torch.Tensor) and a.is_leaf and a.requires_grad for a in args[:MAX_ARGS])
        entry = {"op": name[:64], "type": type(exc).__name__[:64], "call": call, "own_code": False, "leaf": leaf}
        if call >= 0:
            try:
                entry["own_code"] = own_code_raised(exc, frame, engine_codes)
            except Exception:
                entry["own_code"] = True  # a traceback that cannot be read proves nothing
        self.exceptions[id(exc)] = (exc, len(self.errors))
        self.errors.append(entry)

    def raised_at(self, exc: BaseException) -> int:
        """The index in ``errors`` of the torch call that raised ``exc`` (this
        very object), else -1."""
        found = self.exceptions.get(id(exc))
        return found[1] if found is not None and found[0] is exc else -1


def _position(tensors: Iterable[Any], t: Any) -> int:
    return next((i for i, other in enumerate(tensors) if other is t), -1)


def _next_to(node: Any, nodes: list[Any], upstream: bool) -> int:
    """The position in ``nodes`` of the node one edge from ``node``: one of
    its inputs (``upstream``) or one it is an input of; -1 if none."""
    if node is None:
        return -1
    for i, other in enumerate(nodes):
        if other is None or other is node:
            continue
        below, above = (node, other) if upstream else (other, node)
        if any(n is above for n, _ in getattr(below, "next_functions", ())):
            return i
    return -1


def own_code_raised(exc: BaseException, frame: Any, engine_codes: frozenset[Any]) -> bool:
    """Whether code other than torch's ran inside the call (whose frame is
    ``frame``) on the way to ``exc``: a hook, a custom Function's backward,
    a tensor subclass. Only torch's own frames, and the grader's counting
    engine (``engine_codes``), make an error the call's; a custom backward
    stopped reading its freed saved tensors is PyTorch's own error too."""
    tb, inside = exc.__traceback__, False
    deeper = []
    while tb is not None:
        if inside:
            deeper.append(tb)
        inside = inside or tb.tb_frame is frame
        tb = tb.tb_next
    foreign = [
        entry for entry in deeper if entry.tb_frame.f_code not in engine_codes and not encode.in_torch(entry.tb_frame)
    ]
    if not foreign:
        return False
    return not (foreign[-1] is deeper[-1] and _reads_saved(foreign[-1].tb_frame.f_code, foreign[-1].tb_lasti))


def _reads_saved(code: types.CodeType, offset: int) -> bool:
    for instruction in dis.get_instructions(code):
        if instruction.offset == offset:
            return instruction.opname in ("LOAD_ATTR", "LOAD_METHOD") and instruction.argval in _SAVED
    return False


ENGINE_RUNS = [0]  # runs of torch's autograd engine through the counting stand-in


def count_engine_runs(torch: Any) -> type:
    """Put a counter in front of torch's autograd engine. Every backward and
    autograd.grad runs it through ``Variable._execution_engine``; a run the
    recording mode never saw called (under ``torch._C.DisableTorchFunction``,
    with the mode popped for a moment, from another thread, or by calling
    the engine or a new ``torch._C._ImperativeEngine()`` directly) then shows
    as more runs than recorded calls. Installed once, before student code."""
    from torch.autograd import Variable, variable

    engine_type = type(Variable._execution_engine)

    class CountingEngine:
        __slots__ = ("_CountingEngine__engine",)

        def __init__(self, engine: Any = None) -> None:
            # the slot is this name mangled, which mypy does not see
            self.__engine = engine if engine is not None else engine_type()  # type: ignore[misc]

        def run_backward(self, *args: Any, **kwargs: Any) -> Any:
            ENGINE_RUNS[0] += 1
            return self.__engine.run_backward(*args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.__engine, name)

    # the stand-in in place of torch's engine, on purpose; torch's stubs also
    # name a function ``variable`` where the module is found at run time
    Variable._execution_engine = CountingEngine(Variable._execution_engine)  # type: ignore[assignment]
    torch._C._ImperativeEngine = variable.ImperativeEngine = CountingEngine  # type: ignore[attr-defined]
    return CountingEngine


def engine_runs() -> int:
    """How many times torch's autograd engine has run in this worker (since
    the first recorder): ``student._traced`` takes the difference over a call."""
    return ENGINE_RUNS[0]


_CURRENT: list[Facts | None] = [None]  # the Facts of the student call running now (one at a time per worker)


def start() -> Facts:
    """New facts for a new student call; ``encode(..., raised_at=facts.
    raised_at)`` then links the errors it encodes to the torch calls that
    raised them."""
    facts = _CURRENT[0] = Facts()
    return facts


# -- the grader's side -------------------------------------------------------------


def _typed(value: Any, kinds: tuple[type, ...], what: str, error: type[Exception]) -> Any:
    if type(value) not in kinds:
        raise error(what)
    return value


def read_errors(entries: Any, error: type[Exception]) -> tuple[RaisedError, ...]:
    """``RaisedError`` records from the worker's plain entries; ``error``
    (tracing.TraceError) for anything malformed."""
    found = []
    for entry in _typed(entries, (list,), "errors", error)[:MAX_ERRORS]:
        _typed(entry, (dict,), "error", error)
        found.append(
            RaisedError(
                op=_typed(entry.get("op"), (str,), "op", error)[:64],
                type=_typed(entry.get("type"), (str,), "type", error)[:64],
                call=_typed(entry.get("call", -1), (int,), "call", error),
                own_code=_typed(entry.get("own_code", False), (bool,), "own_code", error),
                leaf=_typed(entry.get("leaf", False), (bool,), "leaf", error),
            )
        )
    return tuple(found)


def read_retained(entries: Any, error: type[Exception]) -> tuple[Retained, ...]:
    """``Retained`` records from the worker's plain entries, checked for form."""
    found = []
    for entry in _typed(entries, (list,), "retained", error)[:MAX_RETAINED]:
        _typed(entry, (dict,), "retained", error)
        positions = {
            key: _typed(entry.get(key, -1), (int,), key, error) for key in ("arg", "returned", "source", "feeds")
        }
        if any(not -1 <= p < MAX_ARGS for p in positions.values()):
            raise error("retained")
        found.append(Retained(node=_typed(entry.get("node", ""), (str,), "node", error)[:64], **positions))
    return tuple(found)


def read_added(entries: Any, error: type[Exception]) -> tuple[Any, ...]:
    """The gradients one call added (plain tensors or None), checked for form."""
    import torch

    added = []
    for t in _typed(entries, (list,), "added", error)[:MAX_ARGS]:
        if t is not None and (
            type(t) is not torch.Tensor
            or t.dim() > 16
            or not t.is_floating_point()
            or t.device.type not in ("cpu", "cuda")
        ):
            raise error("added")
        added.append(t)
    return tuple(added)

"""The engine track's planted mistakes (mistakes/engine/<name>.py): the
reference engine (solutions/engine.py) with one plausible student mistake
each, the checks each one must fail (on every seed) and the diagnosis its
feedback must give, read from each file's docstring.
At least one per behaviour the engine's docstrings specify
(``engine_fuzz/behaviours.py``). Shared by the in-process sweep
(test_engine_fuzz.py) and the sandboxed runs (test_topic_engine.py)."""

from pathlib import Path

from conftest import SOLUTIONS
from planted_mistakes import read_planted, topic_files

SOURCE = (SOLUTIONS / "engine.py").read_text()

CHECKS = {
    "engine": ("test_op_derivatives", "test_broadcasting", "test_graph_traversal"),
    "leaf": ("test_leaves_and_requires_grad",),
    "accumulation": ("test_accumulation_and_zeroing",),
    "retain_graph": ("test_retain_graph_errors",),
    "vector_backward": ("test_vector_backward",),
}
ALL = tuple(check for checks in CHECKS.values() for check in checks)


def planted(*replacements):
    """The reference engine with each (old, new) text replaced; each old
    text occurs exactly once."""
    source = SOURCE
    for old, new in replacements:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


def _mistake(path: Path) -> tuple[str, tuple[str, ...], str]:
    found = read_planted(path)
    return found.module, tuple(found.fields["check"].split(", ")), found.fields["expected diagnosis"]


# name: (the engine, the checks it fails, the diagnosis its feedback gives),
# from mistakes/engine/<name>.py: the whole module, whose docstring's fields
# name the checks and the diagnosis
MISTAKES = {path.stem: _mistake(path) for path in topic_files("engine")}


# checks a mistake may also fail, on the seeds whose programs lean on what it breaks
ALSO = {
    "freed_despite_retain": ("test_accumulation_and_zeroing", "test_vector_backward")
}  # retain_graph=True there too

# the most ops a minimal program may show
MAX_OPS = 5


# Correct engines in other styles than the reference's (which runs the nodes
# newest first): each replaces run_backward and keeps the docstrings' rules
# (a leaf takes its gradient as soon as every edge into it has delivered),
# with another order of the nodes. Each must keep full marks.
def _run_backward(body: str) -> str:
    start = SOURCE.index("def run_backward(")
    end = SOURCE.index("\ndef backward(", start)
    return SOURCE[:start] + body.strip("\n") + "\n\n" + SOURCE[end:]


STYLES = {
    # micrograd's: a topological order by a recursive depth-first search, walked backwards
    "recursive": _run_backward("""
def run_backward(roots, grads, retain_graph=False):
    order, seen = [], set()

    def build(t):
        if t not in seen:
            seen.add(t)
            for inp in t.grad_fn.inputs if t.grad_fn is not None else ():
                if inp is not None:
                    build(inp)
            order.append(t)

    for root in roots:
        build(root)
    edges = {}
    for t in order:
        for inp in t.grad_fn.inputs if t.grad_fn is not None else ():
            if inp is not None:
                edges[inp] = edges.get(inp, 0) + 1
    arrived = {}
    for t, g in zip(roots, grads):
        arrived[t] = arrived[t] + g if t in arrived else g
    for t in list(arrived):
        if t.grad_fn is None and edges.get(t, 0) == 0:
            accumulate_grad(t, arrived.pop(t))
    for t in reversed(order):
        if t.grad_fn is None:
            continue
        grad = arrived.pop(t)
        if t.retains_grad:
            accumulate_grad(t, grad)
        node = t.grad_fn
        input_grads = node.backward(grad)
        if not retain_graph:
            node.free_saved()
        for inp, g in zip(node.inputs, input_grads):
            if inp is None:
                continue
            g = unbroadcast(g, inp.shape)
            arrived[inp] = arrived[inp] + g if inp in arrived else g
            edges[inp] -= 1
            if inp.grad_fn is None and edges[inp] == 0:
                accumulate_grad(inp, arrived.pop(inp))
"""),
    # Kahn's algorithm: a node joins a queue once all its consumers have run
    "kahn": _run_backward("""
def run_backward(roots, grads, retain_graph=False):
    from collections import deque

    edges, seen, stack = {}, set(roots), list(dict.fromkeys(roots))
    while stack:
        t = stack.pop()
        for inp in t.grad_fn.inputs if t.grad_fn is not None else ():
            if inp is not None:
                edges[inp] = edges.get(inp, 0) + 1
                if inp not in seen:
                    seen.add(inp)
                    stack.append(inp)
    arrived = {}
    for t, g in zip(roots, grads):
        arrived[t] = arrived[t] + g if t in arrived else g
    ready = deque()
    for t in dict.fromkeys(roots):
        if edges.get(t, 0) == 0:
            if t.grad_fn is None:
                accumulate_grad(t, arrived.pop(t))
            else:
                ready.append(t)
    while ready:
        t = ready.popleft()
        grad = arrived.pop(t)
        if t.retains_grad:
            accumulate_grad(t, grad)
        input_grads = t.grad_fn.backward(grad)
        if not retain_graph:
            t.grad_fn.free_saved()
        for inp, g in zip(t.grad_fn.inputs, input_grads):
            if inp is None:
                continue
            g = unbroadcast(g, inp.shape)
            arrived[inp] = arrived[inp] + g if inp in arrived else g
            edges[inp] -= 1
            if edges[inp] == 0:
                if inp.grad_fn is None:
                    accumulate_grad(inp, arrived.pop(inp))
                else:
                    ready.append(inp)
"""),
    # closures that push a tensor's gradient on once it is complete, depth first
    "closures": _run_backward("""
def run_backward(roots, grads, retain_graph=False):
    edges, seen, stack = {}, set(), list(roots)
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        for inp in t.grad_fn.inputs if t.grad_fn is not None else ():
            if inp is not None:
                edges[inp] = edges.get(inp, 0) + 1
                stack.append(inp)
    arrived = {}

    def receive(t, g):
        arrived[t] = arrived[t] + g if t in arrived else g

    def send_on(t):
        grad = arrived.pop(t)
        if t.grad_fn is None:
            accumulate_grad(t, grad)
            return
        if t.retains_grad:
            accumulate_grad(t, grad)
        node = t.grad_fn
        input_grads = node.backward(grad)
        if not retain_graph:
            node.free_saved()
        complete = []
        for inp, g in zip(node.inputs, input_grads):
            if inp is not None:
                receive(inp, unbroadcast(g, inp.shape))
                edges[inp] -= 1
                if edges[inp] == 0:
                    complete.append(inp)
        for inp in sorted(complete, key=lambda x: x.grad_fn is not None):  # leaves land first
            send_on(inp)

    for t, g in zip(roots, grads):
        receive(t, g)
    for t in dict.fromkeys(roots):
        if edges.get(t, 0) == 0:
            send_on(t)
"""),
}


# Right unbroadcasts and relu backwards in other styles than the reference's:
# each must keep full marks on the checks that broadcast along several axes
# and meet relu's kink.
_UNBROADCAST = (
    "    # Axes of length 1 that broadcasting stretched.\n"
    "    for axis, size in enumerate(shape):\n        if size == 1 and grad.shape[axis] != 1:\n"
    "            grad = grad.sum(axis=axis, keepdims=True)\n    return grad"
)
_RELU = (
    "        self.save_for_backward(out)\n        return out\n\n"
    "    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:\n        (out,) = self.saved_tensors\n"
    "        # where, not grad * mask: PyTorch passes 0, not nan, where out is 0.\n"
    "        return (np.where(out > 0, grad, 0.0),)"
)
KINK_STYLES = {
    # from the last axis down, without keepdims: no index shifts, reshaped at the end
    "unbroadcast_last_first": planted(
        (
            _UNBROADCAST,
            "    for axis in reversed(range(len(shape))):\n"
            "        if shape[axis] == 1 and grad.shape[axis] != 1:\n"
            "            grad = grad.sum(axis=axis)\n    return grad.reshape(shape)",
        )
    ),
    # every stretched axis in one sum
    "unbroadcast_one_sum": planted(
        (
            _UNBROADCAST,
            "    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)\n"
            "    return grad.sum(axis=axes, keepdims=True) if axes else grad",
        )
    ),
    # a mask on the saved input
    "relu_mask": planted(
        (
            _RELU,
            "        self.save_for_backward(a)\n        return out\n\n"
            "    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:\n"
            "        (a,) = self.saved_tensors\n        return (grad * (a > 0),)",
        )
    ),
}

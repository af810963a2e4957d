"""The engine track's planted mistakes: the reference engine
(solutions/engine.py) with one plausible student mistake each, the checks
each one must fail (on every seed) and the diagnosis its feedback must give.
At least one per behaviour the engine's docstrings specify
(``engine_fuzz/behaviours.py``). Shared by the in-process sweep
(test_engine_fuzz.py) and the sandboxed runs (test_topic_engine.py)."""

from conftest import SOLUTIONS

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


# name: (the engine, the checks it fails, the diagnosis its feedback gives)
MISTAKES = {
    "fanout_overwrite": (planted((
        "                arrived[inp] = g if inp not in arrived else arrived[inp] + g\n",
        "                arrived[inp] = g\n")),
        ("test_graph_traversal",), "diag.engine.fanout_overwrite"),
    "no_unbroadcast": (planted(("                g = unbroadcast(g, inp.shape)\n", "")),
                       ("test_broadcasting",), "diag.engine.no_unbroadcast"),
    # nodes run in the order the search found them, not topologically: a node
    # reached along a short path runs before the gradients of longer ones arrive
    "wrong_order": (planted(("for t in sorted(non_leaves, key=lambda t: t.grad_fn.seq, reverse=True):",
                             "for t in non_leaves:"),
                            ("            grad = arrived.pop(t)\n", "            grad = arrived.pop(t, 0)\n")),
                    ("test_graph_traversal",), "diag.engine.order"),
    "nonleaf_grads": (planted(("            if t.retains_grad:\n                accumulate_grad(t, grad)",
                               "            accumulate_grad(t, grad)")),
                      ("test_leaves_and_requires_grad",), "diag.engine.nonleaf_grad"),
    "never_freed": (planted(("            if not retain_graph:\n                node.free_saved()\n", "")),
                    ("test_retain_graph_errors",), "diag.engine.never_freed"),
    "implicit_accepted": (planted(("            if out.data.size != 1:\n                raise RuntimeError(ERR_IMPLICIT_GRAD)\n",
                                   "")),
                          ("test_vector_backward",), "diag.engine.implicit_accepted"),
    "retain_no_grad": (planted(("        if not self.requires_grad:\n            raise RuntimeError(ERR_RETAIN_NO_GRAD)\n", "")),
                       ("test_leaves_and_requires_grad",), "diag.engine.retain_grad_no_grad"),
    "shape_accepted": (planted(("            if g.shape != out.shape:\n"
                                "                raise RuntimeError(ERR_SHAPE.format(i=i, grad_shape=g.shape, "
                                "out_shape=out.shape))\n", "")),
                       ("test_vector_backward",), "diag.engine.shape_accepted"),
    "not_accumulated": (planted((
        "    t.grad = np.array(grad, dtype=np.float64) if t.grad is None else t.grad + grad",
        "    t.grad = np.array(grad, dtype=np.float64)")),
        ("test_accumulation_and_zeroing",), "diag.engine.not_accumulated"),
    "not_cleared": (planted(("    def zero_grad(self) -> None:\n        self.grad = None",
                             "    def zero_grad(self) -> None:\n        pass")),
                    ("test_accumulation_and_zeroing",), "diag.engine.not_cleared"),
    # one rule, PyTorch's: zero_grad sets .grad to None, not zeros
    "zeros_not_none": (planted(("    def zero_grad(self) -> None:\n        self.grad = None",
                                "    def zero_grad(self) -> None:\n        self.grad = np.zeros_like(self.data)")),
                       ("test_accumulation_and_zeroing",), "diag.engine.zeros_not_none"),
    # the gradient argument ignored (ones instead), or applied twice
    "gradient_ignored": (planted(("out_shape=out.shape))\n        elif out.requires_grad:",
                                  "out_shape=out.shape))\n            g = np.ones_like(g)\n        elif out.requires_grad:")),
                         ("test_vector_backward",), "diag.engine.gradient_ignored"),
    "gradient_twice": (planted(("out_shape=out.shape))\n        elif out.requires_grad:",
                                "out_shape=out.shape))\n            g = g * g\n        elif out.requires_grad:")),
                       ("test_vector_backward",), "diag.engine.gradient_twice"),
    "retain_grad_ignored": (planted(("            if t.retains_grad:\n                accumulate_grad(t, grad)",
                                     "            if False:\n                accumulate_grad(t, grad)")),
                            ("test_leaves_and_requires_grad",), "diag.engine.retain_grad_ignored"),
    "freed_despite_retain": (planted(("            if not retain_graph:\n                node.free_saved()\n",
                                      "            node.free_saved()\n")),
                             ("test_retain_graph_errors",), "diag.engine.freed_despite_retain"),
    "tanh_derivative": (planted(("        return (grad * (1 - out * out),)", "        return (grad * (1 - out),)")),
                        ("test_op_derivatives",), "diag.engine.wrong_derivative"),
    "matmul_transposed": (planted((
        "        return (g2 @ b2.T).reshape(a.shape), (a2.T @ g2).reshape(b.shape)",
        "        return (g2 @ b2).reshape(a.shape), (a2 @ g2).reshape(b.shape)")),
        ("test_op_derivatives",), "diag.engine.matmul_transposed"),
    # -- one per behaviour the docstrings specify that random draws could miss --
    # the reduced axis not put back: a.sum(axis=-1)'s gradient lines up with axis 0
    "reduction_axis": (planted(("    if not keepdims:\n        axes = range(len(shape)) if axis is None else axis\n"
                                "        grad = np.expand_dims(grad, tuple(ax % len(shape) for ax in axes))\n", "")),
                       ("test_op_derivatives",), "diag.engine.reduction_axis"),
    "keepdims_expanded": (planted(("    if not keepdims:\n        axes = range", "    if True:\n        axes = range")),
                          ("test_op_derivatives",), "diag.engine.reduction_axis"),
    # the reduced axis always put back last, as a 2-D row sum's: a 3-D tensor's middle axis lands at the end
    "reduction_last_axis": (planted(("        grad = np.expand_dims(grad, tuple(ax % len(shape) for ax in axes))\n",
                                     "        grad = grad[..., None] if axis is not None else grad\n")),
                            ("test_op_derivatives",), "diag.engine.reduction_axis"),
    "mean_count": (planted(("        self.count = a.size // max(np.size(out), 1)", "        self.count = a.size")),
                   ("test_op_derivatives",), "diag.engine.mean_count"),
    "pow_zero": (planted(("        if self.exponent == 0:\n", "        if False:\n")),
                 ("test_op_derivatives",), "diag.engine.pow_zero"),
    # relu's slope taken as 1 at 0: the input saved and tested with >=
    "relu_zero": (planted(("        out = np.where(a < 0, 0.0, a)  # keeps -0.0 and nan, as PyTorch does\n"
                           "        self.save_for_backward(out)\n",
                           "        out = np.where(a < 0, 0.0, a)  # keeps -0.0 and nan, as PyTorch does\n"
                           "        self.save_for_backward(a)\n"),
                          ("        return (np.where(out > 0, grad, 0.0),)", "        return (np.where(out >= 0, grad, 0.0),)")),
                  ("test_op_derivatives",), "diag.engine.relu_zero"),
    "matmul_vector": (planted(("        a2 = a.reshape(1, -1) if a.ndim == 1 else a\n"
                               "        b2 = b.reshape(-1, 1) if b.ndim == 1 else b\n"
                               "        g2 = np.reshape(grad, (a2.shape[0], b2.shape[1]))\n"
                               "        return (g2 @ b2.T).reshape(a.shape), (a2.T @ g2).reshape(b.shape)",
                               "        return grad @ b.T, a.T @ grad")),
                      ("test_op_derivatives",), "diag.engine.matmul_vector"),
    # a wrong derivative of division costs the op check only: broadcasts are built from the ops the engine gets right
    "div_derivative": (planted(("        return grad / b, -grad * (a / b) / b", "        return grad / b, grad * (a / b) / b")),
                       ("test_op_derivatives",), "diag.engine.wrong_derivative"),
    "unbroadcast_leading": (planted(("    while grad.ndim > len(shape):\n        grad = grad.sum(axis=0)\n", "")),
                            ("test_broadcasting",), "diag.engine.unbroadcast_leading"),
    "unbroadcast_ones": (planted(("    for axis, size in enumerate(shape):\n        if size == 1 and grad.shape[axis] != 1:\n"
                                  "            grad = grad.sum(axis=axis, keepdims=True)\n", "")),
                         ("test_broadcasting",), "diag.engine.unbroadcast_ones"),
    # an unbroadcast that stops at the first stretched axis: (1, 3, 1) against (2, 3, 4) keeps axis 2
    "unbroadcast_first": (planted(("            grad = grad.sum(axis=axis, keepdims=True)\n    return grad",
                                   "            grad = grad.sum(axis=axis, keepdims=True)\n            break\n    return grad")),
                          ("test_broadcasting",), "diag.engine.unbroadcast_first"),
    # rows or columns, as in 2-D: only axes 0 and -1 are looked at, a middle axis stays stretched
    "unbroadcast_ends": (planted(("    for axis, size in enumerate(shape):\n        if size == 1 and grad.shape[axis] != 1:\n",
                                  "    for axis in (0, -1) if shape else ():\n        if shape[axis] == 1 and grad.shape[axis] != 1:\n")),
                         ("test_broadcasting",), "diag.engine.unbroadcast_ends"),
    # sums without keepdims, reshaped at the end: after one sum the next axis's index is off by one
    "unbroadcast_shifted": (planted(("            grad = grad.sum(axis=axis, keepdims=True)\n    return grad",
                                     "            grad = grad.sum(axis=axis)\n    return grad.reshape(shape)")),
                            ("test_broadcasting",), "diag.engine.unbroadcast_shifted"),
    # nodes run oldest first: the first one's gradient has not arrived yet
    "reversed_order": (planted(("for t in sorted(non_leaves, key=lambda t: t.grad_fn.seq, reverse=True):",
                                "for t in sorted(non_leaves, key=lambda t: t.grad_fn.seq):")),
                       ALL, "diag.engine.order"),
    "no_grad_root": (planted(("    for i, out in enumerate(tensors):\n        if not out.requires_grad:\n"
                              "            raise RuntimeError(ERR_NO_GRAD.format(i=i))\n", "")),
                     ("test_leaves_and_requires_grad",), "diag.engine.no_grad_root"),
    "retain_grad_leaf": (planted(("        if not self.is_leaf:  # leaves keep .grad anyway; PyTorch ignores them\n"
                                  "            self._retains_grad = True", "        self._retains_grad = True")),
                         ("test_leaves_and_requires_grad",), "diag.engine.retain_grad_leaf"),
    "detach_keeps_grad": (planted(("        return Tensor._wrap(self.data)  # shares the data, like PyTorch",
                                   "        return Tensor(self.data, requires_grad=self.requires_grad)")),
                          ("test_leaves_and_requires_grad",), "diag.engine.detach"),
    "is_leaf_rule": (planted(("        return not self.requires_grad or self.grad_fn is None",
                              "        return self.requires_grad and self.grad_fn is None")),
                     ("test_leaves_and_requires_grad",), "diag.engine.leaf_rule"),
    # .grad stored without a copy and added in place: x and y of x + y share one array
    "shared_grad": (planted(("    t.grad = np.array(grad, dtype=np.float64) if t.grad is None else t.grad + grad",
                             "    if t.grad is None:\n        t.grad = grad\n    else:\n        t.grad += grad")),
                    ("test_accumulation_and_zeroing",), "diag.engine.shared_grad"),
    "one_element": (planted(("            if out.data.size != 1:\n", "            if out.data.ndim != 0:\n")),
                    ("test_vector_backward",), "diag.engine.one_element"),
    "many_one_by_one": (planted(("    run_backward(tensors, grads, retain_graph)",
                                 "    for t, g in zip(tensors, grads):\n        run_backward([t], [g], retain_graph)")),
                        ("test_vector_backward",), "diag.engine.many_one_traversal"),
    "leaf_root": (planted(("    for t in [t for t in arrived if t.grad_fn is None and waiting.get(t, 0) == 0]:\n"
                           "        accumulate_grad(t, arrived.pop(t))\n", "")),
                  ("test_vector_backward",), "diag.engine.leaf_root"),
    # a visited flag instead of freed saved values: nodes that saved nothing raise too
    "nothing_saved_raises": (planted(("            input_grads = node.backward(grad)\n",
                                      "            if node._freed:\n                raise RuntimeError(ERR_BACKWARD_TWICE)\n"
                                      "            input_grads = node.backward(grad)\n")),
                             ("test_retain_graph_errors",), "diag.engine.nothing_saved_raises"),
    # freed per output: a flag on the tensor backward started from, not on its nodes
    "free_per_output": (planted(("            if not retain_graph:\n                node.free_saved()\n", ""),
                                ("    run_backward(tensors, grads, retain_graph)",
                                 "    if any(getattr(out, '_freed_root', False) for out in tensors):\n"
                                 "        raise RuntimeError(ERR_BACKWARD_TWICE)\n"
                                 "    for out in tensors:\n        out._freed_root = not retain_graph\n"
                                 "    run_backward(tensors, grads, retain_graph)")),
                        ("test_retain_graph_errors",), "diag.engine.free_per_node"),
    # one flag for the whole engine: a new forward pass after a free raises too
    "free_globally": (planted(("        if self._freed:\n            raise RuntimeError(ERR_BACKWARD_TWICE)",
                               "        if self._freed or Node._any_freed:\n            raise RuntimeError(ERR_BACKWARD_TWICE)"),
                              ("        self._saved = ()\n        self._freed = True",
                               "        self._saved = ()\n        self._freed = Node._any_freed = True"),
                              ("    @property\n    def saved_tensors(self)", "    _any_freed = False\n\n    @property\n    def saved_tensors(self)")),
                      ALL, "diag.engine.free_per_node"),
    # leaves accumulated once the traversal is over: a backward that raises halfway gives them nothing
    "leaves_after_error": (planted(("                if inp.grad_fn is None and waiting[inp] == 0:\n"
                                    "                    accumulate_grad(inp, arrived.pop(inp))\n\n\ndef backward(",
                                    "    for t, g in arrived.items():\n        if t.grad_fn is None:\n"
                                    "            accumulate_grad(t, g)\n\n\ndef backward(")),
                           ("test_retain_graph_errors",), "diag.engine.leaves_after_error"),
    # leaves accumulated edge by edge: a backward that raises halfway leaves them a part
    "leaves_edge_by_edge": (planted(("                arrived[inp] = g if inp not in arrived else arrived[inp] + g\n"
                                     "                waiting[inp] -= 1\n"
                                     "                if inp.grad_fn is None and waiting[inp] == 0:\n"
                                     "                    accumulate_grad(inp, arrived.pop(inp))\n",
                                     "                if inp.grad_fn is None:\n"
                                     "                    accumulate_grad(inp, g)\n"
                                     "                else:\n"
                                     "                    arrived[inp] = g if inp not in arrived else arrived[inp] + g\n")),
                            ("test_retain_graph_errors",), "diag.engine.leaves_before_complete"),
}


# checks a mistake may also fail, on the seeds whose programs lean on what it breaks
ALSO = {"freed_despite_retain": ("test_accumulation_and_zeroing", "test_vector_backward")}  # retain_graph=True there too

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
    "recursive": _run_backward('''
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
'''),
    # Kahn's algorithm: a node joins a queue once all its consumers have run
    "kahn": _run_backward('''
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
'''),
    # closures that push a tensor's gradient on once it is complete, depth first
    "closures": _run_backward('''
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
'''),
}


# Right unbroadcasts and relu backwards in other styles than the reference's:
# each must keep full marks on the checks that broadcast along several axes
# and meet relu's kink.
_UNBROADCAST = ("    # Axes of length 1 that broadcasting stretched.\n"
                "    for axis, size in enumerate(shape):\n        if size == 1 and grad.shape[axis] != 1:\n"
                "            grad = grad.sum(axis=axis, keepdims=True)\n    return grad")
_RELU = ("        self.save_for_backward(out)\n        return out\n\n"
         "    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:\n        (out,) = self.saved_tensors\n"
         "        # where, not grad * mask: PyTorch passes 0, not nan, where out is 0.\n"
         "        return (np.where(out > 0, grad, 0.0),)")
KINK_STYLES = {
    # from the last axis down, without keepdims: no index shifts, reshaped at the end
    "unbroadcast_last_first": planted((_UNBROADCAST,
                                       "    for axis in reversed(range(len(shape))):\n"
                                       "        if shape[axis] == 1 and grad.shape[axis] != 1:\n"
                                       "            grad = grad.sum(axis=axis)\n    return grad.reshape(shape)")),
    # every stretched axis in one sum
    "unbroadcast_one_sum": planted((_UNBROADCAST,
                                    "    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)\n"
                                    "    return grad.sum(axis=axes, keepdims=True) if axes else grad")),
    # a mask on the saved input
    "relu_mask": planted((_RELU, "        self.save_for_backward(a)\n        return out\n\n"
                                 "    def backward(self, grad: np.ndarray) -> tuple[np.ndarray, ...]:\n"
                                 "        (a,) = self.saved_tensors\n        return (grad * (a > 0),)")),
}


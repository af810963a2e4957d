"""Stage 1 of the engine exercise: the op check before the student's
backward pass exists. ``Staged`` drives the student's engine as
``interpret._Engine`` does, but a backward step runs the grader's own
traversal over the student's nodes, calling each node's forward and
backward rule, so the op check tests those alone (minitorch's tasks run
the same way: one part of the engine at a time). numpy only, as the rest
of the worker's side."""

from __future__ import annotations

import json
import warnings

import numpy as np

from .interpret import _array, _Engine, _interpret, _node_name, _packed_array, _run_engine


def run_staged_batch(module, programs):
    """``interpret.run_engine_batch`` for the op check: a program whose run
    on the student's engine raises NotImplementedError (no backward pass
    yet) runs again with ``Staged``; where the student's nodes are missing
    too, that run raises NotImplementedError for them, and the proxy says
    which part is not written."""
    if isinstance(programs, str):
        programs = json.loads(programs)
    return [json.dumps(_run_staged(module, p), default=_packed_array) for p in programs]


def _run_staged(module, program):
    try:
        return _run_engine(module, program)
    except NotImplementedError:
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return _interpret(Staged(module), program)


class Staged(_Engine):
    """The student's engine before its backward pass exists (stage 1): a
    backward step runs the grader's own traversal over the student's nodes,
    calling each node's backward, so that the op check tests the forward
    values and the local rules alone. is_leaf may not exist yet either."""

    def backward(self, x, gradient, retain_graph):
        grad = np.ones_like(x.data) if gradient is None else np.array(gradient.data, dtype=np.float64)
        arrived = {x: grad}
        for t in _newest_first(x):
            grad = arrived.pop(t, None)
            if grad is None:
                continue
            node = t.grad_fn
            if node is None:
                if t.requires_grad:
                    t.grad = grad if t.grad is None else t.grad + grad
                continue
            for inp, g in zip(node.inputs, node.backward(grad)):
                if inp is not None:
                    g = _unbroadcast(np.asarray(g, dtype=np.float64), inp.shape)
                    arrived[inp] = g if inp not in arrived else arrived[inp] + g

    def meta(self, x):
        return {
            "data": _array(x.data),
            "requires_grad": bool(x.requires_grad),
            "is_leaf": None,
            "grad_fn": _node_name(x.grad_fn),
        }


def _newest_first(root):
    """The tensors behind ``root``, each after every tensor made from it (a
    reversed depth-first postorder: independent of the nodes' numbers)."""
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        t, done = stack.pop()
        if done:
            order.append(t)
            continue
        if t in seen:
            continue
        seen.add(t)
        stack.append((t, True))
        for inp in t.grad_fn.inputs if t.grad_fn is not None else ():
            if inp is not None and inp not in seen:
                stack.append((inp, False))
    return reversed(order)


def _unbroadcast(grad, shape):
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad

import numpy
import pytest
import torch

from pytest_autograd_grader import StudentFailure, TensorRecord, diagnose_error, msg, same, values

pytestmark = pytest.mark.grade(concept="leaf")

OPS = ("add", "mul", "exp")

# Written into x and w on every run, beside random values: the tutorial's
# point (x = 2, w = 1) and both signs of x, w, a = x + w and b = w + 1.
FIXED_X = (2.0, -1.5, 0.7, 2.5)
FIXED_W = (1.0, 0.5, -2.0, -1.5)


def y_of(x, w):
    return ((x + w) * (w + 1)).sum()


def dot(w, x):
    return (w * x).sum()


def shapes_of(rng):
    """The shapes x and w take, one call each: 1-D (4 to 7 elements), 2-D
    (2 to 4 per side) and 2-D with an axis of size 1 (4 to 6 elements)."""
    line = rng.randint(4, 6)
    return [(rng.randint(4, 7),), (rng.randint(2, 4), rng.randint(2, 4)), rng.choice([(1, line), (line, 1)])]


def inputs(rng, device, requires_grad, shape):
    """x and w of ``shape``, float64, holding FIXED_X/FIXED_W and random values."""
    x, w = rng.randn(*shape, device="cpu"), rng.randn(*shape, device="cpu")
    x.view(-1)[:4] = torch.tensor(FIXED_X, dtype=x.dtype)
    w.view(-1)[:4] = torch.tensor(FIXED_W, dtype=w.dtype)
    rng.note(x, w)
    return x.to(device).requires_grad_(requires_grad), w.to(device).requires_grad_(requires_grad)


def grads_of(records):
    return [values(r.grad) if isinstance(r, TensorRecord) and r.grad is not None else None for r in records]


def check_order(autograd, got, expected, order):
    """The right values in the wrong places of a returned tuple."""
    if len(got) == len(expected) and not all(same(g, e) for g, e in zip(got, expected)) and \
            all(any(same(g, e) for g in got) for e in expected):
        autograd.require(False, "diag.graph.order", expected=order)


def require_backward(autograd, records, names, trace):
    """Gradients that are None because no backward call filled them in."""
    for record, name in zip(records, names):
        if isinstance(record, TensorRecord) and record.grad is None:
            if any(not call.raised for call in trace.backward_calls):
                return
            grad_call = any(not call.raised for call in trace.grad_calls)
            autograd.require(False, msg("cmp.none", what=f"{name}.grad") + "\n" +
                             msg("diag.leaf.grad_not_stored" if grad_call else "diag.leaf.no_backward"))


def require_path(autograd, leaves, trace, wd, xd):
    """Leaves backward did not reach, or reached by one path of two, where
    the trace shows part of the graph computed without recording (.data,
    .detach(), torch.no_grad())."""
    if not (trace.count("data", "detach") or trace.ops_without_grad):
        return
    for record, name in zip(leaves, "wx"):
        if isinstance(record, TensorRecord) and record.grad is None:
            autograd.require(False, msg("cmp.none", what=f"{name}.grad") + "\n" + msg("diag.leaf.cut_off", what=name))
    got, expected = grads_of(leaves[:1])[0], 2 * wd + xd + 1
    for part, value in (("a", xd + wd), ("b", wd + 1)):
        if same(got, value) and not same(value, expected):
            autograd.fail_with("w.grad", got, expected, msg("diag.leaf.path_cut", what=part))


def require_sum(autograd, got, expected, what):
    """Gradients that are the expected ones divided by the number of
    elements: a mean where the task sums."""
    k = expected[0].numel()
    if k >= 2 and all(same(g, e / k) for g, e in zip(got, expected)):
        autograd.fail_with(what, got[0], expected[0], msg("diag.graph.sum_not_mean", k=k))


# torch functions that multiply matrices: the sum of w * x only for 1-D tensors
MATMULS = ("__matmul__", "__rmatmul__", "matmul", "dot", "vdot", "inner", "mm", "mv", "bmm", "tensordot")


def matmul_loss(trace, shape):
    """The diagnosis of a loss written as a matrix product (w @ x), right
    for 1-D inputs only; None for 1-D inputs or without one."""
    # an op that raised is among the trace's errors, not its ops
    ops = [name for name in [op.name for op in trace.ops] + [e.op for e in trace.errors] if name in MATMULS]
    return msg("diag.leaf.matmul_loss", op=ops[0]) if ops and len(shape) >= 2 else None


def with_diagnosis(failure, hint):
    """The student's error with ``hint`` in place of the generic diagnosis."""
    generic = diagnose_error(failure.message)
    feedback = failure.feedback.replace(generic, hint) if generic else f"{failure.feedback}\n{hint}"
    return StudentFailure(feedback, status=failure.grade_status, error_type=failure.error_type,
                          message=failure.message)


def copy_hint(record, what):
    """The diagnosis for a returned tensor that is a copy of the one asked for."""
    if not isinstance(record, TensorRecord):
        return None
    if record.grad_fn is not None:
        return msg("diag.leaf.made_copy", what=what, grad_fn=record.grad_fn)
    if not record.requires_grad:
        return msg("diag.leaf.detached_copy", what=what)
    return None


# -- graphs for predict_leaves ------------------------------------------------------

def build(nodes):
    tensors = []
    with torch.enable_grad():
        for node in nodes:
            if node[0] == "input":
                tensors.append(torch.ones(2, dtype=torch.float64, requires_grad=node[1]))
            elif node[0] == "add":
                tensors.append(tensors[node[1]] + tensors[node[2]])
            elif node[0] == "mul":
                tensors.append(tensors[node[1]] * tensors[node[2]])
            else:
                tensors.append(torch.exp(tensors[node[1]]))
    return tensors


def random_graph(rng):
    """A few inputs, some requiring grad, then a few operations on earlier
    tensors; redrawn until the last tensor requires grad (so backward runs)."""
    for _ in range(200):
        count = rng.randint(2, 4)
        nodes = [["input", bool(rng.randint(0, 1))] for _ in range(count)]
        for _ in range(rng.randint(2, 5)):
            op = rng.choice(OPS)
            i = rng.randint(0, len(nodes) - 1)
            nodes.append(["exp", i] if op == "exp" else [op, i, rng.randint(0, len(nodes) - 1)])
        if build(nodes)[-1].requires_grad:
            return nodes
    raise RuntimeError("random_graph: no graph whose output requires grad was drawn")


def edge_graph(rng):
    """A graph with every case, the inputs in a random order: an input the
    loss uses, one that does not require grad, one never used, one used only
    by a branch the loss ignores; an operation on tensors that do not require
    grad (a leaf); a branch the loss ignores; an operation with one input
    that requires grad and one that does not."""
    roles = [("used", True), ("plain", False), ("unused", True), ("dead", True)]
    roles = [roles[int(i)] for i in rng.numpy.permutation(4)]
    at = {role: k for k, (role, _) in enumerate(roles)}
    nodes = [["input", flag] for _, flag in roles]
    nodes.append([rng.choice(("add", "mul")), at["plain"], at["plain"]])
    nodes.append([rng.choice(("add", "mul")), at["dead"], at["used"]])
    mixed = [at["used"], 4] if rng.randint(0, 1) else [4, at["used"]]
    nodes.append([rng.choice(("add", "mul")), *mixed])
    nodes.append(["exp", 6])
    return nodes


# The smallest case: the loss is an input's own sum, so the last tensor is a leaf with a gradient.
TINY_GRAPH = [["input", False], ["input", True]]


def truth(nodes):
    tensors = build(nodes)
    with torch.enable_grad():
        tensors[-1].sum().backward()
    is_leaf = [bool(t.is_leaf) for t in tensors]
    has_grad = [bool(t.is_leaf and t.grad is not None) for t in tensors]
    return is_leaf, has_grad, [bool(t.requires_grad) for t in tensors]


def node_name(nodes, k):
    node = nodes[k]
    if node[0] == "input":
        return msg("label.node.input", k=k, requires_grad=node[1])
    if node[0] == "exp":
        return f"t{k} = exp(t{node[1]})"
    return f"t{k} = t{node[1]} {'+' if node[0] == 'add' else '*'} t{node[2]}"


def as_list(value):
    """A 1-D numpy or torch array of a prediction, as a list."""
    if isinstance(value, numpy.ndarray) and value.ndim == 1:
        return value.tolist()
    if isinstance(value, TensorRecord) and len(value.shape) == 1:
        return value.data.tolist()
    return value


def leaf_hints(nodes, got, is_leaf, requires):
    """The diagnoses of wrong is_leaf predictions, by the kind of node."""
    wrong = {}
    for k, (node, want) in enumerate(zip(nodes, is_leaf)):
        if got[k] is want or type(got[k]) is not bool:
            continue
        if node[0] == "input":
            kind = "diag.leaf.created_leaf"
        elif not requires[k]:
            kind = "diag.leaf.op_without_grad"
        elif not all(requires[i] for i in node[1:]):
            kind = "diag.leaf.any_input"
        else:
            kind = "diag.leaf.recorded_op"
        wrong.setdefault(kind, []).append(f"t{k}")
    return [msg(kind, names=", ".join(names)) for kind, names in wrong.items()]


def grad_hints(got, has_grad, is_leaf, requires):
    """The diagnoses of wrong has_grad predictions, by the kind of node."""
    wrong = {}
    for k, want in enumerate(has_grad):
        if got[k] is want or type(got[k]) is not bool:
            continue
        if want:
            kind = "diag.leaf.reached"
        elif not is_leaf[k]:
            kind = "diag.leaf.nonleaf_no_grad"
        elif not requires[k]:
            kind = "diag.leaf.no_requires_grad"
        else:
            kind = "diag.leaf.unreached"
        wrong.setdefault(kind, []).append(f"t{k}")
    return [msg(kind, names=", ".join(names)) for kind, names in wrong.items()]


def compare_predictions(autograd, got, want, what, nodes, hints):
    labels = [msg("label.leaf.flag_of", flag=what, node=node_name(nodes, k)) for k in range(len(nodes))]
    items = got if isinstance(got, (list, tuple)) and len(got) == len(want) else None
    extra = [msg("leaf.graph_nodes", nodes=nodes)]
    if items is not None:
        extra += hints(items)
        if any(type(g) is int for g in items):
            extra.append(msg("diag.leaf.bools"))
    autograd.assert_equal(got, want, what, labels=labels, hint="\n".join(extra))


# -- checks ----------------------------------------------------------------------

@pytest.mark.grade(points=2, inputs=("rank 1", "rank 2", "size-1 axis", "negative", "positive"))
def test_tutorial_graph(submission, autograd, grade_rng, grade_device):
    for shape in shapes_of(grade_rng):
        x, w = inputs(grade_rng, grade_device, True, shape)
        result = submission("leaf").tutorial_graph(x, w)
        check_tutorial(autograd, submission.trace, result, x, w)


def check_tutorial(autograd, trace, result, x, w):
    records = autograd.unpack(result, 5, msg("label.returned", what="(w, x, a, b, y)"))
    w_rec, x_rec, a, b, y = records
    xd, wd = x.detach(), w.detach()
    expected = (wd, xd, xd + wd, wd + 1, (xd + wd) * (wd + 1))
    check_order(autograd, [values(r) for r in records], expected, "(w, x, a, b, y)")
    for record, name, value in ((w_rec, "w", wd), (x_rec, "x", xd)):
        autograd.assert_close(record, value, name)
        autograd.assert_meta(record, name, requires_grad=True, is_leaf=True, hint=copy_hint(record, name))
    require_backward(autograd, (w_rec, x_rec), ("w", "x"), trace)
    require_path(autograd, (w_rec, x_rec), trace, wd, xd)
    require_sum(autograd, grads_of((w_rec, x_rec)), (2 * wd + xd + 1, wd + 1), "w.grad")
    autograd.check_grad((w_rec.grad, x_rec.grad), y_of, (x, w), wrt=(1, 0), names=("w.grad", "x.grad"),
                        holders=(w_rec, x_rec), role="leaf", trace=trace)
    for record, name, value in zip((a, b, y), "aby", expected[2:]):
        autograd.assert_close(record, value, name)
        autograd.assert_meta(record, name, is_leaf=False, hint=msg("diag.leaf.detached_copy", what=name))
        autograd.assert_meta(record, name, has_grad=False, hint="diag.nonleaf_grad_kept")


@pytest.mark.grade(points=3, inputs=("rank 1", "rank 2", "rank 3", "size-1 axis", "negative", "positive"))
def test_init_parameter(submission, autograd, grade_rng, grade_device):
    for shape in grade_rng.shapes(ranks=(1, 2, 3), low=2, high=4, one_element=False):
        data, x = grade_rng.randn(*shape, mixed=True), grade_rng.randn(*shape, mixed=True)
        scale = float(grade_rng.numpy.uniform(0.01, 0.5))
        try:
            w = submission("leaf").init_parameter(data, scale, x)
        except StudentFailure as failure:
            hint = matmul_loss(submission.trace, shape)
            if hint is None:
                raise
            raise with_diagnosis(failure, hint) from None
        check_parameter(autograd, submission.trace, w, data, scale, x)


def check_parameter(autograd, trace, w, data, scale, x):
    if isinstance(w, TensorRecord) and not w.requires_grad and same(w, x) and not same(w, data * scale):
        autograd.require(False, "diag.leaf.returned_grad")
    if isinstance(w, TensorRecord) and w.grad_fn is not None:
        autograd.assert_meta(w, "w", is_leaf=True, hint=msg("diag.leaf.scale_first", grad_fn=w.grad_fn))
    autograd.assert_meta(w, "w", is_leaf=True, requires_grad=True)
    autograd.assert_close(w, data * scale, msg("label.leaf.scaled"))
    require_backward(autograd, (w,), ("w",), trace)
    require_sum(autograd, grads_of((w,)), (x,), "w.grad")
    hint = matmul_loss(trace, tuple(x.shape))
    if hint and not same(grads_of((w,))[0], x):
        autograd.fail_with("w.grad", w.grad, x, hint)
    autograd.check_grad(w.grad, dot, (data * scale, x), wrt=(0,), names=("w.grad",), holders=(w,), role="leaf",
                        trace=trace)


@pytest.mark.grade(points=4, instruction_share=0.25)
def test_predict_leaves(submission, autograd, grade_rng):
    # The graph with every case first: its feedback names the rule a wrong answer breaks.
    graphs = [edge_graph(grade_rng), random_graph(grade_rng), TINY_GRAPH]
    predictions = []
    for nodes in graphs:
        result = submission("leaf").predict_leaves(nodes)
        got_leaf, got_grad = autograd.unpack(result, 2, msg("label.returned", what="(is_leaf, has_grad)"))
        predictions.append((as_list(got_leaf), as_list(got_grad)))
    ops = [op.name for trace in submission.traces for op in trace.tensor_ops]
    calls = sum(len(trace.calls) for trace in submission.traces)
    autograd.instruction(not ops and not calls, "req.leaf.no_tensors", count=len(ops) + calls,
                         first=ops[0] if ops else "backward")
    answers = [truth(nodes) for nodes in graphs]
    with autograd.part(2):
        for nodes, (got_leaf, _), (is_leaf, _, requires) in zip(graphs, predictions, answers):
            compare_predictions(autograd, got_leaf, is_leaf, "is_leaf", nodes,
                                lambda got: leaf_hints(nodes, got, is_leaf, requires))
    with autograd.part(2):
        for nodes, (_, got_grad), (is_leaf, has_grad, requires) in zip(graphs, predictions, answers):
            compare_predictions(autograd, got_grad, has_grad, "has_grad", nodes,
                                lambda got: grad_hints(got, has_grad, is_leaf, requires))

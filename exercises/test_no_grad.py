import numpy
import pytest
import torch

from pytest_autograd_grader import (
    GradeFailure,
    StudentFailure,
    TensorRecord,
    diagnose_error,
    error_name,
    first_suspect,
    msg,
    same,
    values,
)

pytestmark = pytest.mark.grade(concept="no_grad")

OPS = ("add", "mul", "exp", "detach")


def second_layer_loss(h, W2):
    return ((h @ W2) ** 2).mean()


def td_loss(w, x, target):
    return ((x @ w - target) ** 2).mean()


def td_loss_through_target(w, x, x_next, r, gamma):
    """The TD loss with the target left in the graph."""
    return ((x @ w - (r + gamma * (x_next @ w))) ** 2).mean()


def td_loss_through_target_only(w, x, x_next, r, gamma):
    """The TD loss with the prediction cut off instead of the target."""
    return ((x @ w.detach() - (r + gamma * (x_next @ w))) ** 2).mean()


# -- graphs for predict_requires_grad -----------------------------------------------

def build(nodes):
    tensors = []
    with torch.enable_grad():
        for node in nodes:
            op, args = node[0], [tensors[i] for i in node[1:] if isinstance(i, int) and not isinstance(i, bool)]
            if op == "input":
                tensors.append(torch.ones(2, dtype=torch.float64, requires_grad=node[1]))
                continue
            if op == "detach":
                tensors.append(args[0].detach())
                continue
            with torch.set_grad_enabled(node[-1] != "no_grad"):
                if op == "add":
                    tensors.append(args[0] + args[1])
                elif op == "mul":
                    tensors.append(args[0] * args[1])
                else:
                    tensors.append(torch.exp(args[0]))
    return tensors


def random_graph(rng):
    count = rng.randint(2, 4)
    nodes = [["input", bool(rng.randint(0, 1))] for _ in range(count)]
    nodes[rng.randint(0, count - 1)][1] = True
    for _ in range(rng.randint(3, 6)):
        op = rng.choice(OPS)
        i = rng.randint(0, len(nodes) - 1)
        node = [op, i] if op in ("exp", "detach") else [op, i, rng.randint(0, len(nodes) - 1)]
        if op != "detach" and rng.randint(0, 3) == 0:
            node.append("no_grad")
        nodes.append(node)
    return nodes


def separating_graph(rng):
    """A graph where every rule decides some node, laid out at random: a
    wrong rule (no_grad ignored, detach() thought to change its source, "all
    inputs" for "any input", ...) gets at least one node wrong."""
    flags = [True, True, False, False]
    order = [int(i) for i in rng.numpy.permutation(4)]
    nodes = [["input", flags[i]] for i in order]
    a, c, b, e = (order.index(i) for i in range(4))  # a, c require grad; b, e do not

    def node(op, *args, no_grad=False):
        args = list(args)
        if len(args) == 2 and rng.randint(0, 1):
            args.reverse()
        op = rng.choice(["add", "mul"]) if op == "binary" else op
        nodes.append([op, *args] + (["no_grad"] if no_grad else []))
        return len(nodes) - 1

    node("binary", a, b)                   # one input requires grad: True
    node("binary", b, e)                   # none does: False
    n3 = node("exp", a, no_grad=True)      # under no_grad: False
    node("binary", n3, c)                  # after the block, with c: True
    n5 = node("binary", a, c, no_grad=True)
    node("exp", n5)                        # from a no_grad result alone: False
    d = node("detach", a)                  # False
    node("binary", a, b)                   # a itself still requires grad: True
    node("exp", a)                         # True: a was not changed by a.detach()
    node("binary", d, c)                   # detached, but c requires grad: True
    node("binary", d, e)                   # False
    node("exp", c)                         # True
    return nodes


def node_name(nodes, k):
    node = nodes[k]
    if node[0] == "input":
        return msg("label.node.input", k=k, requires_grad=node[1])
    if node[0] == "detach":
        return f"t{k} = t{node[1]}.detach()"
    if node[0] == "exp":
        text = f"t{k} = exp(t{node[1]})"
    else:
        text = f"t{k} = t{node[1]} {'+' if node[0] == 'add' else '*'} t{node[2]}"
    return msg("label.node.under_no_grad", node=text) if node[-1] == "no_grad" else text


def explain_prediction(nodes, got, expected):  # noqa: C901  (one branch per way a prediction can be wrong, in the order a student makes them)
    """Diagnoses of a wrong prediction, each told once, for the first node it
    explains. Each node is judged by the student's own predictions for its
    inputs, so a mistake is blamed where it is made, not where it spreads."""
    if not isinstance(got, (list, tuple)) or len(got) != len(nodes) or any(type(g) is not bool for g in got):
        return None
    sources = {node[1] for node in nodes if node[0] == "detach"}
    believed, hints, detached, maybe_detach = list(got), {}, set(), None
    for k, node in enumerate(nodes):
        op, inputs = node[0], [i for i in node[1:] if type(i) is int]
        name = node_name(nodes, k)
        if got[k] != expected[k] and not got[k] and k in sources:
            # a tensor said not to require grad because it is detached later:
            # detach() thought to change its source in place
            hints.setdefault("detach_source", msg("diag.no_grad.detach_source", node=name, source=k))
            believed[k] = True
            continue
        if op == "detach":
            if got[k]:
                hints.setdefault("detach_result", msg("diag.no_grad.detach_result", node=name))
            detached.add(inputs[0])
            continue
        if op == "input" or got[k] == (node[-1] != "no_grad" and any(believed[i] for i in inputs)):
            continue
        if node[-1] == "no_grad":
            hints.setdefault("ignored_no_grad", msg("diag.no_grad.ignored_no_grad", node=name))
        elif got[k]:
            hints.setdefault("no_input", msg("diag.no_grad.no_input", node=name))
        else:
            requiring = [i for i in inputs if believed[i]]
            if not all(i in detached for i in requiring):
                source = next(i for i in requiring if i not in detached)
                hints.setdefault("any_input", msg("diag.no_grad.any_input", node=name, source=source))
            elif all(believed[i] for i in inputs):
                hints.setdefault("detach_source", msg("diag.no_grad.detach_source", node=name, source=requiring[0]))
            else:  # as well explained by "every input must require grad"
                maybe_detach = maybe_detach or msg("diag.no_grad.detach_source", node=name, source=requiring[0])
    if maybe_detach and "any_input" not in hints:
        hints.setdefault("detach_source", maybe_detach)
    return "\n".join(hints.values()) or None


def check_prediction(submission, autograd, nodes, what):
    expected = [bool(t.requires_grad) for t in build(nodes)]
    got = submission("no_grad").predict_requires_grad(nodes)
    if isinstance(got, numpy.ndarray) and got.ndim == 1 and got.dtype == bool:
        got = got.tolist()  # accepted in place of a list, as predict_leaves accepts it
    ops = [op.name for op in submission.trace.tensor_ops]
    autograd.instruction(not ops, "req.no_grad.predict_no_tensors", what=what, ops=", ".join(dict.fromkeys(ops[:20])))
    autograd.assert_equal(got, expected, what, labels=[msg("label.no_grad.requires_grad_of", graph=what,
                                                           node=node_name(nodes, k)) for k in range(len(nodes))],
                          hint=explain_prediction(nodes, got, expected))


# -- helpers ---------------------------------------------------------------------

def recorded_features(trace):
    """The graph node recorded with gradients on before the features' last
    op with gradients off, if any: part of h was computed outside no_grad."""
    off = [i for i, op in enumerate(trace.ops)
           if not op.grad_enabled and op.name not in ("_set_grad_enabled", "set_grad_enabled")]
    if not off:
        return None
    return next((op.node for op in trace.ops[:off[-1]] if op.node), None)


# -- checks ----------------------------------------------------------------------

@pytest.mark.grade(points=3, instruction_share=0.25)
def test_predict_requires_grad(submission, autograd, grade_rng):
    check_prediction(submission, autograd, separating_graph(grade_rng), msg("label.no_grad.graph", n=1))
    check_prediction(submission, autograd, random_graph(grade_rng), msg("label.no_grad.graph", n=2))


def layer_sizes(rng):
    """(N, D, H, C) of each call: all 2 or 3, N and C different (a sum and
    a mean of the squared outputs differ, and so does a mean over one axis
    only), then one of them 1 (an axis of size 1), then all 1 (every tensor
    a single element)."""
    n = rng.randint(2, 3)
    sizes = [n, rng.randint(2, 3), rng.randint(2, 3), 5 - n]
    axis = rng.randint(0, 3)
    return [tuple(sizes), tuple(1 if i == axis else s for i, s in enumerate(sizes)), (1, 1, 1, 1)]


@pytest.mark.grade(points=3, instruction_share=0.25,
                   inputs=("rank 2", "size-1 axis", "one element", "negative", "positive"))
def test_frozen_features(submission, autograd, grade_rng, grade_device):
    cases = []
    for n, d, h, c in layer_sizes(grade_rng):
        x = grade_rng.randn(n, d, mixed=True)
        W1 = grade_rng.randn(d, h, requires_grad=True, mixed=True)
        W2 = grade_rng.randn(h, c, requires_grad=True, mixed=True)
        result = frozen_call(submission, x, W1, W2)
        trace = submission.trace
        autograd.instruction(bool(trace.ops_without_grad) or trace.count("detach", "detach_") > 0,
                             "req.no_grad.frozen_no_grad")
        autograd.instruction(trace.count("detach", "detach_") == 0, "req.no_grad.frozen_detach")
        node = recorded_features(trace)
        autograd.instruction(node is None, "req.no_grad.frozen_partly", node=node)
        records = autograd.unpack(result, 3, msg("label.returned", what="(h, W1.grad, W2.grad)"))
        cases.append((records, (x, W1, W2), squeezed(trace, x, W1, W2)))
    # each part is right only when it is right for every size
    with autograd.part(1):
        for (h_rec, _, _), (x, W1, _), squeeze in cases:
            autograd.assert_meta(h_rec, "h", requires_grad=False, grad_fn=None)
            shape = (x.shape[0], W1.shape[1])
            if squeeze and isinstance(h_rec, TensorRecord) and tuple(h_rec.shape) != shape:
                autograd.require(False, msg("cmp.shape", what="h", expected=shape, got=tuple(h_rec.shape)) + "\n"
                                 + squeeze)
            autograd.assert_close(h_rec, torch.tanh(x @ W1.detach()), "h")
    with autograd.part(1):
        for (_, W1_grad, _), _, _ in cases:
            autograd.assert_equal(W1_grad, None, msg("label.no_grad.frozen"))
    with autograd.part(1):
        for (_, _, W2_grad), (x, W1, W2), _ in cases:
            hv = torch.tanh(x @ W1.detach())
            require_mean_of_all(autograd, W2_grad, autograd.grad(second_layer_loss, (hv, W2), wrt=(1,))[0],
                                (x.shape[0], W2.shape[1]))
            autograd.check_grad(W2_grad, second_layer_loss, (hv, W2), wrt=(1,), names=("W2.grad",),
                                mean_over=x.shape[0] * W2.shape[1])


def frozen_call(submission, x, W1, W2):
    """frozen_features(x, W1, W2), its error explained where the trace can."""
    try:
        return submission("no_grad").frozen_features(x, W1, W2)
    except StudentFailure as failure:
        trace = submission.trace
        generic = diagnose_error(failure.message)
        if error_name(failure.message) == "no_grad_fn" and trace.ops_without_grad and not trace.nodes and generic:
            # every op ran with gradients off, the loss included
            raise GradeFailure(failure.feedback.replace(generic, msg("diag.no_grad.loss_under_no_grad"))) from None
        hint = squeezed(trace, x, W1, W2)
        if hint is None:
            raise
        raise with_diagnosis(failure, hint) from None


def squeezed(trace, *tensors):
    """The diagnosis of a .squeeze() that removed an axis of size 1 (None
    without a squeeze, or where no axis has size 1)."""
    sizes = [size for t in tensors for size in t.shape]
    if 1 in sizes and trace.count("squeeze", "squeeze_"):
        return msg("diag.no_grad.squeeze")
    return None


def with_diagnosis(failure, hint):
    """The student's error with ``hint`` in place of the generic diagnosis."""
    generic = diagnose_error(failure.message)
    feedback = failure.feedback.replace(generic, hint) if generic else f"{failure.feedback}\n{hint}"
    return StudentFailure(feedback, status=failure.grade_status, error_type=failure.error_type,
                          message=failure.message)


def require_mean_of_all(autograd, produced, expected, out_shape):
    """A W2.grad that is k times too large, k the size of one axis of the
    output: the loss averages over the other axis only."""
    n, c = out_shape
    got = values(produced)
    for k, axis in ((c, "N"), (n, "C")):
        if got is not None and 2 <= k < n * c and same(got, expected * k):
            autograd.fail_with("W2.grad", got, expected, msg("diag.no_grad.mean_one_axis", k=k, axis=axis, n=n * c))


def td_sizes(rng):
    """(N, D) of each call: N of 4 or more and D of 2 or 3 (never equal, so
    a mean over D is not one over N), then D = 1 (w a single element, x an
    axis of size 1), then N = 1 (r a single element; a sum and a mean agree
    there, so it comes last)."""
    return [(rng.randint(4, 6), rng.randint(2, 3)), (rng.randint(2, 5), 1), (1, rng.randint(2, 3))]


@pytest.mark.grade(points=3, inputs=("rank 1", "rank 2", "size-1 axis", "one element", "negative", "positive"))
def test_td_grad(submission, autograd, grade_rng, grade_device):
    cases = []
    for n, d in td_sizes(grade_rng):
        w = grade_rng.randn(d, requires_grad=True, mixed=True)
        x, x_next = grade_rng.randn(n, d, mixed=True), grade_rng.randn(n, d, mixed=True)
        r = grade_rng.randn(n, mixed=True)
        gamma = float(grade_rng.numpy.uniform(0.5, 0.99))
        try:
            result = submission("no_grad").td_grad(w, x, x_next, r, gamma)
        except StudentFailure as failure:
            hint = squeezed(submission.trace, w, x)
            if hint is None:
                raise
            raise with_diagnosis(failure, hint) from None
        detached = submission.trace.count("detach", "detach_") > 0
        cases.append((autograd.unpack(result, 2, msg("label.returned", what="(target, w.grad)")), detached,
                      (w, x, x_next, r, gamma)))
    judged = [td_expectations(autograd, grad, detached, inputs) for (_, grad), detached, inputs in cases]
    # each part is right only when it is right for every size
    with autograd.part(1):
        for ((target, _), detached, inputs), (_, hint, wrong_grad) in zip(cases, judged):
            # the diagnosis is told once, with w.grad, when the gradient shows it
            autograd.assert_meta(target, "target", requires_grad=False, grad_fn=None,
                                 hint=None if hint or detached or not wrong_grad else "diag.no_grad.target_not_cut")
            w, _, x_next, r, gamma = inputs
            autograd.assert_close(target, r + gamma * (x_next @ w.detach()), "target")
    with autograd.part(2):
        for ((_, grad), _, inputs), (expected, hint, _) in zip(cases, judged):
            if hint:
                autograd.fail_with("w.grad", grad, expected, hint)
            w, x, x_next, r, gamma = inputs
            autograd.check_grad(grad, td_loss, (w, x, r + gamma * (x_next @ w.detach())), wrt=(0,),
                                names=("w.grad",), mean_over=x.shape[0])


def td_expectations(autograd, grad, detached, inputs):
    """The expected w.grad, the diagnosis its value supports (None: none)
    and whether the student's is wrong: the gradient tells which part
    stayed in the graph."""
    w, x, x_next, r, gamma = inputs
    (expected,) = autograd.grad(td_loss, (w, x, r + gamma * (x_next @ w.detach())), wrt=(0,))
    unused = msg("diag.no_grad.detach_unused" if detached else "diag.no_grad.target_not_cut")
    hint = first_suspect(grad, expected, lambda: [
        (autograd.grad(td_loss_through_target, inputs, wrt=(0,))[0], unused),
        (autograd.grad(td_loss_through_target_only, inputs, wrt=(0,))[0], msg("diag.no_grad.wrong_side")),
        (expected / 2, msg("diag.no_grad.halved")),
        (expected * x.shape[0] / w.shape[0], msg("diag.no_grad.mean_over_d", d=w.shape[0], n=x.shape[0]))])
    return expected, hint, not same(values(grad), expected)

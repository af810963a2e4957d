import pytest
import torch

from pytest_autograd_grader import msg, same, values

pytestmark = pytest.mark.grade(concept="graph")

# The shapes the docstrings allow, each drawn on every run, with values of both signs.
INPUTS = ("rank 1", "rank 2", "size-1 axis", "negative", "positive")

# Written into x and w on every run, beside random values: the tutorial's
# point (x = 2, w = 1) and one element for each sign pattern of a = x + w and
# b = w + 1 (and of dy/dw = a + b), so a mistake that depends on a sign
# cannot hide behind a lucky draw.
FIXED_X = (2.0, -1.5, 0.7, 2.5)
FIXED_W = (1.0, 0.5, -2.0, -1.5)


def y_of(x, w):
    return ((x + w) * (w + 1)).sum()


def shapes(rng, ranks=(1, 2)):
    """One shape of each rank in ``ranks`` (1-D with 4 to 7 elements, 2-D
    with 2 to 4 per side) and a 2-D one with an axis of size 1 (4 to 6
    elements): each shape the docstrings allow (at least 4 elements), on
    every run."""
    found = []
    if 1 in ranks:
        found.append((rng.randint(4, 7),))
    found.append((rng.randint(2, 4), rng.randint(2, 4)))
    n = rng.randint(4, 6)
    found.append(rng.choice(((1, n), (n, 1))))
    return found


def inputs(rng, device, requires_grad, shape):
    """x and w of ``shape``, float64, holding FIXED_X/FIXED_W and random values."""
    x, w = rng.randn(*shape, device="cpu"), rng.randn(*shape, device="cpu")
    x.view(-1)[:4] = torch.tensor(FIXED_X, dtype=x.dtype)
    w.view(-1)[:4] = torch.tensor(FIXED_W, dtype=w.dtype)
    rng.note(x, w)
    return x.to(device).requires_grad_(requires_grad), w.to(device).requires_grad_(requires_grad)


def cases(rng, device, requires_grad, ranks=(1, 2)):
    return [inputs(rng, device, requires_grad, shape) for shape in shapes(rng, ranks)]


def check_order(autograd, got, expected, order):
    """The right values in the wrong places of a returned tuple."""
    if len(got) == len(expected) and not all(same(g, e) for g, e in zip(got, expected)) and \
            all(any(same(g, e) for g in got) for e in expected):
        autograd.require(False, "diag.graph.order", expected=order)


def mean_diagnosis(got, expected):
    """The diagnosis when every produced gradient is the expected one divided
    by k >= 2, where k is what a mean divides by: the number of elements (a
    mean where the task sums), or the size of one axis (a mean over the rows
    or the columns of x); None otherwise."""
    shape = expected[0].shape
    k = expected[0].numel()
    if k >= 2 and all(same(g, e / k) for g, e in zip(got, expected)):
        return msg("diag.graph.sum_not_mean", k=k)
    for axis, size in enumerate(shape):
        if 2 <= size < k and all(same(g, e / size) for g, e in zip(got, expected)):
            return msg("diag.graph.mean_axis", k=size, axis=axis, other=1 - axis)
    return None


@pytest.mark.grade(points=2, instruction_share=0.25, inputs=INPUTS)
def test_build_graph(submission, autograd, grade_rng, grade_device):
    for x, w in cases(grade_rng, grade_device, requires_grad=True):
        build_graph_case(submission, autograd, x, w)


def build_graph_case(submission, autograd, x, w):
    result = submission("graph").build_graph(x, w)
    trace = submission.trace
    a, b, y = autograd.unpack(result, 3, msg("label.graph.build_graph"))
    xd, wd = x.detach(), w.detach()
    expected = (xd + wd, wd + 1, (xd + wd) * (wd + 1))
    check_order(autograd, [values(t) for t in (a, b, y)], expected, "(a, b, y)")
    for record, name, value in zip((a, b, y), ("a = x + w", "b = w + 1", "y = a * b"), expected):
        autograd.assert_close(record, value, name)
    for record, name in zip((a, b, y), "aby"):
        autograd.assert_meta(record, name, requires_grad=True, is_leaf=False,
                             hint=msg("diag.graph.not_recorded", what=name))
    adds = trace.nodes_named("AddBackward0")
    autograd.instruction(adds <= 2, "req.graph.y_from_a_b", adds=adds)


@pytest.mark.grade(points=2, instruction_share=0.25, inputs=INPUTS)
def test_grad_fn_names(submission, autograd, grade_rng, grade_device):
    for x, w in cases(grade_rng, grade_device, requires_grad=True):
        grad_fn_names_case(submission, autograd, x, w)


def grad_fn_names_case(submission, autograd, x, w):
    names = submission("graph").grad_fn_names(x, w)
    trace = submission.trace
    hint = None
    if isinstance(names, (list, tuple)):
        texts = [n for n in names if isinstance(n, str)]
        if "NoneType" in texts:
            hint = msg("diag.graph.none_type", count=texts.count("NoneType"))
        elif any("object at" in n or n.startswith("<") for n in texts):
            hint = "diag.graph.repr"
    autograd.assert_equal(names, ("AddBackward0", "AddBackward0", "MulBackward0"), msg("label.graph.grad_fn_names"),
                          labels=[msg("label.graph.grad_fn_name", name=name) for name in "aby"], hint=hint)
    nodes, reads = len(trace.nodes), trace.count("grad_fn")
    autograd.instruction(nodes >= 3 and reads >= 1, "req.graph.read_grad_fn", nodes=nodes, reads=reads)


@pytest.mark.grade(points=3, instruction_share=0.25, inputs=INPUTS)
def test_hand_gradients(submission, autograd, grade_rng, grade_device):
    for x, w in cases(grade_rng, grade_device, requires_grad=False):
        hand_gradients_case(submission, autograd, x, w)


def hand_gradients_case(submission, autograd, x, w):
    got = submission("graph").hand_gradients(x, w)
    trace = submission.trace
    made = sum(not call.raised for call in trace.calls)
    autograd.instruction(made == 0, "req.graph.by_hand", count=made)
    dy_dw, dy_dx = autograd.unpack(got, 2, msg("label.graph.hand_gradients"))
    a, b = x + w, w + 1
    expected = (a + b, b)
    for produced, what in ((dy_dw, "dy/dw"), (dy_dx, "dy/dx")):
        if produced is None:
            # x.grad or w.grad read where nothing ran backward: no advice to call it here
            autograd.require(False, "\n".join([msg("cmp.none", what=what), msg("diag.graph.hand_none")]))
    gw, gx = values(dy_dw), values(dy_dx)
    check_order(autograd, [gw, gx], expected, "(dy_dw, dy_dx)")
    if not same(gw, expected[0]) and (same(gw, a) or same(gw, b)):
        autograd.fail_with("dy/dw", gw, expected[0], msg("diag.graph.one_path"))
    if same(gx, a):
        autograd.fail_with("dy/dx", gx, expected[1], msg("diag.graph.local_swap"))
    for got_one, want, what in ((gw, expected[0], "dy/dw"), (gx, expected[1], "dy/dx")):
        want = want.double().cpu()
        if got_one is not None and got_one.shape == want.shape and not same(got_one, want) \
                and same(got_one.abs(), want.abs()):
            wrong = (got_one - want).abs() > 1e-6 * (1 + want.abs())
            if bool(wrong.all()):
                continue  # every sign flipped: the generic diagnosis says so
            where = msg("label.graph.negative") if bool((want[wrong] < 0).all()) \
                else msg("label.graph.positive") if bool((want[wrong] > 0).all()) else msg("label.graph.either_sign")
            autograd.fail_with(what, got_one, want,
                      msg("diag.graph.sign_some", count=int(wrong.sum()), total=want.numel(), where=where))
    autograd.check_grad(got, y_of, (x, w), wrt=(1, 0), names=("dy/dw", "dy/dx"), trace=trace)


@pytest.mark.grade(points=3, instruction_share=0.25, inputs=("rank 2", "size-1 axis", "negative", "positive"))
def test_autograd_gradients(submission, autograd, grade_rng, grade_device):
    for x, w in cases(grade_rng, grade_device, requires_grad=True, ranks=(2,)):
        autograd_gradients_case(submission, autograd, x, w)


def autograd_gradients_case(submission, autograd, x, w):
    got = submission("graph").autograd_gradients(x, w)
    trace = submission.trace
    autograd.instruction(any(not call.raised for call in trace.calls), "req.graph.use_autograd")
    w_grad, x_grad = autograd.unpack(got, 2, msg("label.graph.autograd_gradients"))
    xd, wd = x.detach(), w.detach()
    expected = (2 * wd + xd + 1, wd + 1)
    produced = [values(w_grad), values(x_grad)]
    check_order(autograd, produced, expected, "(w.grad, x.grad)")
    if same(produced[0], wd) and same(produced[1], xd):
        autograd.require(False, "diag.graph.returned_inputs", names="(w, x)", grads="(w.grad, x.grad)")
    hint = mean_diagnosis(produced, expected)
    if hint is not None:
        autograd.fail_with("w.grad", produced[0], expected[0], hint)
    autograd.check_grad(got, y_of, (x, w), wrt=(1, 0), names=("w.grad", "x.grad"), trace=trace)

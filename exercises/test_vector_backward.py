import pytest
import torch

from pytest_autograd_grader import COPIES_MEMORY, TensorRecord, msg, same, shared_memory, values

pytestmark = pytest.mark.grade(concept="vector_backward")


def product(x, Y):
    return x @ Y


def two_losses(w, x):
    return ((x @ w) ** 2).mean(), w.exp().sum()


def two_losses_l1_summed(w, x):
    return ((x @ w) ** 2).sum(), w.exp().sum()


def two_losses_l2_mean(w, x):
    return ((x @ w) ** 2).mean(), w.exp().mean()


# -- reading answers and traces --------------------------------------------------------

def require_backward(autograd, grad, what, trace):
    """A gradient that is None because backward never ran gets that said."""
    if grad is None and not any(not call.raised for call in trace.backward_calls):
        autograd.require(False, "\n".join([msg("cmp.none", what=what), msg("diag.dynamic_graph.no_backward")]))


def ones_diagnosis(trace):
    """Why an answer is the VJP with ones, from the backward calls: no
    gradient passed (.sum() or backward() on a 1-element output), or a
    gradient of ones passed."""
    if any(call.gradient for call in trace.calls if not call.raised):
        return msg("diag.vector_backward.ones_not_v")
    return msg("diag.vector_backward.sum_not_v")


MATMUL_NODES = ("MmBackward0", "MvBackward0", "BmmBackward0", "DotBackward0")


# -- jacobian_rows -----------------------------------------------------------------------

def rows_diagnosis(got, rows, trace):
    """The likely mistake behind a wrong (m, n) matrix of Jacobian rows, from
    how its rows relate to the right ones; None when none fits."""
    m = rows.shape[0]
    if got is None or got.shape != rows.shape or m < 2 or same(got, rows):
        return None
    total = rows.sum(dim=0, keepdim=True).expand_as(rows)
    aliased = (not same(total, rows) and same(got, total)) or bool((got == 0).all())
    shared = shared_memory(trace, "x") if aliased else None
    if shared:
        return shared  # kept through detach() or a view: a copy in name only
    if not same(total, rows) and same(got, total):
        if trace.completed_calls >= m and not trace.count(*COPIES_MEMORY):
            # one call per row and no copy: every row is the same tensor
            return msg("diag.vector_backward.rows_alias", m=m)
        return msg("diag.vector_backward.rows_ones")
    if not same(rows.cumsum(dim=0), rows) and same(got, rows.cumsum(dim=0)):
        return msg("diag.vector_backward.rows_not_zeroed")
    if bool((got == 0).all()) and trace.count("zero_", "fill_", "mul_"):
        return msg("diag.vector_backward.rows_zero")
    return None


@pytest.mark.grade(points=3, instruction_share=0.25,
                   inputs=("rank 2", "size-1 axis", "one element", "negative", "positive"))
def test_jacobian_rows(submission, autograd, grade_rng, grade_device):
    tutorial = (torch.tensor([[1.0, 2.0]], dtype=torch.float64, device=grade_device),
                torch.tensor([[3.0, 4.0], [5.0, 6.0]], dtype=torch.float64, device=grade_device))
    # x of shape (1, n) for n >= 2 and n = 1 (a single element; Y then has one
    # row), each with at least 2 columns (2 rows to find), then the tutorial's
    cases = [(grade_rng.randn(1, n, mixed=True), grade_rng.randn(n, grade_rng.randint(2, 4), mixed=True))
             for n in (grade_rng.randint(2, 4), 1)] + [tutorial]
    for x, Y in cases:
        got = submission("vector_backward").jacobian_rows(x.requires_grad_(True), Y)
        trace = submission.trace
        columns = Y.shape[1]
        built = trace.nodes_named(*MATMUL_NODES)
        autograd.instruction(built <= 1, "req.vector_backward.build_once", built=built)
        rows = []
        for j in range(columns):
            e = torch.zeros(1, columns, dtype=x.dtype, device=x.device)
            e[0, j] = 1.0
            rows.append(autograd.grad(product, (x, Y), e, wrt=(0,))[0])
        expected = torch.cat(rows)
        what = msg("label.vector_backward.rows", x=tuple(x.shape), y=tuple(Y.shape))
        produced = values(got)
        if produced is not None and produced.shape == (columns, 1, x.shape[1]):
            shape = tuple(produced.shape)
            autograd.require(False, "\n".join([msg("cmp.shape", what=what, expected=tuple(expected.shape), got=shape),
                                               msg("diag.vector_backward.stacked", got=shape, m=columns)]))
        diagnosis = rows_diagnosis(produced, expected.double().cpu(), trace)
        if diagnosis:
            autograd.fail_with(what, produced, expected, diagnosis)
        if isinstance(got, TensorRecord) and got.shape == (len(rows), x.shape[1]):
            for j, row in enumerate(rows):  # row by row, so each row's mistake can be named
                autograd.assert_grad(got.data[j:j + 1], row, msg("label.vector_backward.row", what=what, j=j))
        autograd.assert_grad(got, expected, what)
        calls = trace.completed_calls
        autograd.instruction(calls >= columns, "req.vector_backward.rows_calls", calls=calls, m=columns)


# -- vjp_matmul --------------------------------------------------------------------------

def scale_of(got, expected):
    """c when every produced gradient is c * the expected one (c != 1), else None."""
    pairs = [(g, e.detach().double().cpu()) for g, e in zip(got, expected)]
    if any(g is None or g.shape != e.shape for g, e in pairs):
        return None
    norm = sum(float((e * e).sum()) for _, e in pairs)
    if norm == 0:
        return None
    c = sum(float((g * e).sum()) for g, e in pairs) / norm
    if abs(c - 1) < 1e-6 or not all(same(g, c * e) for g, e in pairs):
        return None
    return c


@pytest.mark.grade(points=3, instruction_share=0.25,
                   inputs=("rank 2", "size-1 axis", "one element", "negative", "positive"))
def test_vjp_matmul(submission, autograd, grade_rng, grade_device):
    # (b, n, m) of sizes 2 to 4, then one of them 1, then all 1 (every tensor a single element)
    for b, n, m in grade_rng.shapes(ranks=(3,)):
        check_vjp(submission, autograd, grade_rng, b, n, m)


def check_vjp(submission, autograd, grade_rng, b, n, m):
    x = grade_rng.randn(b, n, requires_grad=True, mixed=True)
    Y = grade_rng.randn(n, m, requires_grad=True, mixed=True)
    v = grade_rng.randn(b, m, mixed=True)
    got = submission("vector_backward").vjp_matmul(x, Y, v)
    trace = submission.trace
    names = (f"x.grad (x: {b}x{n}, Y: {n}x{m})", f"Y.grad (x: {b}x{n}, Y: {n}x{m})")
    calls = [call for call in trace.calls if not call.raised]
    if isinstance(got, (tuple, list)) and len(got) == 2:
        for one_got, what in zip(got, names):
            require_backward(autograd, one_got, what, trace)
        produced = [values(g) for g in got]
        expected = autograd.grad(product, (x, Y), v)
        ones = autograd.grad(product, (x, Y), torch.ones_like(v))
        for one_got, want, one, what in zip(produced, expected, ones, names):
            if not same(one_got, want) and not same(one, want) and same(one_got, one):
                autograd.fail_with(what, one_got, want, ones_diagnosis(trace))
        c = scale_of(produced, expected)
        if c is not None and len(calls) == 1 and calls[0].gradient:
            # one backward with a gradient that is a multiple of v
            autograd.fail_with(names[0], produced[0], expected[0], msg("diag.vector_backward.scaled_v", k=c))
    autograd.check_grad(got, product, (x, Y), grad_outputs=v, names=names, trace=trace)
    autograd.instruction(len(calls) == 1, "req.vector_backward.vjp_one_call", calls=len(calls))


# -- weighted_losses ---------------------------------------------------------------------

@pytest.mark.grade(points=3, instruction_share=0.25,
                   inputs=("rank 1", "rank 2", "size-1 axis", "one element", "negative", "positive"))
def test_weighted_losses(submission, autograd, grade_rng, grade_device):
    # w of n >= 2 elements, then of one (x then has a single column)
    for n in (grade_rng.randint(2, 4), 1):
        check_weighted(submission, autograd, grade_rng, grade_device, grade_rng.randint(2, 5), n)


def check_weighted(submission, autograd, grade_rng, grade_device, b, n):
    w = grade_rng.randn(n, requires_grad=True, mixed=True)
    x = grade_rng.randn(b, n, mixed=True)
    # Two different weights, neither near 1, in a random order: swapped,
    # squared or missing weights all give other gradients.
    small, large = grade_rng.numpy.uniform(0.2, 0.8), grade_rng.numpy.uniform(1.3, 3.0)
    pair = (small, large) if grade_rng.randint(0, 1) else (large, small)
    weights = torch.tensor(pair, dtype=torch.float64, device=grade_device)
    got = submission("vector_backward").weighted_losses(w, x, weights)
    trace = submission.trace
    what = f"w.grad (weights = [{pair[0]:.4g}, {pair[1]:.4g}])"
    require_backward(autograd, got, what, trace)
    (expected,) = autograd.grad(two_losses, (w, x), (weights[0], weights[1]), wrt=(0,))
    produced = values(got)
    if produced is not None and not same(produced, expected):
        one = torch.ones((), dtype=torch.float64, device=grade_device)
        for key, fn, grads in (
                ("diag.vector_backward.unweighted", two_losses, (one, one)),
                ("diag.vector_backward.weights_swapped", two_losses, (weights[1], weights[0])),
                ("diag.vector_backward.weights_twice", two_losses, (weights[0] ** 2, weights[1] ** 2)),
                ("diag.vector_backward.l1_sum", two_losses_l1_summed, (weights[0], weights[1])),
                ("diag.vector_backward.l2_mean", two_losses_l2_mean, (weights[0], weights[1]))):
            (wrong,) = autograd.grad(fn, (w, x), grads, wrt=(0,))
            if same(produced, wrong):
                autograd.fail_with(what, produced, expected, msg(key, k=b, n=n))
    autograd.check_grad(got, two_losses, (w, x), grad_outputs=(weights[0], weights[1]), wrt=(0,), names=(what,),
                        trace=trace)
    calls = trace.completed_calls
    autograd.instruction(calls == 1, "req.vector_backward.weighted_one_call", calls=calls)

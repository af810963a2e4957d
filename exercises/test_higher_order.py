import contextlib

import pytest
import torch

from pytest_autograd_grader import (
    Context,
    GradeFailure,
    StudentFailure,
    TensorRecord,
    diagnose_error,
    error_name,
    msg,
    same,
    values,
)

pytestmark = pytest.mark.grade(concept="higher_order")


def poly(c, x):
    """p(x) by Horner's rule, elementwise."""
    out = torch.zeros_like(x)
    for coef in reversed(list(c)):
        out = out * x + coef
    return out


def poly_sum(c, x):
    return poly(c, x).sum()


def logsumexp_of(a):
    return lambda t: torch.logsumexp(a @ t, dim=0)


# What the docstrings allow for x: any shape (ranks 1 to 3 drawn, a size-1
# axis, a single element), values of both signs; every class on every seed.
X_INPUTS = ("rank 1", "rank 2", "rank 3", "size-1 axis", "one element", "negative", "positive")


def polynomial(grade_rng):
    """Coefficients of a polynomial of degree 4 to 6 (so that p'' to p''''
    all depend on x) and one x of each shape of ``grade_rng.shapes`` (ranks
    1 and 2, rank 3 with a size-1 axis, a single element), each of both
    signs where it has two elements or more, |x| >= 0.1."""
    coeffs = grade_rng.randn(grade_rng.randint(4, 6) + 1)
    xs = []
    shapes = grade_rng.shapes(ranks=(1, 2, 3), low=2, high=3)
    for shape in shapes[:2] + shapes[3:]:  # rank 3 with a size-1 axis stands for rank 3: fewer calls
        magnitude = grade_rng.randn(*shape, low=0.1)
        signs = torch.ones(magnitude.numel(), dtype=magnitude.dtype, device=magnitude.device)
        signs[::2] = -1
        x = magnitude * signs.reshape(shape)
        grade_rng.note(x)
        xs.append(x.requires_grad_(True))
    return coeffs, xs


def reversed_poly(c, x):
    """p with its coefficients read highest power first, as numpy.polyval reads them."""
    return poly(c.flip(0), x)


def reversed_poly_sum(c, x):
    return reversed_poly(c, x).sum()


def mean_not_sum(produced, expected, n, what):
    """A gradient taken of a mean over x's n elements (n >= 2) where the task
    sums, in j of the gradient calls: produced == expected / n**j."""
    if n < 2 or produced is None or produced.shape != expected.shape or same(produced, expected):
        return None
    for j in range(1, 5):
        if same(produced, expected / n ** j):
            return msg("diag.higher_order.mean_not_sum", what=what, factor=n ** j, n=n, calls=j)
    return None


def coefficient_order(produced, expected, reversed_value):
    """The values of p read with numpy.polyval's coefficient order."""
    if produced is None or same(produced, expected) or not same(produced, reversed_value):
        return None
    return msg("diag.higher_order.polyval_order")


# -- reading the student's answer and trace -----------------------------------

def completed(trace):
    """The backward / torch.autograd.grad calls that returned."""
    return [call for call in trace.calls if not call.raised]


def missing_graph(trace, producing, returned=None) -> str | None:
    """Why a gradient the student's code took had no graph to differentiate,
    judged from the calls that produced it (the last one counts): None when
    no such call was made (then the generic diagnosis stands)."""
    if not producing:
        return None
    last = producing[-1]
    if last.create_graph:
        return msg("diag.higher_order.graph_cut")
    new_leaf = isinstance(returned, TensorRecord) and returned.is_leaf and returned.requires_grad
    if new_leaf or trace.count("requires_grad_", "requires_grad="):
        return msg("diag.higher_order.new_leaf")
    if last.retain_graph:
        return msg("diag.higher_order.retain_not_create")
    if any(call.create_graph for call in producing):
        return msg("diag.higher_order.create_graph_call", k=len(producing))
    return msg("diag.no_create_graph")


@contextlib.contextmanager
def differentiating_gradients(submission):
    """Around a student call that differentiates its own gradients: the
    errors PyTorch raises when a gradient has no graph get the diagnosis the
    trace supports (create_graph missing, retain_graph used instead, the
    gradient cut off or made a new leaf), not the generic one."""
    try:
        yield
    except StudentFailure as failure:
        name = error_name(failure.message or "")
        trace = submission.trace
        hint = missing_graph(trace, completed(trace)) if name in ("no_grad_fn", "unused_input") else None
        if hint is None:
            raise
        generic = diagnose_error(failure.message)
        feedback = failure.feedback.replace(generic, hint) if generic and generic in failure.feedback \
            else f"{failure.feedback}\n{hint}"
        raise StudentFailure(feedback, status=failure.grade_status, error_type=failure.error_type,
                             message=failure.message) from None


def assert_value(autograd, got, expected, what, context, diagnose):
    """``autograd.assert_grad``, where ``diagnose()`` (called only on a
    mismatch) may name the mistake better than the generic diagnosis: its
    text then replaces that one. None fails without a diagnosis: a function
    that forgot its return statement gives None too."""
    if got is None:
        raise GradeFailure(msg("cmp.none", what=what))
    autograd.assert_grad(got, expected, what, context=context, diagnose=diagnose)


# -- the checks -------------------------------------------------------------------

def own_hint(autograd, got, expected, reversed_value, n, what):
    """Fail with the topic's own diagnosis (the coefficients read in
    numpy.polyval's order, a mean where the task sums) where it fits,
    before the generic diagnoses get to guess. ``reversed_value()`` gives
    the value for the coefficients reversed (computed for a wrong answer only)."""
    produced = values(got)
    if produced is None or same(produced, expected):
        return
    hint = coefficient_order(produced, expected, reversed_value()) or mean_not_sum(produced, expected, n, what)
    if hint:
        autograd.fail_with(what, got, expected, hint)


@pytest.mark.grade(points=2, instruction_share=0.25, inputs=X_INPUTS)
def test_first_derivative(submission, autograd, grade_rng, grade_device):
    coeffs, xs = polynomial(grade_rng)
    traces = []
    for x in xs:
        got = submission("higher_order").first_derivative(coeffs, x)
        traces.append(submission.trace)
        autograd.assert_meta(got, "p'(x)")  # a tensor, not a tuple or an array
        (expected,) = autograd.grad(poly_sum, (coeffs, x), wrt=(1,))
        own_hint(autograd, got, expected, lambda x=x: autograd.grad(reversed_poly_sum, (coeffs, x), wrt=(1,))[0],
                 x.numel(), "p'(x)")
        autograd.check_grad(got, poly_sum, (coeffs, x), wrt=(1,), names=("p'(x)",), trace=traces[-1])
    for trace in traces:
        autograd.instruction(not trace.backward_calls and trace.grad_calls, "req.higher_order.first_derivative",
                             backward=len(trace.backward_calls), grad=len(trace.grad_calls))


@pytest.mark.grade(points=3, inputs=X_INPUTS)
def test_first_derivative_is_differentiable(submission, autograd, grade_rng, grade_device):
    coeffs, xs = polynomial(grade_rng)
    what = msg("label.higher_order.second_derivative")
    for x in xs:
        v = grade_rng.randn(*x.shape)
        returned, grads = submission("higher_order").first_derivative.vjp((coeffs, x), (v,))
        autograd.assert_meta(returned, "p'(x)")  # None (no return statement) is not a missing graph
        if isinstance(grads, (tuple, list)) and len(grads) == 1 and grads[0] is None:
            trace = submission.trace
            hint = missing_graph(trace, completed(trace), returned) or msg("diag.requires_grad")
            raise GradeFailure(msg("cmp.none", what=what) + "\n" + hint)
        if isinstance(grads, (tuple, list)) and len(grads) == 1:
            (expected,) = autograd.grad(poly, (coeffs, x), v, wrt=(1,), order=2)
            own_hint(autograd, grads[0], expected,
                     lambda x=x, v=v: autograd.grad(reversed_poly, (coeffs, x), v, wrt=(1,), order=2)[0],
                     x.numel(), what)
        autograd.check_grad(grads, poly, (coeffs, x), grad_outputs=v, wrt=(1,), order=2, names=(what,))


def derivative_diagnosis(k, produced, expected, reversed_values, n, trace):
    """The likely mistake behind a wrong derivative k of ``derivatives``, or
    None (then the generic diagnosis stands)."""
    if produced is None or not produced.numel() or not bool(torch.isfinite(produced).all()):
        return None  # no tensor, an empty one, NaN or inf: the generic feedback says it
    if k == 1 and same(produced, expected[0]):
        return msg("diag.higher_order.shifted")
    if k >= 2 and same(produced, expected[k - 1]):
        return msg("diag.higher_order.repeated", k=k, previous=k - 1)
    if k >= 2 and same(produced, expected[k] + expected[k - 1]) and trace.backward_calls:
        return msg("diag.higher_order.accumulated", what=msg("label.higher_order.derivative", k=k),
                   previous=msg("diag.higher_order.previous_derivative", k=k - 1))
    if k >= 2 and produced is not None and not produced.abs().max() > 0:
        return missing_graph(trace, completed(trace)[:k - 1])
    return coefficient_order(produced, expected[k], reversed_values(k)) or \
        mean_not_sum(produced, expected[k], n, msg("diag.higher_order.previous_derivative", k=k))


@pytest.mark.grade(points=2, instruction_share=0.25, inputs=X_INPUTS)
def test_derivatives(submission, autograd, grade_rng, grade_device):
    coeffs, xs = polynomial(grade_rng)
    derivatives = submission("higher_order").derivatives
    # n = 1 (the vector) catches a fixed number of derivatives; n = 3 or 4
    # (the matrix) a create_graph that only the first call passes and a list
    # built from x.grad; n = 2 (the other shapes) what depends on the shape
    traces = []
    for x, n in [(xs[0], 1), (xs[1], grade_rng.randint(3, 4))] + [(x, 2) for x in xs[2:]]:
        with differentiating_gradients(submission):
            got = derivatives(coeffs, x, n)
        trace = submission.trace
        traces.append((n, trace))
        items = autograd.unpack(got, n, f"derivatives(coeffs, x, n={n})")
        expected = [poly(coeffs, x.detach())] + [autograd.grad(poly_sum, (coeffs, x), wrt=(1,), order=k)[0]
                                                 for k in range(1, n + 1)]

        def reversed_values(k, x=x):  # for a wrong answer only
            return autograd.grad(reversed_poly_sum, (coeffs, x), wrt=(1,), order=k)[0]

        for k, produced in enumerate(items, start=1):
            what = msg("label.case", what=msg("diag.higher_order.previous_derivative", k=k), case=f"n={n}")
            assert_value(autograd, produced, expected[k], what, Context(order=k, calls=1),
                         lambda k=k, produced=values(produced), trace=trace, n=x.numel():
                         derivative_diagnosis(k, produced, expected, reversed_values, n, trace))
    # values first: a list built from x.grad is told as such before the rule
    for n, trace in traces:
        autograd.instruction(not trace.backward_calls and len(trace.grad_calls) >= n, "req.higher_order.derivatives",
                             n=n, backward=len(trace.backward_calls), grad=len(trace.grad_calls))


def hvp_cases(grade_rng):
    """(a, x, v) with m, d >= 2; with a single row (m = 1); with x of a
    single element (d = 1): each a shape the docstring allows."""
    m, d = grade_rng.randint(2, 5), grade_rng.randint(2, 4)
    cases = []
    for rows, cols in ((m, d), (1, d), (m, 1)):
        a = grade_rng.randn(rows, cols, mixed=True)
        cases.append((a, grade_rng.randn(cols, requires_grad=True, mixed=True), grade_rng.randn(cols, mixed=True)))
    return cases


def hvp_diagnosis(produced, expected, h_ones, gradient, v, trace):
    """The likely mistake behind a wrong H @ v (all float64 on the CPU), or None."""
    if produced is None or not produced.numel() or not bool(torch.isfinite(produced).all()):
        return None  # no tensor, an empty one, NaN or inf: the generic feedback says it
    if same(produced, expected + gradient) and trace.backward_calls:
        return msg("diag.higher_order.accumulated", what="H @ v", previous=msg("diag.higher_order.gradient_of_f"))
    if same(produced, h_ones * v):
        return msg("diag.higher_order.sum_then_v")
    if same(produced, h_ones):
        return msg("diag.higher_order.no_v")
    if same(produced, gradient):
        return msg("diag.higher_order.first_gradient")
    if produced is not None and not produced.abs().max() > 0:
        return missing_graph(trace, completed(trace)[:-1])
    return mean_not_sum(produced, expected, v.numel(), "H @ v")


@pytest.mark.grade(points=2, instruction_share=0.25, inputs=("rank 1", "rank 2", "size-1 axis", "one element",
                                                             "negative", "positive"))
def test_hessian_vector_product(submission, autograd, grade_rng, grade_device):
    traces = []
    for a, x, v in hvp_cases(grade_rng):
        with differentiating_gradients(submission):
            got = submission("higher_order").hessian_vector_product(a, x, v)
        trace = submission.trace
        traces.append(trace)
        f = logsumexp_of(a)
        _, expected = torch.autograd.functional.hvp(f, x.detach(), v)
        _, h_ones = torch.autograd.functional.hvp(f, x.detach(), torch.ones_like(v))
        (gradient,) = autograd.grad(f, (x,))
        cpu = [t.double().cpu() for t in (expected, h_ones, gradient, v)]
        assert_value(autograd, got, expected, "H @ v", Context(order=2, calls=1),
                     lambda produced=values(got), trace=trace, cpu=cpu: hvp_diagnosis(produced, *cpu, trace))
    for trace in traces:
        autograd.instruction(len(completed(trace)) == 2, "req.higher_order.hvp_two_passes",
                             calls=len(completed(trace)))

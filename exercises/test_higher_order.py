import pytest
import torch

from pytest_autograd_grader.diagnose import Context

pytestmark = pytest.mark.grade(concept="higher_order")


def poly(c, x):
    """p(x) by Horner's rule, elementwise."""
    out = torch.zeros_like(x)
    for coef in reversed(list(c)):
        out = out * x + coef
    return out


def poly_sum(c, x):
    return poly(c, x).sum()


def polynomial(grade_rng, low_degree=4):
    coeffs = grade_rng.randn(grade_rng.integers(low_degree, 6) + 1)
    x = grade_rng.randn(*grade_rng.shape(ndim=grade_rng.integers(1, 2)), requires_grad=True)
    return coeffs, x


def call_higher(autograd, fn, *args):
    """Call a student function in a higher-order task: there, "does not have a
    grad_fn" from the second torch.autograd.grad means the first gradient was
    taken without create_graph=True, and the feedback says so."""
    with autograd.hints(order=2):
        return fn(*args)


@pytest.mark.grade(points=2)
def test_first_derivative(submission, autograd, grade_rng, grade_device):
    coeffs, x = polynomial(grade_rng)
    got = submission("higher_order").first_derivative(coeffs, x)
    autograd.check_grad(got, poly_sum, (coeffs, x), wrt=(1,), names=("p'(x)",))


@pytest.mark.grade(points=3)
def test_first_derivative_is_differentiable(submission, autograd, grade_rng, grade_device):
    coeffs, x = polynomial(grade_rng)
    v = grade_rng.randn(*x.shape)
    _, grads = submission("higher_order").first_derivative.vjp((coeffs, x), (v,))
    autograd.check_grad(grads, poly, (coeffs, x), grad_outputs=v, wrt=(1,), order=2,
                        names=("d/dx of (v * your p'(x)).sum(), i.e. v * p''(x)",))


@pytest.mark.grade(points=2)
def test_derivatives(submission, autograd, grade_rng, grade_device):
    coeffs, x = polynomial(grade_rng)
    n = grade_rng.integers(2, 4)
    got = call_higher(autograd, submission("higher_order").derivatives, coeffs, x, n)
    autograd.assert_equal(len(got) if isinstance(got, (list, tuple)) else got, n, f"number of derivatives for n={n}")
    for k, produced in enumerate(got, start=1):
        (expected,) = autograd.grad(poly_sum, (coeffs, x), wrt=(1,), order=k)
        autograd.assert_grad(produced, expected, f"derivative {k} of p", context=Context(order=k))


@pytest.mark.grade(points=2)
def test_hessian_vector_product(submission, autograd, grade_rng, grade_device):
    m, d = grade_rng.integers(2, 6), grade_rng.integers(2, 5)
    a = grade_rng.randn(m, d)
    x = grade_rng.randn(d, requires_grad=True)
    v = grade_rng.randn(d)
    got = call_higher(autograd, submission("higher_order").hessian_vector_product, a, x, v)
    _, expected = torch.autograd.functional.hvp(lambda t: torch.logsumexp(a @ t, dim=0), x.detach(), v)
    autograd.assert_grad(got, expected, "H @ v", context=Context(order=2))

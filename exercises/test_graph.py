import pytest

pytestmark = pytest.mark.grade(concept="graph")


def y_of(x, w):
    return ((x + w) * (w + 1)).sum()


@pytest.mark.grade(points=2)
def test_build_graph(submission, autograd, grade_rng):
    n = grade_rng.integers(1, 6)
    x, w = grade_rng.randn(n), grade_rng.randn(n)
    a, b, y = autograd.unpack(submission("graph").build_graph(x, w), 3, "build_graph's (a, b, y)")
    autograd.assert_close(a, x + w, "a = x + w")
    autograd.assert_close(b, w + 1, "b = w + 1")
    autograd.assert_close(y, (x + w) * (w + 1), "y = a * b")


@pytest.mark.grade(points=2)
def test_grad_fn_names(submission, autograd, grade_rng):
    n = grade_rng.integers(1, 6)
    names = submission("graph").grad_fn_names(grade_rng.randn(n), grade_rng.randn(n))
    autograd.assert_equal(names, ("AddBackward0", "AddBackward0", "MulBackward0"), "grad_fn names of (a, b, y)")


@pytest.mark.grade(points=3)
def test_hand_gradients(submission, autograd, grade_rng, grade_device):
    shape = grade_rng.shape(ndim=grade_rng.integers(1, 2))
    x, w = grade_rng.randn(*shape), grade_rng.randn(*shape)
    got = submission("graph").hand_gradients(x, w)
    autograd.check_grad(got, y_of, (x, w), wrt=(1, 0), names=("dy/dw", "dy/dx"))


@pytest.mark.grade(points=3)
def test_autograd_gradients(submission, autograd, grade_rng, grade_device):
    shape = grade_rng.shape(ndim=2)
    x = grade_rng.randn(*shape, requires_grad=True)
    w = grade_rng.randn(*shape, requires_grad=True)
    got = submission("graph").autograd_gradients(x, w)
    autograd.check_grad(got, y_of, (x, w), wrt=(1, 0), names=("w.grad", "x.grad"))

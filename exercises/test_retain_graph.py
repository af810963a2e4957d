import pytest

pytestmark = pytest.mark.grade(concept="retain_graph")


def exp_loss(x):
    return (x * x.exp()).sum()


def cube_loss(x):
    return (x ** 3).sum()


def first_loss(x, w):
    return (x * w).tanh().sum()


def both_losses(x, w):
    h = (x * w).tanh()
    return h.sum() + (h ** 2).mean()


@pytest.mark.grade(points=3)
def test_backward_k_times(submission, autograd, grade_rng, grade_device):
    k = grade_rng.integers(2, 4)
    x = grade_rng.randn(*grade_rng.shape(ndim=grade_rng.integers(1, 2)), requires_grad=True)
    got = submission("retain_graph").backward_k_times(x, k)
    autograd.check_grad(got, exp_loss, (x,), scale=k, calls=k, names=(f"x.grad after {k} backward calls",))


@pytest.mark.grade(points=3)
def test_caught_error(submission, autograd, grade_rng, grade_device):
    x = grade_rng.randn(*grade_rng.shape(ndim=grade_rng.integers(1, 2)), requires_grad=True)
    error, grad = autograd.unpack(submission("retain_graph").caught_error(x), 2, "the returned (error, x.grad)")
    with autograd.part(2):
        autograd.expect_error("backward_twice", error, what="the error of the second backward")
    with autograd.part(1):
        autograd.check_grad(grad, cube_loss, (x,), calls=1, names=("x.grad after the first backward",))


@pytest.mark.grade(points=3)
def test_two_losses(submission, autograd, grade_rng, grade_device):
    shape = grade_rng.shape(ndim=grade_rng.integers(1, 2))
    x = grade_rng.randn(*shape)
    w = grade_rng.randn(*shape, requires_grad=True)
    first, both = autograd.unpack(submission("retain_graph").two_losses(x, w), 2,
                        "the returned (grad_after_L1, grad_after_both)")
    autograd.check_grad(first, first_loss, (x, w), wrt=(1,), names=("w.grad after L1.backward()",))
    autograd.check_grad(both, both_losses, (x, w), wrt=(1,), names=("w.grad after both backward calls",))

import pytest
import torch

pytestmark = pytest.mark.grade(concept="inplace")


def mse(w, x, y):
    return ((x @ w - y) ** 2).mean()


def x_softplus_x(x):
    return x * torch.nn.functional.softplus(x)


def regression(grade_rng):
    """A random least-squares problem and a learning rate."""
    n, d = grade_rng.integers(3, 8), grade_rng.integers(1, 5)
    w = grade_rng.randn(d, requires_grad=True)
    x, y = grade_rng.randn(n, d), grade_rng.randn(n)
    lr = round(float(grade_rng.numpy.uniform(0.01, 0.2)), 3)
    return w, x, y, lr


def descend(autograd, w, x, y, lr, steps):
    """Gradient descent written without any in-place update, as a reference."""
    w = w.detach()
    for _ in range(steps):
        (g,) = autograd.grad(mse, (w, x, y), wrt=(0,))
        w = w - lr * g
    return w


@pytest.mark.grade(points=3)
def test_sgd_step_keeps_leaf(submission, autograd, grade_rng, grade_device):
    w, x, y, lr = regression(grade_rng)
    got = submission("inplace").sgd(w, x, y, lr, 1)
    autograd.assert_meta(got, "w after one step", is_leaf=True, requires_grad=True)
    autograd.assert_close(got, descend(autograd, w, x, y, lr, 1), f"w after one step with lr={lr}")


@pytest.mark.grade(points=3)
def test_sgd_steps(submission, autograd, grade_rng, grade_device):
    w, x, y, lr = regression(grade_rng)
    steps = grade_rng.integers(2, 6)
    got = submission("inplace").sgd(w, x, y, lr, steps)
    autograd.assert_meta(got, f"w after {steps} steps", is_leaf=True, requires_grad=True)
    autograd.assert_close(got, descend(autograd, w, x, y, lr, steps), f"w after {steps} steps with lr={lr}")


@pytest.mark.grade(points=3)
def test_repaired(submission, autograd, grade_rng, grade_device):
    shape = grade_rng.shape(ndim=grade_rng.integers(1, 2))
    x = grade_rng.randn(*shape, requires_grad=True)
    v = grade_rng.randn(*shape)
    repaired = submission("inplace").repaired
    out = repaired(x)
    with autograd.part(1):
        autograd.assert_close(out, x_softplus_x(x.detach()), "f(x) = x * log(1 + e^x)")
    with autograd.part(2):
        _, grads = repaired.vjp((x,), (v,))
        autograd.check_grad(grads, x_softplus_x, (x,), grad_outputs=v, names=("gradient through your f(x)",))

import pytest
import torch

pytestmark = pytest.mark.grade(concept="custom_function")


def swish(x):
    return torch.nn.functional.silu(x)


def hypot(x, y):
    return torch.hypot(x, y)


def small_shape(grade_rng):
    return grade_rng.shape(ndim=grade_rng.integers(1, 2), high=4)


@pytest.mark.grade(points=1)
def test_swish_forward(submission, autograd, grade_rng, grade_device):
    x = grade_rng.randn(*small_shape(grade_rng), requires_grad=True)
    got = submission("custom_function").Swish.apply(x)
    autograd.assert_close(got, swish(x.detach()), "Swish.apply(x)")


@pytest.mark.grade(points=2)
def test_swish_backward(submission, autograd, grade_rng, grade_device):
    shape = small_shape(grade_rng)
    x = grade_rng.randn(*shape, requires_grad=True)
    v = grade_rng.randn(*shape)
    _, grads = submission("custom_function").Swish.apply.vjp((x,), (v,))
    autograd.check_grad(grads, swish, (x,), grad_outputs=v, names=("dL/dx from Swish.backward with dL/dy = v",))


@pytest.mark.grade(points=2)
def test_swish_gradcheck(submission, autograd, grade_rng, grade_device):
    x = grade_rng.randn(*small_shape(grade_rng), requires_grad=True)
    autograd.gradcheck(submission("custom_function").Swish.apply, (x,))


@pytest.mark.grade(points=2)
def test_hypot(submission, autograd, grade_rng, grade_device):
    shape = small_shape(grade_rng)
    x = grade_rng.randn(*shape, requires_grad=True)
    # |y| >= 0.5 keeps sqrt(x**2 + y**2) away from its kink at 0
    y = (grade_rng.randn(*shape, low=0.5) * torch.sign(grade_rng.randn(*shape))).requires_grad_(True)
    v = grade_rng.randn(*shape)
    apply = submission("custom_function").Hypot.apply
    out, grads = apply.vjp((x, y), (v,))
    with autograd.part(1):
        autograd.assert_close(out, hypot(x.detach(), y.detach()), "Hypot.apply(x, y)")
    with autograd.part(2):
        autograd.check_grad(grads, hypot, (x, y), grad_outputs=v, wrt=(0, 1),
                            names=("dL/dx from Hypot.backward", "dL/dy from Hypot.backward"))
    with autograd.part(1):
        autograd.gradcheck(apply, (x, y))


@pytest.mark.grade(points=2)
def test_gradcheck_input(submission, autograd, grade_rng, grade_device):
    x = grade_rng.randn(*grade_rng.shape(ndim=2, low=2, high=4), dtype=torch.float32)
    functions = submission("custom_function")
    got = functions.gradcheck_input(x)
    what = "your gradcheck input"
    autograd.assert_meta(got, what, is_leaf=True, requires_grad=True)
    if got.dtype != "float64":
        # let gradcheck itself show why the dtype matters
        autograd.gradcheck(functions.Swish.apply, (got.data,), what=f"gradcheck of Swish on {what}")
    autograd.assert_meta(got, what, dtype="float64")
    autograd.assert_close(got, x.to(torch.float64), f"values of {what}")

import pytest
import torch

from pytest_autograd_grader import Context, GradeFailure, StudentFailure, msg, same, values

pytestmark = pytest.mark.grade(concept="custom_function")


def swish(x):
    return torch.nn.functional.silu(x)


def hypot(x, y):
    return torch.hypot(x, y)


def small_shape(grade_rng):
    """At least two elements (one element hides a gradient that ignores
    grad_output or mixes elements), at most nine."""
    return grade_rng.shape(ndim=grade_rng.integers(1, 2), low=2, high=3)


def gradcheck_shape(grade_rng):
    """Two or three elements: gradcheck calls the student's forward twice
    and backward twice per element."""
    return grade_rng.shape(ndim=1, low=2, high=3)


def signed(grade_rng, shape, low=0.1):
    """Random values of both signs, |value| >= low, in every run."""
    magnitude = grade_rng.randn(*shape, low=low)
    signs = torch.ones(magnitude.numel(), dtype=magnitude.dtype, device=magnitude.device)
    signs[::2] = -1
    return magnitude * signs.reshape(shape)


def assert_gradient(autograd, got, expected, what, diagnose, name="x"):
    """``autograd.assert_grad`` of one gradient from the student's backward,
    where ``diagnose()`` (called only on a mismatch) may name the mistake
    better than the generic diagnosis: its text then replaces that one."""
    context = Context(calls=1)  # one backward: a constant factor is the maths, not accumulation
    if got is None:
        raise GradeFailure(msg("cmp.none", what=what) + "\n" + msg("diag.gradcheck_zero", input=name))
    autograd.assert_grad(got, expected, what, context=context, diagnose=diagnose)


@pytest.mark.grade(points=1)
def test_swish_forward(submission, autograd, grade_rng, grade_device):
    x = signed(grade_rng, small_shape(grade_rng)).requires_grad_(True)
    got = submission("custom_function").Swish.apply(x)
    autograd.assert_close(got, swish(x.detach()), "Swish.apply(x)")


@pytest.mark.grade(points=2)
def test_swish_backward(submission, autograd, grade_rng, grade_device):
    shape = small_shape(grade_rng)
    x = signed(grade_rng, shape).requires_grad_(True)
    v = grade_rng.randn(*shape)
    _, grads = submission("custom_function").Swish.apply.vjp((x,), (v,))
    (expected,) = autograd.grad(swish, (x,), v)
    got = autograd.unpack(grads, 1, msg("cmp.gradients"))[0]
    t, g = x.detach().double().cpu(), v.double().cpu()
    s = torch.sigmoid(t)

    def diagnose(produced=values(got)):
        if same(produced, s + t * s * (1 - s)):
            return msg("diag.custom_function.ignores_grad_output")
        if same(produced, g * s) or same(produced, g * t * s * (1 - s)):
            return msg("diag.custom_function.product_rule")
        if same(produced, g * s * (1 - s)):
            return msg("diag.custom_function.sigmoid_only")
        if same(produced, g.sum() * (s + t * s * (1 - s))):
            return msg("diag.gradcheck_mixes")
        return None

    assert_gradient(autograd, got, expected, msg("label.custom_function.swish_backward"), diagnose)


@pytest.mark.grade(points=2)
def test_swish_gradcheck(submission, autograd, grade_rng, grade_device):
    x = signed(grade_rng, gradcheck_shape(grade_rng)).requires_grad_(True)
    autograd.gradcheck(submission("custom_function").Swish.apply, (x,), names=("x",))


@pytest.mark.grade(points=2)
def test_hypot(submission, autograd, grade_rng, grade_device):
    shape = gradcheck_shape(grade_rng)
    x = signed(grade_rng, shape).requires_grad_(True)
    # |y| >= 0.5 keeps sqrt(x**2 + y**2) away from its kink at 0
    y = (grade_rng.randn(*shape, low=0.5) * torch.sign(grade_rng.randn(*shape))).requires_grad_(True)
    v = grade_rng.randn(*shape)
    apply = submission("custom_function").Hypot.apply
    try:
        out, grads = apply.vjp((x, y), (v,))
    except StudentFailure as failure:
        if "incorrect number of gradients" not in (failure.message or ""):
            raise
        raise StudentFailure(f"{failure.feedback}\n{msg('diag.custom_function.gradient_count')}",
                             status=failure.grade_status, error_type=failure.error_type,
                             message=failure.message) from None
    with autograd.part(1):
        autograd.assert_close(out, hypot(x.detach(), y.detach()), "Hypot.apply(x, y)")
    with autograd.part(2):
        expected = autograd.grad(hypot, (x, y), v)
        local = autograd.grad(hypot, (x, y), torch.ones_like(v))
        produced = autograd.unpack(grads, 2, msg("cmp.gradients"))
        names = ("x", "y")
        for i, (got, want) in enumerate(zip(produced, expected)):
            other = 1 - i

            def diagnose(produced=values(got), i=i, other=other):
                if same(produced, local[i]):
                    return msg("diag.custom_function.ignores_grad_output")
                if same(produced, expected[other]):
                    return msg("diag.gradcheck_swapped", got=names[i], belongs=names[other], order="x, y")
                return None

            assert_gradient(autograd, got, want, msg("label.custom_function.hypot_backward", name=names[i]), diagnose,
                            names[i])
    with autograd.part(1):
        autograd.gradcheck(apply, (x, y), names=names)


@pytest.mark.grade(points=2)
def test_gradcheck_input(submission, autograd, grade_rng, grade_device):
    x = grade_rng.randn(*grade_rng.shape(ndim=2, low=2, high=3), dtype=torch.float32)
    functions = submission("custom_function")
    got = functions.gradcheck_input(x)
    what = msg("label.custom_function.gradcheck_input")
    autograd.assert_meta(got, what, is_leaf=True)
    autograd.assert_meta(got, what, requires_grad=True, hint="diag.custom_function.gradcheck_requires_grad")
    if got.dtype != "float64":
        # let gradcheck itself show why the dtype matters
        autograd.gradcheck(functions.Swish.apply, (got.data,),
                           what=msg("label.custom_function.gradcheck_of", what=what), names=("x",))
    autograd.assert_meta(got, what, dtype="float64", hint="diag.gradcheck_float32")
    autograd.assert_close(got, x.to(torch.float64), msg("label.custom_function.values_of", what=what))

import pytest
import torch

from pytest_autograd_grader import Context, GradeFailure, StudentFailure, msg, same, values

pytestmark = pytest.mark.grade(concept="custom_function")


def swish(x):
    return torch.nn.functional.silu(x)


def hypot(x, y):
    return torch.hypot(x, y)


# What the docstrings allow: Swish takes x of any shape with at least two
# elements; Hypot x and y of one shape (a single element included, y away
# from 0); gradcheck_input a matrix (a, b). Each class is drawn on every seed.
SWISH_INPUTS = ("rank 1", "rank 2", "rank 3", "size-1 axis", "negative", "positive", "zero")
HYPOT_INPUTS = ("rank 1", "rank 2", "rank 3", "size-1 axis", "one element", "negative", "positive", "zero")


def swish_shapes(grade_rng):
    """A vector, a matrix and a rank-3 shape with an axis of size 1 (sides of
    2 or 3); never a single element, which hides a gradient that ignores
    grad_output or mixes elements (the docstring promises two or more)."""
    shapes = grade_rng.shapes(ranks=(1, 2), low=2, high=3, size_one=False, one_element=False)
    return shapes + grade_rng.shapes(ranks=(3,), low=2, high=3, one_element=False)[1:]


def gradcheck_shapes(grade_rng):
    """For gradcheck, which calls the student's forward twice and backward
    once per element: a vector of 3 (room for an exact 0 beside both signs)
    and a matrix and a rank-3 shape of 2 elements each (a size-1 axis)."""
    return [(3,), grade_rng.choice(((1, 2), (2, 1))), grade_rng.choice(((2, 1, 1), (1, 2, 1), (1, 1, 2)))]


def hypot_shapes(grade_rng):
    """``swish_shapes`` and a single element (rank 1 to 3, at random)."""
    return swish_shapes(grade_rng) + [(1,) * grade_rng.randint(1, 3)]


def signed(grade_rng, shape, zeros=0):
    """Random values of both signs (where there are two elements or more),
    |value| >= 0.1 but for ``zeros`` exact zeros, in every run."""
    magnitude = grade_rng.randn(*shape, low=0.1)
    signs = torch.ones(magnitude.numel(), dtype=magnitude.dtype, device=magnitude.device)
    signs[::2] = -1
    x = magnitude * signs.reshape(shape)
    if zeros and x.numel() > 2:
        x.view(-1)[-1] = 0.0
    grade_rng.note(x)
    return x


def away_from_zero(grade_rng, shape):
    """Values of both signs (where there are two elements or more), the
    other way round from ``signed``'s, with |value| >= 0.5: sqrt(x**2 + y**2)
    stays away from its kink at 0."""
    magnitude = grade_rng.randn(*shape, low=0.5)
    signs = -torch.ones(magnitude.numel(), dtype=magnitude.dtype, device=magnitude.device)
    signs[::2] = 1
    y = magnitude * signs.reshape(shape)
    grade_rng.note(y)
    return y


# -- mistakes the values alone show -------------------------------------------

def lost_sign(produced, expected, x):
    """Whether a gradient is right wherever x >= 0 and wrong somewhere x < 0:
    abs(x) or sqrt(x**2) where x belongs."""
    if produced is None or produced.shape != expected.shape:
        return False
    t, e = x.detach().double().cpu(), expected.double().cpu()
    wrong = ~torch.isclose(produced, e, rtol=1e-5, atol=1e-8)
    return bool(wrong.any()) and bool((t[wrong] < 0).all())


def mixes_elements(apply, inputs, v, produced, index=0):
    """Whether the student's backward is not elementwise: with the inputs and
    grad_output changed at their first element only, gradient ``index``
    (``produced`` before the change) changes elsewhere too (a .sum(), .mean()
    or @ over grad_output, or a local derivative reduced and broadcast). One
    more call of the student's code, made only for a wrong answer; an error
    there proves nothing."""
    if v.numel() < 2 or produced is None:
        return False
    moved = [t.detach().clone() for t in inputs]
    moved[0].view(-1)[0] += 0.5  # x; y (kept away from 0) scaled: hypot(x, y) is not scale-free then
    for t in moved[1:]:
        t.view(-1)[0] *= 1.25
    w = v.detach().clone()
    w.view(-1)[0] = w.view(-1)[0] * -2 + 1
    try:
        _, grads = apply.vjp(tuple(t.requires_grad_(True) for t in moved), (w,))
    except StudentFailure as failure:
        if failure.grade_status != "failed":
            raise
        return False
    grads = grads if isinstance(grads, (tuple, list)) else (grads,)
    after = values(grads[index]) if index < len(grads) else None
    if after is None or after.shape != produced.shape:
        return False
    return not torch.allclose(produced.reshape(-1)[1:], after.reshape(-1)[1:], rtol=1e-6, atol=1e-9)


def assert_gradient(autograd, got, expected, what, diagnose, name="x"):
    """``autograd.assert_grad`` of one gradient from the student's backward,
    where ``diagnose()`` (called only on a mismatch) may name the mistake
    better than the generic diagnosis: its text then replaces that one."""
    context = Context(calls=1)  # one backward: a constant factor is the maths, not accumulation
    if got is None:
        raise GradeFailure(msg("cmp.none", what=what) + "\n" + msg("diag.gradcheck_zero", input=name))
    autograd.assert_grad(got, expected, what, context=context, diagnose=diagnose)


@pytest.mark.grade(points=1, inputs=SWISH_INPUTS)
def test_swish_forward(submission, autograd, grade_rng, grade_device):
    for shape in swish_shapes(grade_rng):
        x = signed(grade_rng, shape, zeros=1).requires_grad_(True)
        got = submission("custom_function").Swish.apply(x)
        autograd.assert_close(got, swish(x.detach()), "Swish.apply(x)")


def swish_diagnosis(apply, x, v, got):
    """The likely mistake behind a wrong dL/dx of Swish, or None."""
    t, g = x.detach().double().cpu(), v.double().cpu()
    s = torch.sigmoid(t)
    produced = values(got)
    if produced is None or not produced.numel() or not bool(torch.isfinite(produced).all()):
        return None  # no tensor, an empty one, NaN or inf: the generic feedback says it
    right = g * (s + t * s * (1 - s))
    if same(produced, s + t * s * (1 - s)):
        return msg("diag.custom_function.ignores_grad_output")
    if same(produced, g * s) or same(produced, g * t * s * (1 - s)):
        return msg("diag.custom_function.product_rule")
    if same(produced, g * s * (1 - s)):
        return msg("diag.custom_function.sigmoid_only")
    if lost_sign(produced, right, t):
        return msg("diag.custom_function.lost_sign", name="x")
    if mixes_elements(apply, (x,), v, produced):
        return msg("diag.gradcheck_mixes")
    return None


@pytest.mark.grade(points=2, inputs=SWISH_INPUTS)
def test_swish_backward(submission, autograd, grade_rng, grade_device):
    for shape in swish_shapes(grade_rng):
        x = signed(grade_rng, shape, zeros=1).requires_grad_(True)
        v = grade_rng.randn(*shape)
        apply = submission("custom_function").Swish.apply
        _, grads = apply.vjp((x,), (v,))
        (expected,) = autograd.grad(swish, (x,), v)
        got = autograd.unpack(grads, 1, msg("cmp.gradients"))[0]
        assert_gradient(autograd, got, expected, msg("label.custom_function.swish_backward"),
                        lambda: swish_diagnosis(apply, x, v, got))


@pytest.mark.grade(points=2, inputs=SWISH_INPUTS)
def test_swish_gradcheck(submission, autograd, grade_rng, grade_device):
    for shape in gradcheck_shapes(grade_rng):
        x = signed(grade_rng, shape, zeros=1).requires_grad_(True)
        gradcheck_told(autograd, submission("custom_function").Swish.apply, (x,), ("x",), swish)


def with_own_diagnosis(failure, apply, inputs, reference):
    """A gradcheck failure's text, with a lost sign or a backward that is not
    elementwise named where the gradcheck summary did not name it (it reads
    the Jacobians' entries only: a local derivative reduced and broadcast
    looks diagonal there)."""
    text = failure.feedback
    v = torch.ones_like(inputs[0].detach())
    try:
        _, grads = apply.vjp(inputs, (v,))
    except StudentFailure as error:
        if error.grade_status != "failed":
            raise
        return text
    grads = grads if isinstance(grads, (tuple, list)) else (grads,)
    leaves = [t.detach().requires_grad_(True) for t in inputs]
    with torch.enable_grad():
        expected = torch.autograd.grad(reference(*leaves), leaves, v)
    hint = None
    for i, (name, want, t) in enumerate(zip(("x", "y"), expected, inputs)):
        got = values(grads[i]) if i < len(grads) else None
        if hint is None and lost_sign(got, want, t):
            hint = msg("diag.custom_function.lost_sign", name=name)
        if hint is None and got is not None and mixes_elements(apply, inputs, v, got, i):
            hint = msg("diag.gradcheck_mixes")
    return text if hint is None or hint in text else f"{text}\n{hint}"


def gradcheck_told(autograd, apply, inputs, names, reference):
    """``autograd.gradcheck``, its failure told with ``with_own_diagnosis``."""
    try:
        autograd.gradcheck(apply, inputs, names=names)
    except StudentFailure:
        raise
    except GradeFailure as failure:
        raise GradeFailure(with_own_diagnosis(failure, apply, inputs, reference), status=failure.grade_status,
                           fraction=failure.fraction) from None


def hypot_diagnosis(apply, x, y, v, got, i, expected, local):
    """The likely mistake behind a wrong gradient i (0: dL/dx, 1: dL/dy) of Hypot, or None."""
    names, other = ("x", "y"), 1 - i
    produced = values(got)
    if produced is None or not produced.numel() or not bool(torch.isfinite(produced).all()):
        return None  # no tensor, an empty one, NaN or inf: the generic feedback says it
    if same(produced, local[i]):
        return msg("diag.custom_function.ignores_grad_output")
    if same(produced, expected[other]):
        return msg("diag.gradcheck_swapped", got=names[i], belongs=names[other], order="x, y")
    if lost_sign(produced, expected[i], (x, y)[i]):
        return msg("diag.custom_function.lost_sign", name=names[i])
    if mixes_elements(apply, (x, y), v, produced, i):
        return msg("diag.gradcheck_mixes")
    return None


def hypot_vjp(apply, x, y, v):
    """The student's Hypot.apply(x, y) and its backward with grad_output v."""
    try:
        return apply.vjp((x, y), (v,))
    except StudentFailure as failure:
        if "incorrect number of gradients" not in (failure.message or ""):
            raise
        raise StudentFailure(f"{failure.feedback}\n{msg('diag.custom_function.gradient_count')}",
                             status=failure.grade_status, error_type=failure.error_type,
                             message=failure.message) from None


@pytest.mark.grade(points=2, inputs=HYPOT_INPUTS)
def test_hypot(submission, autograd, grade_rng, grade_device):
    apply = submission("custom_function").Hypot.apply
    cases = []
    for shape in hypot_shapes(grade_rng):
        x = signed(grade_rng, shape, zeros=1).requires_grad_(True)
        y = away_from_zero(grade_rng, shape).requires_grad_(True)
        v = grade_rng.randn(*shape)
        cases.append((x, y, v, *hypot_vjp(apply, x, y, v)))
    with autograd.part(1):
        for x, y, _, out, _ in cases:
            autograd.assert_close(out, hypot(x.detach(), y.detach()), "Hypot.apply(x, y)")
    with autograd.part(2):
        for x, y, v, _, grads in cases:
            expected = autograd.grad(hypot, (x, y), v)
            local = autograd.grad(hypot, (x, y), torch.ones_like(v))
            produced = autograd.unpack(grads, 2, msg("cmp.gradients"))
            for i, (got, want) in enumerate(zip(produced, expected)):
                name = ("x", "y")[i]
                assert_gradient(autograd, got, want, msg("label.custom_function.hypot_backward", name=name),
                                lambda got=got, i=i: hypot_diagnosis(apply, x, y, v, got, i, expected, local), name)
    with autograd.part(1):
        for x, y, *_ in cases:
            if x.numel() <= 3:  # gradcheck's calls grow with the elements; the values saw every shape
                gradcheck_told(autograd, apply, (x, y), ("x", "y"), hypot)


@pytest.mark.grade(points=2, inputs=("rank 2", "size-1 axis", "one element", "negative", "positive"))
def test_gradcheck_input(submission, autograd, grade_rng, grade_device):
    for shape in grade_rng.shapes(ranks=(2,), low=2, high=3):
        x = grade_rng.randn(*shape, dtype=torch.float32, mixed=True)
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

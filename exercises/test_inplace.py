import pytest
import torch

from pytest_autograd_grader import diagnose_update, first_suspect, msg, same, sgd_variant, values

pytestmark = pytest.mark.grade(concept="inplace")


def mse(w, x, y):
    return ((x @ w - y) ** 2).mean()


def x_softplus_x(x):
    return x * torch.nn.functional.softplus(x)


# w of d >= 2 elements and of one (x then a single column)
SGD_INPUTS = ("rank 1", "rank 2", "size-1 axis", "one element", "negative", "positive")


def regression(grade_rng, d):
    """A random least-squares problem with d features and a learning rate."""
    n = grade_rng.randint(3, 8)
    w = grade_rng.randn(d, requires_grad=True, mixed=True)
    x, y = grade_rng.randn(n, d, mixed=True), grade_rng.randn(n, mixed=True)
    lr = round(float(grade_rng.numpy.uniform(0.01, 0.2)), 3)
    return w, x, y, lr


def mse_gradient(x, y):
    """The gradient of the loss at w, for replaying a training loop."""
    x, y = x.double().cpu(), y.double().cpu()
    return lambda i, w: 2 * x.T @ (x @ w - y) / y.shape[0]


def descend(autograd, w, x, y, lr, steps, accumulate=False):
    """Gradient descent written without any in-place update, as a reference;
    with ``accumulate`` each step uses the sum of all gradients so far (a
    w.grad never cleared)."""
    w, total = w.detach(), 0
    for _ in range(steps):
        (g,) = autograd.grad(mse, (w, x, y), wrt=(0,))
        total = total + g if accumulate else g
        w = w - lr * total
    return w


def suspects(autograd, w, x, y, lr, steps):
    """Plausible wrong trainings, each with its diagnosis."""
    found = [(descend(autograd, w, x, y, lr, steps, accumulate=True), msg("diag.inplace.grad_not_cleared")),
             (descend(autograd, w, x, y, -lr, steps), msg("diag.inplace.ascent")),
             (descend(autograd, w, x, y, lr * x.shape[0], steps), msg("diag.inplace.sum_loss", n=x.shape[0]))]
    for made in (steps - 1, steps + 1):
        found.append((descend(autograd, w, x, y, lr, made), msg("diag.inplace.step_count", made=made, steps=steps)))
    return found


# -- what the trace and the values tell ------------------------------------------

def check_sgd(submission, autograd, grade_rng, steps, d):
    w, x, y, lr = regression(grade_rng, d)
    what = msg("label.w_after_steps", k=steps) if steps > 1 else msg("label.w_after_one_step")
    sgd = submission("inplace").sgd
    got = autograd.call_update(sgd, (w, x, y, lr, 1) if steps > 1 else None, "w",
                               msg("label.inplace.sgd_steps", steps=steps), w, x, y, lr, steps)
    trace = submission.trace
    autograd.assert_meta(got, what, is_leaf=True, requires_grad=True, hint=diagnose_update(got, "w", trace))
    expected = descend(autograd, w, x, y, lr, steps)
    hint = first_suspect(got, expected, lambda: suspects(autograd, w, x, y, lr, steps))
    moved = values(got)
    if not hint and moved is not None and moved.shape == expected.shape and not same(moved, expected):
        # momentum or weight decay where plain gradient descent is asked
        hint = sgd_variant(moved, w, mse_gradient(x, y), lr, steps)
    with_lr = msg("label.inplace.with_lr", what=what, lr=lr)
    if hint:
        autograd.fail_with(with_lr, got, expected, hint)
    autograd.assert_close(got, expected, with_lr)
    autograd.instruction(trace.updated_in_place_without_grad, "req.inplace.update_no_grad",
                         what=msg("label.case", what="sgd", case=what), name="w")


# -- checks ----------------------------------------------------------------------

@pytest.mark.grade(points=3, instruction_share=0.25, inputs=SGD_INPUTS)
def test_sgd_step_keeps_leaf(submission, autograd, grade_rng, grade_device):
    for d in (grade_rng.randint(2, 5), 1):
        check_sgd(submission, autograd, grade_rng, 1, d)


@pytest.mark.grade(points=3, instruction_share=0.25, inputs=SGD_INPUTS)
def test_sgd_steps(submission, autograd, grade_rng, grade_device):
    steps = grade_rng.randint(2, 5)
    for d in (grade_rng.randint(2, 5), 1):
        check_sgd(submission, autograd, grade_rng, steps, d)


@pytest.mark.grade(points=3, inputs=("rank 0", "rank 1", "rank 2", "rank 3", "size-1 axis", "one element",
                                     "negative", "positive"))
def test_repaired(submission, autograd, grade_rng, grade_device):
    # x of any shape: each rank 1 to 3, a size-1 axis, a single element, then 0-D
    shapes = grade_rng.shapes(ranks=(1, 2, 3)) + [()]
    # parts of 1 + 2 per shape: an error on one shape keeps the credit of the shapes before it
    autograd.parts(total=3 * len(shapes))
    for shape in shapes:
        check_repaired(submission, autograd, grade_rng, shape)


def draw(grade_rng, shape, **kwargs):
    if shape:
        return grade_rng.randn(*shape, mixed=True, **kwargs)
    scalar = grade_rng.randn(1).reshape(()).requires_grad_(kwargs.get("requires_grad", False))
    grade_rng.note(scalar)
    return scalar


def check_repaired(submission, autograd, grade_rng, shape):
    x = draw(grade_rng, shape, requires_grad=True)
    v = draw(grade_rng, shape)
    repaired = submission("inplace").repaired
    out = repaired(x)
    with autograd.part(1):
        autograd.assert_close(out, x_softplus_x(x.detach()), "f(x) = x * log(1 + e^x)")
    with autograd.part(2):
        _, grads = repaired.vjp((x,), (v,))
        what = msg("label.inplace.through_f")
        (expected,) = autograd.grad(x_softplus_x, (x,), v)
        got = grads[0] if isinstance(grads, (list, tuple)) and len(grads) == 1 else grads
        # x * c with c = log(1 + e^x) cut off from the graph: only the path through the factor x is left
        hint = first_suspect(got, expected, lambda: [(v * torch.nn.functional.softplus(x.detach()),
                                                      msg("diag.inplace.detached_path"))])
        if hint:
            autograd.fail_with(what, got, expected, hint)
        autograd.check_grad(grads, x_softplus_x, (x,), grad_outputs=v, names=(what,))

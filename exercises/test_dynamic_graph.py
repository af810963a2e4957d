import pytest
import torch

pytestmark = pytest.mark.grade(concept="dynamic_graph")


def branch_loss(x):
    if x.sum() > 0:
        return (x * x).sum()
    return torch.exp(x).sum()


def loop_output(x, c, limit):
    y = x
    while y.norm() < limit:
        y = y * c
    return y


def loop_loss(x, c, limit):
    return loop_output(x, c, limit).sum()


def rnn_loss(xs, w, h0):
    h = h0
    for x_t in xs:
        h = torch.tanh(w * h + x_t)
    return h.sum()


@pytest.mark.grade(points=3)
def test_branch_grad(submission, autograd, grade_rng, grade_device):
    n = grade_rng.integers(1, 6)
    base = grade_rng.randn(n)
    base = base - base.mean()
    shift = float(grade_rng.numpy.uniform(0.1, 1.0))
    # One input per branch, in a random order: x.sum() is n * shift or -n * shift.
    signs = (1, -1) if grade_rng.integers(0, 1) else (-1, 1)
    inputs = [(base + sign * shift).requires_grad_(True) for sign in signs]
    results = [submission("dynamic_graph").branch_grad(x) for x in inputs]
    for sign, x, result in zip(signs, inputs, results):
        branch = "x.sum() > 0" if sign > 0 else "x.sum() <= 0"
        with autograd.part(1):
            loss, grad = autograd.unpack(result, 2, "the returned (loss, x.grad)")
            autograd.assert_close(loss, branch_loss(x.detach()), f"loss when {branch}")
            autograd.check_grad(grad, branch_loss, (x,), names=(f"x.grad when {branch}",))


@pytest.mark.grade(points=3)
def test_loop_grad(submission, autograd, grade_rng, grade_device):
    n = grade_rng.integers(1, 5)
    x = grade_rng.randn(n, requires_grad=True)
    c = float(grade_rng.numpy.uniform(1.2, 1.8))
    # limit = |x| * c ** (k + u): the loop runs k + 1 times (0 when k = -1),
    # and the last norm is well away from the limit.
    k = grade_rng.integers(-1, 6)
    limit = float(x.detach().norm()) * c ** (k + float(grade_rng.numpy.uniform(0.2, 0.8)))
    expected_steps = 0
    z = x.detach()
    while z.norm() < limit:
        z = z * c
        expected_steps += 1
    result = submission("dynamic_graph").loop_grad(x, c, limit)
    steps, grad = autograd.unpack(result, 2, "the returned (steps, x.grad)")
    with autograd.part(1):
        autograd.assert_equal(steps, expected_steps, f"steps (|x| = {float(x.detach().norm()):.4g}, c = {c:.4g}, limit = {limit:.4g})")
    with autograd.part(2):
        autograd.check_grad(grad, loop_loss, (x, c, limit), wrt=(0,), names=("x.grad",))


@pytest.mark.grade(points=3)
def test_rnn_grad(submission, autograd, grade_rng, grade_device):
    steps, n = grade_rng.integers(1, 6), grade_rng.integers(1, 4)
    xs = grade_rng.randn(steps, n)
    w = grade_rng.randn(n, requires_grad=True)
    h0 = grade_rng.randn(n, requires_grad=True)
    result = submission("dynamic_graph").rnn_grad(xs, w, h0)
    w_grad, h0_grad = autograd.unpack(result, 2, "the returned (w.grad, h0.grad)")
    for index, got, name in ((1, w_grad, "w.grad"), (2, h0_grad, "h0.grad")):
        with autograd.part(1):
            autograd.check_grad(got, rnn_loss, (xs, w, h0), wrt=(index,), names=(f"{name} (T = {steps})",))

import pytest
import torch

from pytest_autograd_grader import TensorRecord, msg, same, values

pytestmark = pytest.mark.grade(concept="retain_grad")

# Written into x and w on every run, beside random values: the tutorial's
# point (x = 2, w = 1) and both signs of x, w, a = x + w and b = w + 1.
FIXED_X = (2.0, -1.5, 0.7, 2.5)
FIXED_W = (1.0, 0.5, -2.0, -1.5)


def weighted_product(a, b, v):
    return (v * a * b).sum()


def weighted(y, v):
    return (v * y).sum()


def second_layer_loss(h, W2):
    return ((h @ W2) ** 2).mean()


def mean_square(out):
    return (out ** 2).mean()


def shapes_of(rng):
    """The shapes x and w take, one call each: 1-D (4 to 7 elements), 2-D
    (2 to 4 per side) and 2-D with an axis of size 1 (4 to 6 elements)."""
    line = rng.integers(4, 6)
    return [(rng.integers(4, 7),), (rng.integers(2, 4), rng.integers(2, 4)), rng.choice([(1, line), (line, 1)])]


def inputs(rng, device, shape):
    """x and w (leaves that require grad) and v of ``shape``, float64, x and
    w holding FIXED_X/FIXED_W beside random values."""
    x, w = rng.randn(*shape, device="cpu"), rng.randn(*shape, device="cpu")
    x.view(-1)[:4] = torch.tensor(FIXED_X, dtype=x.dtype)
    w.view(-1)[:4] = torch.tensor(FIXED_W, dtype=w.dtype)
    rng.note(x, w)
    return x.to(device).requires_grad_(True), w.to(device).requires_grad_(True), rng.randn(*shape)


def grads_of(records):
    return [values(r.grad) if isinstance(r, TensorRecord) and r.grad is not None else None for r in records]


def require_sum(autograd, got, expected, what):
    """Gradients that are the expected ones divided by the number of
    elements: a mean where the task sums."""
    k = expected[0].numel()
    if k >= 2 and all(same(g, e / k) for g, e in zip(got, expected)):
        autograd.fail_with(what, got[0], expected[0], msg("diag.graph.sum_not_mean", k=k))


# grad_fn of a copy of a tensor (.clone(), .view_as(), ...)
COPY_NODES = ("CloneBackward0", "AliasBackward0", "ViewBackward0", "ToCopyBackward0")


def why_none(record, name, node, trace):
    """Why an intermediate tensor returned as ``record`` holds no gradient,
    read from the record and the trace (None: no more than the generic
    diagnosis knows). ``node`` is the grad_fn the tensor itself has, where
    only one operation makes it (None where several could)."""
    # torch.autograd.grad fills retained gradients too, so it counts as a backward here.
    if not any(not call.raised for call in trace.calls):
        return msg("diag.leaf.no_backward")
    names = [op.name for op in trace.ops]
    if "retain_grad" not in names:
        return None
    if record.retains_grad:
        first_backward = min(names.index(n) for n in ("backward", "autograd.grad") if n in names)
        if any(n == "retain_grad" for n in names[first_backward:]):
            return msg("diag.retain_grad.too_late", what=name)
        return None
    if record.grad_fn is None:
        return msg("diag.retain_grad.detached", what=name)
    if record.grad_fn in COPY_NODES or (node is not None and record.grad_fn != node):
        return msg("diag.retain_grad.cloned", what=name, grad_fn=record.grad_fn)
    return None


def require_retained(autograd, records, names, nodes, trace):
    """A returned intermediate without a gradient, with the diagnosis the
    evidence supports (the generic one otherwise)."""
    for record, name, node in zip(records, names, nodes):
        if isinstance(record, TensorRecord) and record.grad is None:
            reason = why_none(record, name, node, trace)
            if reason:
                autograd.require(False, msg("cmp.none", what=f"{name}.grad") + "\n" + reason)


@pytest.mark.grade(points=3, inputs=("rank 1", "rank 2", "size-1 axis", "negative", "positive"))
def test_intermediate_grads(submission, autograd, grade_rng, grade_device):
    for shape in shapes_of(grade_rng):
        x, w, v = inputs(grade_rng, grade_device, shape)
        result = submission("retain_grad").intermediate_grads(x, w, v)
        check_intermediate(autograd, submission.trace, result, x, w, v)


def check_intermediate(autograd, trace, result, x, w, v):
    records = autograd.unpack(result, 3, msg("label.returned", what="(a, b, y)"))
    a, b, y = records
    av, bv = x.detach() + w.detach(), w.detach() + 1
    for record, name, value in zip(records, "aby", (av, bv, av * bv)):
        autograd.assert_close(record, value, name)
    require_retained(autograd, records, "aby", ("AddBackward0", "AddBackward0", "MulBackward0"), trace)
    got = grads_of(records)
    expected = (v * bv, v * av, v)
    if all(same(g, e) for g, e in zip(got, (bv, av, torch.ones_like(v)))):
        autograd.fail_with("a.grad", got[0], expected[0], msg("diag.retain_grad.weights"))
    require_sum(autograd, got, expected, "a.grad")
    autograd.check_grad((a.grad, b.grad), weighted_product, (av, bv, v), wrt=(0, 1), names=("a.grad", "b.grad"),
                        holders=(a, b), role="intermediate", trace=trace)
    autograd.check_grad(y.grad, weighted, (av * bv, v), wrt=(0,), names=("y.grad",), holders=(y,),
                        role="intermediate", trace=trace)


def layer_sizes(rng):
    """(N, D, H, C) of each call: all 2 or 3 (out has 4 or more elements,
    so a sum where the task takes the mean shows), then one of them 1 (an
    axis of size 1), then all 1 (every tensor a single element)."""
    sizes = [rng.integers(2, 3) for _ in range(4)]
    axis = rng.integers(0, 3)
    return [tuple(sizes), tuple(1 if i == axis else s for i, s in enumerate(sizes)), (1, 1, 1, 1)]


@pytest.mark.grade(points=3, inputs=("rank 2", "size-1 axis", "one element", "negative", "positive"))
def test_hidden_grads(submission, autograd, grade_rng, grade_device):
    for n, d, h, c in layer_sizes(grade_rng):
        x = grade_rng.randn(n, d, mixed=True)
        W1 = grade_rng.randn(d, h, requires_grad=True, mixed=True)
        W2 = grade_rng.randn(h, c, requires_grad=True, mixed=True)
        result = submission("retain_grad").hidden_grads(x, W1, W2)
        check_hidden(autograd, submission.trace, result, x, W1, W2)


def check_hidden(autograd, trace, result, x, W1, W2):
    h_rec, out_rec = autograd.unpack(result, 2, msg("label.returned", what="(h, out)"))
    hv = torch.tanh(x @ W1.detach())
    outv = hv @ W2.detach()
    autograd.assert_close(h_rec, hv, "h")
    autograd.assert_close(out_rec, outv, "out")
    require_retained(autograd, (h_rec, out_rec), ("h", "out"), (None, None), trace)
    autograd.check_grad(h_rec.grad, second_layer_loss, (hv, W2), wrt=(0,), names=("h.grad",), holders=(h_rec,),
                        role="intermediate", mean_over=outv.numel(), trace=trace)
    autograd.check_grad(out_rec.grad, mean_square, (outv,), names=("out.grad",), holders=(out_rec,),
                        role="intermediate", mean_over=outv.numel(), trace=trace)


def chain_coefficients(rng, steps):
    """c with both signs once there are two steps or more."""
    c = rng.randn(steps, device="cpu")
    c[0] = c[0].abs() + 0.1
    if steps >= 2:
        c[1] = -(c[1].abs() + 0.1)
    return c


@pytest.mark.grade(points=3, inputs=("rank 1", "rank 2", "size-1 axis", "negative", "positive"))
def test_chain_grads(submission, autograd, grade_rng, grade_device):
    shapes = grade_rng.shapes(ranks=(1, 2), low=2, high=4, one_element=False)
    # a random number of steps, the edge case of a single step, then a random number again
    for shape, steps in zip(shapes, (grade_rng.integers(2, 5), 1, grade_rng.integers(2, 4))):
        x = grade_rng.randn(*shape, requires_grad=True, mixed=True)
        c = chain_coefficients(grade_rng, steps).to(grade_device)
        result = submission("retain_grad").chain_grads(x, c)
        check_chain(autograd, submission.trace, result, x, c, steps)


def check_chain(autograd, trace, result, x, c, steps):
    names = tuple(f"z_{k}" for k in range(1, steps + 1))
    records = autograd.unpack(result, len(names), msg("label.returned", what="[" + ", ".join(names) + "]"))

    def tail(k):
        def loss_from(z):
            for j in range(k, steps):
                z = torch.tanh(c[j] * z)
            return z.sum()
        return loss_from

    z = x.detach()
    expected = []
    for k, (record, name) in enumerate(zip(records, names), start=1):
        z = torch.tanh(c[k - 1] * z)
        expected.append(z)
        autograd.assert_close(record, z, name)
    require_retained(autograd, records, names, [None] * steps, trace)
    for k, (record, name, value) in enumerate(zip(records, names, expected), start=1):
        autograd.check_grad(record.grad, tail(k), (value,), names=(f"{name}.grad",), holders=(record,),
                            role="intermediate", trace=trace)

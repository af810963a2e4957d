import pytest
import torch

from pytest_autograd_grader import StudentFailure, TensorRecord, diagnose_error, msg, same, values

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
    line = rng.randint(4, 6)
    return [(rng.randint(4, 7),), (rng.randint(2, 4), rng.randint(2, 4)), rng.choice([(1, line), (line, 1)])]


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


# torch functions that multiply matrices: the sum of v * y only for 1-D tensors
MATMULS = ("__matmul__", "__rmatmul__", "matmul", "dot", "vdot", "inner", "mm", "mv", "tensordot")


def matmul_loss(trace, shape):
    """The diagnosis of a loss written as a matrix product (v @ y), right
    for 1-D inputs only; None for 1-D inputs or without one."""
    # an op that raised is among the trace's errors, not its ops
    ops = [name for name in [op.name for op in trace.ops] + [e.op for e in trace.errors] if name in MATMULS]
    return msg("diag.retain_grad.matmul_loss", op=ops[0]) if ops and len(shape) >= 2 else None


def squeezed(trace, *tensors):
    """The diagnosis of a .squeeze() that removed an axis of size 1 (None
    without a squeeze, or where no axis has size 1)."""
    if 1 in [size for t in tensors for size in t.shape] and trace.count("squeeze", "squeeze_"):
        return msg("diag.retain_grad.squeeze")
    return None


def explained(submission, function, args, diagnose):
    """retain_grad.<function>(*args); an error it raises gets the diagnosis
    ``diagnose(trace)`` gives, else the one of a retain_grad() result used
    as a tensor (None), else the generic one."""
    try:
        return getattr(submission("retain_grad"), function)(*args)
    except StudentFailure as failure:
        trace = submission.trace
        hint = diagnose(trace)
        if hint is None and "NoneType" in failure.message and trace.count("retain_grad"):
            hint = msg("diag.retain_grad.returns_none")
        if hint is None:
            raise
        raise with_diagnosis(failure, hint) from None


def with_diagnosis(failure, hint):
    """The student's error with ``hint`` in place of the generic diagnosis."""
    generic = diagnose_error(failure.message)
    feedback = failure.feedback.replace(generic, hint) if generic else f"{failure.feedback}\n{hint}"
    return StudentFailure(feedback, status=failure.grade_status, error_type=failure.error_type,
                          message=failure.message)


def require_mean_of_all(autograd, record, expected, name, out_shape):
    """A gradient that is k times too large, k the size of one axis of out:
    the loss averages over the other axis only."""
    n, c = out_shape
    got = values(record.grad) if isinstance(record, TensorRecord) and record.grad is not None else None
    for k, axis in ((c, "N"), (n, "C")):
        if got is not None and 2 <= k < n * c and same(got, expected * k):
            autograd.fail_with(f"{name}.grad", got, expected,
                               msg("diag.retain_grad.mean_one_axis", k=k, axis=axis, n=n * c))


def require_sum(autograd, got, expected, what):
    """Gradients that are the expected ones divided by the number of
    elements: a mean where the task sums."""
    k = expected[0].numel()
    if k >= 2 and all(same(g, e / k) for g, e in zip(got, expected)):
        autograd.fail_with(what, got[0], expected[0], msg("diag.graph.sum_not_mean", k=k))


# grad_fn of a copy of a tensor (.clone(), .view_as(), ...)
COPY_NODES = ("CloneBackward0", "AliasBackward0", "ViewBackward0", "ToCopyBackward0")


def why_none(record, name, node, trace, names, arg_names):
    """Why an intermediate tensor returned as ``record`` holds no gradient,
    read from the record and the trace (None: no more than the generic
    diagnosis knows). ``node`` is the grad_fn the tensor itself has, where
    only one operation makes it (None where several could); ``names`` name
    the returned tensors, ``arg_names`` the function's arguments."""
    # torch.autograd.grad fills retained gradients too, so it counts as a backward here.
    if not any(not call.raised for call in trace.calls):
        return msg("diag.leaf.no_backward")
    ops = [op.name for op in trace.ops]
    if "retain_grad" not in ops:
        return None
    if record.retains_grad:
        first_backward = min(ops.index(n) for n in ("backward", "autograd.grad") if n in ops)
        if any(n == "retain_grad" for n in ops[first_backward:]):
            return msg("diag.retain_grad.too_late", what=name)
        # a whole backward passes every tensor the loss was computed from
        if any(not call.raised and call.kind == "backward" and call.inputs is None for call in trace.calls):
            return msg("diag.retain_grad.off_path", what=name)
        return None
    if record.grad_fn is None:
        return msg("diag.retain_grad.detached", what=name)
    if record.grad_fn in COPY_NODES or (node is not None and record.grad_fn != node):
        return msg("diag.retain_grad.cloned", what=name, grad_fn=record.grad_fn)
    return retained_elsewhere(trace, name, names, arg_names)


def retained_name(entry, names, arg_names):
    """A tensor retain_grad() was called on, named as the student would."""
    if 0 <= entry.arg < len(arg_names):
        return arg_names[entry.arg]
    if 0 <= entry.returned < len(names):
        return names[entry.returned]
    if 0 <= entry.source < len(names):
        return msg("label.retain_grad.made_from", what=names[entry.source], grad_fn=entry.node)
    if 0 <= entry.feeds < len(names):
        return msg("label.retain_grad.input_of", what=names[entry.feeds], grad_fn=entry.node)
    return msg("label.retain_grad.made_by", grad_fn=entry.node) if entry.node else msg("label.retain_grad.leaf")


def retained_elsewhere(trace, name, names, arg_names):
    """retain_grad() called, but not on the tensor returned for ``name``:
    on which tensors, where the trace tells (those not returned first)."""
    spare = [e for e in trace.retained if not 0 <= e.returned < len(names)]
    found = list(dict.fromkeys(retained_name(e, names, arg_names) for e in spare or trace.retained))[:4]
    if not found:
        return msg("diag.retain_grad.elsewhere", what=name)
    other = found[0] if len(found) == 1 else msg("label.retain_grad.and", first=", ".join(found[:-1]), last=found[-1])
    return msg("diag.retain_grad.other_tensor", other=other, what=name)


def require_retained(autograd, records, names, nodes, trace, arg_names):
    """A returned intermediate without a gradient, with the diagnosis the
    evidence supports (the generic one otherwise)."""
    for record, name, node in zip(records, names, nodes):
        if isinstance(record, TensorRecord) and record.grad is None:
            reason = why_none(record, name, node, trace, names, arg_names)
            if reason:
                autograd.require(False, msg("cmp.none", what=f"{name}.grad") + "\n" + reason)


@pytest.mark.grade(points=3, inputs=("rank 1", "rank 2", "size-1 axis", "negative", "positive"))
def test_intermediate_grads(submission, autograd, grade_rng, grade_device):
    for shape in shapes_of(grade_rng):
        x, w, v = inputs(grade_rng, grade_device, shape)
        result = explained(submission, "intermediate_grads", (x, w, v), lambda trace: matmul_loss(trace, shape))
        check_intermediate(autograd, submission.trace, result, x, w, v)


def check_intermediate(autograd, trace, result, x, w, v):
    records = autograd.unpack(result, 3, msg("label.returned", what="(a, b, y)"))
    a, b, y = records
    av, bv = x.detach() + w.detach(), w.detach() + 1
    for record, name, value in zip(records, "aby", (av, bv, av * bv)):
        autograd.assert_close(record, value, name)
    require_retained(autograd, records, "aby", ("AddBackward0", "AddBackward0", "MulBackward0"), trace,
                     ("x", "w", "v"))
    got = grads_of(records)
    expected = (v * bv, v * av, v)
    if all(same(g, e) for g, e in zip(got, (bv, av, torch.ones_like(v)))):
        autograd.fail_with("a.grad", got[0], expected[0], msg("diag.retain_grad.weights"))
    require_sum(autograd, got, expected, "a.grad")
    hint = matmul_loss(trace, tuple(x.shape))
    if hint and not all(same(g, e) for g, e in zip(got, expected)):
        autograd.fail_with("a.grad", got[0], expected[0], hint)
    autograd.check_grad((a.grad, b.grad), weighted_product, (av, bv, v), wrt=(0, 1), names=("a.grad", "b.grad"),
                        holders=(a, b), role="intermediate", trace=trace)
    autograd.check_grad(y.grad, weighted, (av * bv, v), wrt=(0,), names=("y.grad",), holders=(y,),
                        role="intermediate", trace=trace)


def layer_sizes(rng):
    """(N, D, H, C) of each call: all 2 or 3, N and C different (out has 6
    elements, so a sum where the task takes the mean shows, and so does a
    mean over one axis only), then one of them 1 (an axis of size 1), then
    all 1 (every tensor a single element)."""
    n = rng.randint(2, 3)
    sizes = [n, rng.randint(2, 3), rng.randint(2, 3), 5 - n]
    axis = rng.randint(0, 3)
    return [tuple(sizes), tuple(1 if i == axis else s for i, s in enumerate(sizes)), (1, 1, 1, 1)]


@pytest.mark.grade(points=3, inputs=("rank 2", "size-1 axis", "one element", "negative", "positive"))
def test_hidden_grads(submission, autograd, grade_rng, grade_device):
    for n, d, h, c in layer_sizes(grade_rng):
        x = grade_rng.randn(n, d, mixed=True)
        W1 = grade_rng.randn(d, h, requires_grad=True, mixed=True)
        W2 = grade_rng.randn(h, c, requires_grad=True, mixed=True)
        result = explained(submission, "hidden_grads", (x, W1, W2), lambda trace: squeezed(trace, x, W1, W2))
        check_hidden(autograd, submission.trace, result, x, W1, W2)


def check_hidden(autograd, trace, result, x, W1, W2):
    h_rec, out_rec = autograd.unpack(result, 2, msg("label.returned", what="(h, out)"))
    hv = torch.tanh(x @ W1.detach())
    outv = hv @ W2.detach()
    squeeze = squeezed(trace, x, W1, W2)
    for record, name, value in ((h_rec, "h", hv), (out_rec, "out", outv)):
        if squeeze and isinstance(record, TensorRecord) and tuple(record.shape) != tuple(value.shape):
            autograd.require(False, msg("cmp.shape", what=name, expected=tuple(value.shape),
                                        got=tuple(record.shape)) + "\n" + squeeze)
    autograd.assert_close(h_rec, hv, "h")
    autograd.assert_close(out_rec, outv, "out")
    require_retained(autograd, (h_rec, out_rec), ("h", "out"), (None, None), trace, ("x", "W1", "W2"))
    require_mean_of_all(autograd, out_rec, autograd.grad(mean_square, (outv,))[0], "out", tuple(outv.shape))
    require_mean_of_all(autograd, h_rec, autograd.grad(second_layer_loss, (hv, W2), wrt=(0,))[0], "h",
                        tuple(outv.shape))
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
    for shape, steps in zip(shapes, (grade_rng.randint(2, 5), 1, grade_rng.randint(2, 4))):
        x = grade_rng.randn(*shape, requires_grad=True, mixed=True)
        c = chain_coefficients(grade_rng, steps).to(grade_device)
        result = explained(submission, "chain_grads", (x, c), lambda trace: None)
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
    require_retained(autograd, records, names, [None] * steps, trace, ("x", "c"))
    last, k = records[-1], expected[-1].numel()
    if k >= 2 and isinstance(last, TensorRecord) and same(values(last.grad), torch.ones_like(expected[-1]) / k):
        # dloss/dz_n is all ones for a sum
        autograd.fail_with(f"{names[-1]}.grad", last.grad, torch.ones_like(expected[-1]),
                           msg("diag.graph.sum_not_mean", k=k))
    for k, (record, name, value) in enumerate(zip(records, names, expected), start=1):
        autograd.check_grad(record.grad, tail(k), (value,), names=(f"{name}.grad",), holders=(record,),
                            role="intermediate", trace=trace)

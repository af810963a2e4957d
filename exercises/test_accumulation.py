import pytest
import torch

from pytest_autograd_grader import (
    Context,
    Divisor,
    TensorRecord,
    diagnose_update,
    first_suspect,
    msg,
    same,
    sgd_variant,
    shared_memory,
    values,
)

pytestmark = pytest.mark.grade(concept="accumulation")

# Pass scales of zeroed_grads: neither a scale nor its inverse is a whole
# number, so a pass that ignores its scale never reads as "k times too large".
SCALES = (0.4, 0.75, 1.25, 1.5, 2.5, 3.5)


def one_pass(x):
    return ((x + 2) ** 2).mean()


def scaled_pass(x, c):
    return c * ((x + 2) ** 2).mean()


def batch_loss(w, x, y):
    return ((x @ w - y) ** 2).mean()


# the input classes of accumulated_grad and zeroed_grads (x of any shape)
ANY_SHAPE = ("rank 0", "rank 1", "rank 2", "rank 3", "size-1 axis", "one element", "negative", "positive")


def inputs(grade_rng, grade_device):
    """The tutorial's x = ones(2, 2), then a random x of each rank 1 to 3 (the
    3-D one with an axis of size 1), each of at least 6 elements (a sum and a
    mean differ, and the number of elements is never a pass count), and a
    0-D x (a single element)."""
    rows, cols = grade_rng.randint(2, 4), grade_rng.randint(3, 4)
    three = [grade_rng.randint(2, 3), grade_rng.randint(3, 4), grade_rng.randint(3, 4)]
    three[grade_rng.randint(0, 2)] = 1
    shapes = [(rows, cols), (grade_rng.randint(6, 8),), tuple(three)]
    scalar = grade_rng.randn(1).reshape(()).requires_grad_(True)
    grade_rng.note(scalar)
    return [torch.ones(2, 2, dtype=torch.float64, device=grade_device, requires_grad=True)] + \
        [grade_rng.randn(*shape, requires_grad=True, mixed=True) for shape in shapes] + [scalar]


def mean_divisors(x):
    """The task's mean runs over every element of x; a mean over one axis
    only (dim 0 or dim -1, the other axes summed) is a likely slip."""
    if x.dim() < 2:
        return ()
    first, last = x.shape[0], x.shape[-1]
    if first == last:
        instead = ((msg("label.divisor.one_axis", n=first), first),)
    else:
        instead = ((msg("label.divisor.rows", n=first), first), (msg("label.divisor.last_axis", n=last), last))
    return (Divisor(msg("label.divisor.elements", n=x.numel()), x.numel(), instead),)


def pass_counts(grade_rng):
    """Two different pass counts, so no fixed count is right for both."""
    first = grade_rng.randint(2, 3)  # the tutorial's x has 4 elements: never a pass count
    second = grade_rng.choice([k for k in (2, 3, 4) if k != first])
    return [first, second, first, second, first]


# -- what the trace and the values tell ------------------------------------------

def backward_count(trace):
    return sum(not call.raised for call in trace.backward_calls)


def fresh_forward_each_time(trace):
    """Whether every backward call came after a graph node built since the
    previous backward call (a fresh forward pass)."""
    built = False
    for op in trace.ops:
        if op.name == "backward":
            if not built:
                return False
            built = False
        elif op.node:
            built = True
    return True


def check_grad_with(autograd, got, expected, suspects, *args, **kwargs):
    """``autograd.check_grad(got, *args, **kwargs)``, but a wrong gradient that
    equals one of ``suspects`` ((tensor, diagnosis) pairs) gets that diagnosis."""
    hint = first_suspect(got, expected, lambda: suspects)
    if hint:
        autograd.fail_with(kwargs["names"][0], got, expected, hint)
    autograd.check_grad(got, *args, **kwargs)


# -- checks ----------------------------------------------------------------------

@pytest.mark.grade(points=2, instruction_share=0.25, inputs=ANY_SHAPE)
def test_accumulated_grad(submission, autograd, grade_rng, grade_device):
    for x, k in zip(inputs(grade_rng, grade_device), pass_counts(grade_rng)):
        what = msg("label.accumulation.after_passes", k=k, shape=tuple(x.shape))
        got = submission("accumulation").accumulated_grad(x, k)
        trace = submission.trace
        calls = backward_count(trace)
        autograd.instruction(calls == k, "req.accumulation.backward_count", what=what, k=k, calls=calls)
        # each call is judged by what it added: k backward calls of which
        # one does the work and the others run on throw-away graphs are not k passes
        (each,) = autograd.grad(one_pass, (x,))
        autograd.instruction(calls != k or autograd.calls_added(trace, [each] * k, 0, kind="backward"),
                             "req.accumulation.each_pass", what=what, k=k, name="x")
        autograd.instruction(fresh_forward_each_time(trace), "req.accumulation.fresh_forward", what=what)
        autograd.check_grad(got, one_pass, (x,), scale=k, calls=k, mean_over=x.numel(), names=(what,), trace=trace,
                            divisors=mean_divisors(x))


@pytest.mark.grade(points=2, instruction_share=0.25, inputs=ANY_SHAPE)
def test_zeroed_grads(submission, autograd, grade_rng, grade_device):
    for x, k in zip(inputs(grade_rng, grade_device), pass_counts(grade_rng)):
        scales = [1.0] + [SCALES[j] for j in grade_rng.numpy.permutation(len(SCALES))[:k - 1]]
        result = autograd.call_update(submission("accumulation").zeroed_grads, None, "x", "zeroed_grads", x, scales)
        calls = backward_count(submission.trace)
        autograd.instruction(calls == k, "req.accumulation.backward_per_pass",
                             what=msg("label.accumulation.zeroed_grads", k=k), k=k, calls=calls)
        expected = [autograd.grad(scaled_pass, (x, c), wrt=(0,))[0] for c in scales]
        autograd.instruction(calls != k or autograd.calls_added(submission.trace, expected, 0, kind="backward"),
                             "req.accumulation.each_pass", what=msg("label.accumulation.zeroed_grads", k=k), k=k,
                             name="x")
        grads = autograd.unpack(result, k, msg("label.accumulation.gradient_list"))
        names = [msg("label.accumulation.pass_gradient", i=i + 1, k=k, scale=c, shape=tuple(x.shape))
                 for i, c in enumerate(scales)]
        saved = [values(g) for g in grads]
        if all(s is not None and s.shape == saved[0].shape and torch.equal(s, saved[0]) for s in saved) \
                and not same(saved[0], expected[0]):
            # k identical entries where the passes differ: x.grad itself, k times
            autograd.fail_with(names[0], saved[0], expected[0], shared_memory(submission.trace, "x")
                               or msg("diag.accumulation.saved_grad_alias", name="x"))
        for i, got in enumerate(grads):
            autograd.check_grad(got, scaled_pass, (x, scales[i]), wrt=(0,), mean_over=x.numel(),
                                previous=expected[:i], names=(names[i],), divisors=mean_divisors(x))


def mse_gradient(xs, ys):
    """The gradient of step i's loss at w, for replaying a training loop."""
    xs, ys = xs.double().cpu(), ys.double().cpu()
    return lambda i, w: 2 * xs[i].T @ (xs[i] @ w - ys[i]) / ys.shape[1]


@pytest.mark.grade(points=3, instruction_share=0.25,
                   inputs=("rank 1", "rank 2", "rank 3", "size-1 axis", "one element", "negative", "positive"))
def test_train_loop(submission, autograd, grade_rng, grade_device):
    # b >= 3: step 2 of the repeated batch sees 2x the gradient, and 2 must not read as
    # "sum instead of a mean over b samples"
    k, b, n = grade_rng.randint(2, 4), grade_rng.randint(3, 4), grade_rng.randint(2, 3)
    w = grade_rng.randn(n, requires_grad=True, mixed=True)
    xs, ys = grade_rng.randn(k, b, n, mixed=True), grade_rng.randn(k, b, mixed=True)
    # First the same batch k times with lr 0: every step must see the same
    # gradient (a step that did not clear w.grad shows up as a multiple).
    repeated = (xs[0].expand(k, b, n).clone(), ys[0].expand(k, b).clone())
    # then k different batches, and a w of one element (each x a single column)
    single = (grade_rng.randn(1, requires_grad=True), grade_rng.randn(k, b, 1, mixed=True), grade_rng.randn(k, b))
    rate = grade_rng.choice([0.01, 0.05, 0.1])
    for start, (bxs, bys), lr, what in (
            (w, repeated, 0.0, msg("label.accumulation.repeated_batch", lr=0.0)),
            (w, (xs, ys), rate, msg("label.accumulation.different_batches", lr=rate, k=k)),
            (single[0], single[1:], rate, msg("label.accumulation.one_feature", lr=rate, k=k))):
        check_train_loop(submission, autograd, start, bxs, bys, lr, what)


def check_train_loop(submission, autograd, w, bxs, bys, lr, what):
    k, b, n = bxs.shape

    def label(text, case=what):
        return msg("label.case", what=text, case=case)

    result = autograd.call_update(submission("accumulation").train_loop, (w, bxs[:1], bys[:1], lr), "w",
                                  label("train_loop"), w, bxs, bys, lr)
    trace = submission.trace
    final, grads = autograd.unpack(result, 2, label(msg("label.returned", what="(w, grads)")))
    grads = autograd.unpack(grads, k, label("grads"))
    steps = [label(msg("label.accumulation.step_gradient", i=i + 1, k=k)) for i in range(k)]
    reference, expected = w.detach(), []
    for i in range(k):
        expected.append(autograd.grad(batch_loss, (reference, bxs[i], bys[i]), wrt=(0,))[0])
        reference = reference - lr * expected[-1]
    # A saved entry that is exactly w.grad's last value where the step's
    # gradient differs: w.grad itself was saved, not a copy.
    last = values(final.grad) if isinstance(final, TensorRecord) and final.grad is not None else None
    for i in range(k - 1):
        saved = values(grads[i])
        if last is not None and saved is not None and saved.shape == last.shape and torch.equal(saved, last) \
                and not same(saved, expected[i]):
            autograd.fail_with(steps[i], saved, expected[i], shared_memory(trace, "w")
                               or msg("diag.accumulation.saved_grad_alias", name="w"))
    # momentum or weight decay where plain SGD is asked: named before the
    # later steps' gradients, which it moves too
    moved = values(final) if isinstance(final, TensorRecord) else None
    variant = sgd_variant(moved, w, mse_gradient(bxs, bys), lr, k) if moved is not None and \
        moved.shape == reference.shape and not same(moved, reference) and same(values(grads[0]), expected[0]) \
        else None
    if variant:
        autograd.fail_with(label(msg("label.w_after_steps", k=k)), moved, reference, variant)
    for i in range(k):
        autograd.assert_grad(grads[i], expected[i], steps[i],
                             context=Context(mean_over=b, previous=tuple(expected[:i]), trace=trace, grad_of="w"))
    autograd.assert_meta(final, label(msg("label.returned", what="w")), is_leaf=True, requires_grad=True,
                         hint=diagnose_update(final, "w", trace))
    autograd.assert_close(final, reference, label(msg("label.w_after_steps", k=k)))
    autograd.instruction(trace.updated_in_place_without_grad, "req.inplace.update_no_grad",
                         what=label("train_loop"), name="w")


@pytest.mark.grade(points=2, instruction_share=0.25,
                   inputs=("rank 1", "rank 2", "rank 3", "size-1 axis", "one element", "negative", "positive"))
def test_microbatch_grad(submission, autograd, grade_rng, grade_device):
    # b != k, both >= 2: a micro-batch summed and a loss not divided by k are told apart;
    # w of n >= 2 elements, then of one (each sample a single feature)
    k = grade_rng.randint(2, 3)
    b = grade_rng.choice([s for s in (2, 3, 4) if s != k])
    for n in (grade_rng.randint(2, 3), 1):
        check_microbatches(submission, autograd, grade_rng, k, b, n)


def check_microbatches(submission, autograd, grade_rng, k, b, n):
    w = grade_rng.randn(n, requires_grad=True, mixed=True)
    xs, ys = grade_rng.randn(k, b, n, mixed=True), grade_rng.randn(k, b, mixed=True)
    got = submission("accumulation").microbatch_grad(w, xs, ys)
    what = msg("label.accumulation.microbatches", k=k, b=b)
    trace = submission.trace
    calls = backward_count(trace)
    autograd.instruction(calls == k, "req.accumulation.backward_count", what=what, k=k, calls=calls)
    # each call must add one micro-batch's gradient to w.grad
    shares = [autograd.grad(batch_loss, (w, xs[i], ys[i]), wrt=(0,))[0] / k for i in range(k)]
    autograd.instruction(calls != k or autograd.calls_added(trace, shares, 0, kind="backward"),
                         "req.accumulation.each_microbatch", what=what, k=k)
    whole = (w, xs.reshape(k * b, n), ys.reshape(k * b))
    (expected,) = autograd.grad(batch_loss, whole, wrt=(0,))
    (last,) = autograd.grad(batch_loss, (w, xs[-1], ys[-1]), wrt=(0,))
    suspects = [(k * expected, msg("diag.accumulation.microbatch_no_divide", k=k)),
                (b * expected, msg("diag.accumulation.microbatch_sum", b=b)),
                (k * b * expected, msg("diag.accumulation.microbatch_sum", b=b) + "\n"
                 + msg("diag.accumulation.microbatch_no_divide", k=k)),
                (last / k, msg("diag.accumulation.last_microbatch")),
                (last, msg("diag.accumulation.last_microbatch"))]
    # each micro-batch's loss divided by b, the samples in it, instead of k, their number
    divisors = (Divisor(msg("label.divisor.microbatches", k=k), k,
                        ((msg("label.divisor.microbatch_size", b=b), b),)),)
    check_grad_with(autograd, got, expected, suspects, batch_loss, whole, wrt=(0,), mean_over=k * b, calls=k,
                    trace=trace, names=(what,), divisors=divisors)

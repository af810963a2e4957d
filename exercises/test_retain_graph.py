import pytest

from pytest_autograd_grader import Divisor, ErrorRecord, TensorRecord, error_name, msg, same, shared_memory, values

pytestmark = pytest.mark.grade(concept="retain_graph")


def exp_loss(x):
    return (x * x.exp()).sum()


def cube_loss(x):
    return (x ** 3).sum()


def first_loss(x, w):
    return (x * w).tanh().sum()


def second_loss(x, w):
    return ((x * w).tanh() ** 2).mean()


def both_losses(x, w):
    h = (x * w).tanh()
    return h.sum() + (h ** 2).mean()


# -- reading answers and traces --------------------------------------------------------

def require_backward(autograd, grad, what, trace):
    """A gradient that is None because backward never ran gets that said."""
    if grad is None and not any(not call.raised for call in trace.backward_calls):
        autograd.require(False, "\n".join([msg("cmp.none", what=what), msg("diag.dynamic_graph.no_backward")]))


# x 1-D or 2-D of any shape: each rank, a size-1 axis and a single element
ANY_SHAPE = ("rank 1", "rank 2", "size-1 axis", "one element", "negative", "positive")


def sum_divisors(x):
    """L is a sum over x's elements: a mean over them is a likely slip."""
    return (Divisor(msg("label.divisor.sum"), 1, ((msg("label.divisor.elements", n=x.numel()), x.numel()),)),)


# -- backward_k_times --------------------------------------------------------------------

@pytest.mark.grade(points=3, instruction_share=0.25, inputs=ANY_SHAPE)
def test_backward_k_times(submission, autograd, grade_rng, grade_device):
    # Two different k on every run, so no fixed count passes.
    k_first = grade_rng.randint(2, 3)
    ks = (k_first, grade_rng.randint(k_first + 1, 5))
    for i, shape in enumerate(grade_rng.shapes(ranks=(1, 2))):
        k = ks[i % 2]
        x = grade_rng.randn(*shape, requires_grad=True, mixed=True)
        got = submission("retain_graph").backward_k_times(x, k)
        trace = submission.trace
        # The forward's nodes: one exp and one multiplication when L is built once.
        built = max(trace.nodes_named("ExpBackward0"), trace.nodes_named("MulBackward0"))
        autograd.instruction(built <= 1, "req.retain_graph.build_once", built=built, k=k)
        calls = trace.completed_calls
        what = msg("label.retain_graph.after_calls", k=k)
        require_backward(autograd, got, what, trace)
        (grad,) = autograd.grad(exp_loss, (x,))
        produced = values(got)
        if calls != k and 1 <= calls <= 8 and not same(produced, k * grad) and same(produced, calls * grad):
            autograd.fail_with(what, produced, k * grad, msg("diag.retain_graph.call_count", calls=calls, k=k))
        autograd.check_grad(got, exp_loss, (x,), scale=k, calls=k, names=(what,), trace=trace,
                            divisors=sum_divisors(x))
        autograd.instruction(calls == k, "req.retain_graph.k_calls", calls=calls, k=k)
        # each call judged by what it added: not one real call and k - 1 on throw-away graphs
        autograd.instruction(calls != k or autograd.calls_added(trace, [grad] * k, 0), "req.retain_graph.each_call",
                             k=k)


# -- caught_error ------------------------------------------------------------------------

@pytest.mark.grade(points=3, instruction_share=0.5, inputs=ANY_SHAPE)
def test_caught_error(submission, autograd, grade_rng, grade_device):
    for shape in grade_rng.shapes(ranks=(1, 2)):
        check_caught(submission, autograd, grade_rng.randn(*shape, requires_grad=True, mixed=True))


def check_caught(submission, autograd, x):
    caught_error = submission("retain_graph").caught_error
    result = caught_error.capture(x)
    trace = submission.trace
    if isinstance(result, ErrorRecord):
        # The student's function raised: the error escaped instead of being caught.
        module, function = caught_error.qualname.split(".", 1)
        autograd.require(error_name(result.message) != "backward_twice",
                         "\n".join([msg("student.raised", module=module, function=function, type=result.type,
                                        message=result.message, where=""), msg("diag.retain_graph.not_caught")]))
        caught_error(x)  # any other error: the usual feedback
    if isinstance(result, (tuple, list)) and len(result) == 2 and isinstance(result[0], TensorRecord) and \
            isinstance(result[1], ErrorRecord):
        autograd.require(False, msg("diag.retain_graph.swapped", order="(error, x.grad)"))
    error, grad = autograd.unpack(result, 2, msg("label.returned", what="(error, x.grad)"))
    backwards = list(trace.calls)
    went_through = len(backwards) >= 2 and not any(call.raised for call in backwards)
    kept = went_through and backwards[0].keeps_graph
    built = trace.nodes_named("PowBackward0")
    if kept:
        diagnosis = msg("diag.retain_graph.kept_graph")
    elif went_through and built >= 2:
        diagnosis = msg("diag.retain_graph.rebuilt", built=built)
    elif len(backwards) == 1 and not backwards[0].raised:
        diagnosis = msg("diag.retain_graph.one_backward")
    else:
        diagnosis = None
    with autograd.part(2):
        autograd.expect_error("backward_twice", error, what=msg("label.retain_graph.second_error"), hint=diagnosis)
    with autograd.part(1):
        what = msg("label.retain_graph.after_first")
        (expected,) = autograd.grad(cube_loss, (x,))
        produced = values(grad)
        if diagnosis and produced is not None and not same(produced, expected):
            autograd.fail_with(what, produced, expected, diagnosis)
        autograd.check_grad(grad, cube_loss, (x,), calls=1, names=(what,), trace=trace)


# -- two_losses --------------------------------------------------------------------------

# ops that copy a gradient (or read it out) into a tensor of its own; detach,
# .data, views, numpy() and the like share its memory and are no copy
COPIES = frozenset({"clone", "copy_", "tensor", "mul", "add", "sub", "div", "tolist", "__deepcopy__",
                    "__reduce_ex__", "new_tensor", "cat", "stack"})


def copy_diagnosis(trace):
    """Why grad_after_L1 holds both gradients, from where the copy was made:
    no copy after the first backward (w.grad itself was kept), or every copy
    after the last backward (copied too late); None when it is unclear."""
    ops = trace.ops
    backwards = [i for i, op in enumerate(ops) if op.name in ("backward", "autograd.grad")]
    if not backwards:
        return None
    shared = shared_memory(trace, "w")
    if shared:
        return shared  # kept through detach() or a view: a copy in name only
    # a copy of a gradient records no graph node (unlike computing L2 from h)
    copies = [i for i, op in enumerate(ops) if op.name in COPIES and not op.node and i > backwards[0]]
    if not copies:
        return msg("diag.retain_graph.no_clone")
    if len(backwards) >= 2 and all(i > backwards[-1] for i in copies):
        return msg("diag.retain_graph.copied_late")
    return None


@pytest.mark.grade(points=3, instruction_share=0.25,
                   inputs=("rank 1", "rank 2", "size-1 axis", "negative", "positive"))
def test_two_losses(submission, autograd, grade_rng, grade_device):
    # at least 2 elements (the docstring's; a mean and a sum differ): each rank and a size-1 axis
    for shape in grade_rng.shapes(ranks=(1, 2), one_element=False):
        check_two_losses(submission, autograd, grade_rng.randn(*shape, mixed=True),
                         grade_rng.randn(*shape, requires_grad=True, mixed=True))


def check_two_losses(submission, autograd, x, w):
    result = submission("retain_graph").two_losses(x, w)
    trace = submission.trace
    built = trace.nodes_named("TanhBackward0")
    autograd.instruction(built <= 1, "req.retain_graph.h_once", built=built)
    first, both = autograd.unpack(result, 2, msg("label.returned", what="(grad_after_L1, grad_after_both)"))
    calls = trace.completed_calls
    (g1,) = autograd.grad(first_loss, (x, w), wrt=(1,))
    (g2,) = autograd.grad(second_loss, (x, w), wrt=(1,))
    got_first, got_both = values(first), values(both)
    n = w.numel()
    if same(got_first, g1 + g2) and same(got_both, g1):
        autograd.require(False, msg("diag.retain_graph.swapped", order="(grad_after_L1, grad_after_both)"))
    what = msg("label.retain_graph.after_l1")
    require_backward(autograd, first, what, trace)
    if same(got_first, g1 + g2) and not same(got_first, g1):
        diagnosis = copy_diagnosis(trace)
        if diagnosis:
            autograd.fail_with(what, got_first, g1, diagnosis)
    autograd.check_grad(first, first_loss, (x, w), wrt=(1,), names=(what,), trace=trace)
    what = msg("label.retain_graph.after_both")
    require_backward(autograd, both, what, trace)
    for key, wrong in (("diag.retain_graph.zeroed_between", g2), ("diag.retain_graph.l2_sum", g1 + n * g2),
                       ("diag.retain_graph.l1_twice", 2 * g1 + g2)):
        if not same(got_both, g1 + g2) and same(got_both, wrong):
            autograd.fail_with(what, got_both, g1 + g2, msg(key, k=n, calls=calls))
    autograd.check_grad(both, both_losses, (x, w), wrt=(1,), names=(what,), trace=trace)
    autograd.instruction(calls == 2, "req.retain_graph.two_calls", calls=calls)

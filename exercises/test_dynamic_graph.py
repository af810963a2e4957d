import pytest
import torch

from pytest_autograd_grader import msg, same, values

pytestmark = pytest.mark.grade(concept="dynamic_graph")


# -- the functions the checks differentiate --------------------------------------

def branch_loss(x):
    if x.sum() > 0:
        return (x * x).sum()
    return torch.exp(x).sum()


def square_loss(x):
    return (x * x).sum()


def exp_loss(x):
    return torch.exp(x).sum()


def per_element_loss(x):
    # each element takes its own branch: the mistake the mixed-sign inputs catch
    return torch.where(x > 0, x * x, torch.exp(x)).sum()


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


def rnn_variant(xs, w, h0, variant, m):
    """The RNN as plausible mistakes compute it."""
    rows = {"prefix": xs[:m], "skip_first": xs[1:], "reversed": xs.flip(0)}.get(variant, xs)
    h = h0
    for x_t in rows:
        if variant == "dot":
            h = torch.tanh(w @ h + x_t)
        elif variant == "detached":
            h = torch.tanh(w * h.detach() + x_t)
        else:
            h = torch.tanh(w * h + x_t)
    return h.sum()


# -- reading answers ---------------------------------------------------------------

def recognised(got, expected, candidates):
    """The first (name, value) of ``candidates`` that the produced value
    matches while it differs from the expected one; None otherwise."""
    if got is None or same(got, expected):
        return None
    for name, value in candidates:
        if value is not None and not same(value, expected) and same(got, value):
            return name
    return None


def backward_count(trace):
    return sum(not call.raised for call in trace.backward_calls)


def require_backward(autograd, grad, what, trace):
    """A gradient that is None because backward never ran gets that said."""
    if grad is None and backward_count(trace) == 0:
        autograd.require(False, "\n".join([msg("cmp.none", what=what), msg("diag.dynamic_graph.no_backward")]))


def eighths(rng, count):
    """``count`` nonzero multiples of 1/8 between 1/8 and 2: sums of them are exact."""
    return [rng.randint(1, 16) / 8 for _ in range(count)]


def mixed_input(rng, sign, device):
    """2 to 5 values in eighths with elements of both signs, whose sum has
    ``sign`` (exactly 0 when ``sign`` is 0) while x[0] has the other sign:
    a branch taken per element, on x[0], on x.max() or x.min(), or with >=,
    disagrees with the branch on x.sum() > 0."""
    n = rng.randint(2, 5)
    if sign == 0:
        while True:
            first = eighths(rng, n - 1)
            first = [v * rng.choice((1, -1)) for v in first]
            last = -sum(first)
            if last != 0 and 0 < sum(v > 0 for v in first + [last]) < n:
                values_ = first + [last]
                break
    else:
        head = eighths(rng, 1)[0]
        rest = eighths(rng, n - 1)
        if sum(rest) <= head:
            rest[-1] += head - sum(rest) + rng.randint(1, 8) / 8
        values_ = [-sign * head] + [sign * v for v in rest]
    return torch.tensor(values_, dtype=torch.float64, device=device)


# -- branch_grad -------------------------------------------------------------------

def short(x):
    shown = ", ".join(f"{v:.4g}" for v in x.detach().flatten()[:6].tolist())
    return f"[{shown}{', ...' if x.numel() > 6 else ''}]"


def wrong_branches(x, swapped):
    """What plausible wrong branches give for x: (diagnosis, loss, grad)
    each. ``swapped``: the other answers already showed the branch taken on
    something else than x.sum() > 0."""
    total = float(x.detach().sum())
    branch = "(x * x).sum()" if total > 0 else "torch.exp(x).sum()"
    other = exp_loss if total > 0 else square_loss
    if total == 0 and not swapped:
        cases = [(msg("diag.dynamic_graph.sum_zero"), square_loss)]
    else:
        cases = [(msg("diag.dynamic_graph.wrong_branch", total=total, branch=branch), other)]
    cases.append((msg("diag.dynamic_graph.per_element", total=total, branch=branch), per_element_loss))
    out = []
    for diagnosis, fn in cases:
        leaf = x.detach().double().cpu().requires_grad_(True)
        loss = fn(leaf)
        (grad,) = torch.autograd.grad(loss, leaf)
        out.append((diagnosis, loss.detach(), grad))
    return out


def took_other_branch(x, loss):
    """Whether a returned loss is the other branch's, for an x whose sum is not 0."""
    total = float(x.detach().sum())
    if total == 0:
        return False
    xd = x.detach().double().cpu()
    expected, other = (square_loss(xd), exp_loss(xd)) if total > 0 else (exp_loss(xd), square_loss(xd))
    return recognised(values(loss), expected, [("", other)]) is not None


@pytest.mark.grade(points=3, inputs=("rank 1", "one element", "negative", "positive"))
def test_branch_grad(submission, autograd, grade_rng, grade_device):
    # Built on every run, of random lengths and values: a positive sum with
    # x[0] < 0, a negative sum with x[0] > 0 and a sum of exactly 0, each with
    # elements of both signs, and a single element.
    inputs = [mixed_input(grade_rng, s, grade_device) for s in (1, -1, 0)]
    # and a single element (the docstring allows 1 to 6), of either sign
    inputs.append(torch.tensor([eighths(grade_rng, 1)[0] * grade_rng.choice((1, -1))], dtype=torch.float64,
                               device=grade_device))
    grade_rng.note(*inputs)
    answers = []
    for x in inputs:
        x.requires_grad_(True)
        answers.append((x, submission("dynamic_graph").branch_grad(x), submission.trace))
    swapped = any(isinstance(result, (tuple, list)) and len(result) == 2 and took_other_branch(x, result[0])
                  for x, result, _ in answers)
    for x, result, trace in answers:
        total = float(x.detach().sum())
        relation = ">" if total > 0 else "==" if total == 0 else "<"
        label = f"x = {short(x)}, x.sum() {relation} 0"
        with autograd.part(1):
            loss, grad = autograd.unpack(result, 2, msg("label.returned", what="(loss, x.grad)"))
            expected_loss = branch_loss(x.detach())
            (expected_grad,) = autograd.grad(branch_loss, (x,))
            got_loss, got_grad = values(loss), values(grad)
            right = same(got_loss, expected_loss) and same(got_grad, expected_grad)
            for diagnosis, wrong_loss, wrong_grad in () if right else wrong_branches(x, swapped):
                if recognised(got_loss, expected_loss, [("", wrong_loss)]) is not None:
                    autograd.fail_with(f"loss ({label})", got_loss, expected_loss, diagnosis)
                if recognised(got_grad, expected_grad, [("", wrong_grad)]) is not None:
                    autograd.fail_with(f"x.grad ({label})", got_grad, expected_grad, diagnosis)
            autograd.assert_close(loss, expected_loss, f"loss ({label})")
            require_backward(autograd, grad, f"x.grad ({label})", trace)
            autograd.check_grad(grad, branch_loss, (x,), names=(f"x.grad ({label})",), trace=trace)


# -- loop_grad -----------------------------------------------------------------------

# Vectors whose norm is a whole number, and factors c that are short binary
# fractions: x * c ** k and its norm are then exact in float64 however the
# norm is computed, so a limit equal to a norm separates < from <=.
WHOLE_NORMS = ((3.0, 4.0), (1.0, 2.0, 2.0), (2.0, 3.0, 6.0), (1.0, 4.0, 8.0), (4.0, 4.0, 7.0), (2.0, 6.0, 9.0))
EXACT_FACTORS = (1.25, 1.5, 1.75)


def whole_norm_input(rng, device):
    """A vector with a whole-number norm (signs, order and a power-of-two
    scale drawn at random) and its norm."""
    entries = list(rng.choice(WHOLE_NORMS))
    order = rng.numpy.permutation(len(entries))
    scale = 2.0 ** rng.randint(-2, 1)
    x = torch.tensor([entries[int(i)] * rng.choice((1, -1)) * scale for i in order], dtype=torch.float64)
    return x.to(device), float(sum(e * e for e in entries) ** 0.5) * scale


def loop_cases(rng, device):
    """(x, c, limit) of every loop-count case, built on every run: no step
    (the limit below |x|, x a single element; and exactly |x|), one step
    after which the norm equals the limit exactly, and 3 to 7 steps with
    random values of both signs."""
    x, c = rng.randn(1), float(rng.numpy.uniform(1.2, 1.8))  # a single element
    cases = [(x, c, float(x.norm()) * c ** -float(rng.numpy.uniform(0.2, 2.8)))]  # no step: |x| past the limit
    x, norm = whole_norm_input(rng, device)
    cases.append((x, rng.choice(EXACT_FACTORS), norm))  # no step: the norm equals the limit
    x, norm = whole_norm_input(rng, device)
    c = rng.choice(EXACT_FACTORS)
    cases.append((x, c, norm * c))  # one step, and then the norm equals the limit
    x, c = rng.randn(rng.randint(2, 3), mixed=True), float(rng.numpy.uniform(1.2, 1.8))  # both signs
    cases.append((x, c, float(x.norm()) * c ** (rng.randint(2, 6) + float(rng.numpy.uniform(0.2, 0.8)))))
    return cases


def steps_diagnosis(got, expected, norm, limit, trace):
    """The likely mistake behind a wrong step count, or None."""
    if type(got) is not int or got == expected:
        return None
    if got == expected + 1:
        if expected == 0 and norm != limit:
            return msg("diag.dynamic_graph.loop_zero", norm=norm, limit=limit)
        if norm == limit:  # the norm after `expected` steps is exactly the limit
            return msg("diag.dynamic_graph.loop_boundary", steps=expected, limit=limit, got=got)
    if abs(got - expected) == 1:
        return msg("diag.dynamic_graph.loop_off_by_one", got=got, expected=expected)
    return None


@pytest.mark.grade(points=3, instruction_share=0.25, inputs=("rank 1", "one element", "negative", "positive"))
def test_loop_grad(submission, autograd, grade_rng, grade_device):
    cases = loop_cases(grade_rng, grade_device)
    # parts of 1 + 2 per case: an error in one case keeps the credit of the cases before it
    autograd.parts(total=3 * len(cases))
    for x, c, limit in cases:
        x = x.to(grade_device).requires_grad_(True)
        expected_steps, z = 0, x.detach()
        while z.norm() < limit:
            z = z * c
            expected_steps += 1
        last_norm = float(z.norm())
        result = submission("dynamic_graph").loop_grad(x, c, limit)
        trace = submission.trace
        muls = trace.nodes_named("MulBackward0")
        # The loop itself must build the graph, one multiplication per step:
        # counting first and then computing x * c ** steps skips the point.
        autograd.instruction(expected_steps < 2 or muls >= expected_steps, "req.dynamic_graph.loop_graph",
                             muls=muls, steps=expected_steps)
        label = f"|x| = {float(x.detach().norm()):.6g}, c = {c:.6g}, limit = {limit:.6g}"
        steps, grad = autograd.unpack(result, 2, msg("label.returned", what="(steps, x.grad)"))
        with autograd.part(1):
            autograd.assert_equal(steps, expected_steps, f"steps ({label})",
                                  hint=steps_diagnosis(steps, expected_steps, last_norm, limit, trace))
        with autograd.part(2):
            what = f"x.grad ({label})"
            require_backward(autograd, grad, what, trace)
            expected_grad = torch.full_like(x.detach(), c ** expected_steps)
            got = values(grad)
            if type(steps) is int and steps != expected_steps and 0 <= steps < 64 and \
                    same(got, torch.full_like(expected_grad, c ** steps)):
                autograd.fail_with(what, got, expected_grad, msg("diag.dynamic_graph.grad_follows_steps", steps=steps))
            if backward_count(trace) > 1 and got is not None and not same(got, expected_grad):
                autograd.fail_with(what, got, expected_grad,
                          msg("diag.dynamic_graph.backward_in_loop", calls=backward_count(trace)))
            autograd.check_grad(grad, loop_loss, (x, c, limit), wrt=(0,), names=(what,), trace=trace)


# -- rnn_grad ------------------------------------------------------------------------

@pytest.mark.grade(points=3, inputs=("rank 1", "rank 2", "size-1 axis", "one element", "negative", "positive"))
def test_rnn_grad(submission, autograd, grade_rng, grade_device):  # noqa: C901  (one check per kind of RNN mistake, each a branch)
    # Sequences of length 1 (one feature, and 2 or 3) and one of length 3 to
    # 6 with 2 to 4 features on every run: the same code must follow each
    # length and width.
    autograd.parts(total=6)  # w.grad and h0.grad per sequence: an error keeps the sequences before it
    for steps, n in ((1, 1), (1, grade_rng.randint(2, 3)), (grade_rng.randint(3, 6), grade_rng.randint(2, 4))):
        xs = grade_rng.randn(steps, n, mixed=True)
        w = grade_rng.randn(n, requires_grad=True, mixed=True)
        h0 = grade_rng.randn(n, requires_grad=True, mixed=True)
        result = submission("dynamic_graph").rnn_grad(xs, w, h0)
        trace = submission.trace
        w_grad, h0_grad = autograd.unpack(result, 2, msg("label.returned", what="(w.grad, h0.grad)"))
        unrecorded = any(op.name in ("tanh", "mul", "add") for op in trace.ops_without_grad)
        cut = trace.count("detach", "detach_", "data")
        variants = [("diag.dynamic_graph.rnn_detached", "detached", 0)] if cut else []
        variants += [("diag.dynamic_graph.rnn_empty", "prefix", 0)]
        variants += [("diag.dynamic_graph.rnn_prefix", "prefix", m) for m in range(1, steps)]
        if steps >= 2:  # with one row, skipping the first row is the empty loop
            variants += [("diag.dynamic_graph.rnn_skip_first", "skip_first", 0)]
        variants += [("diag.dynamic_graph.rnn_reversed", "reversed", 0), ("diag.dynamic_graph.rnn_dot", "dot", 0)]
        for index, got, name in ((1, w_grad, "w.grad"), (2, h0_grad, "h0.grad")):
            what = f"{name} (T = {steps}, n = {n})"
            with autograd.part(1):
                require_backward(autograd, got, what, trace)
                (expected,) = autograd.grad(rnn_loss, (xs, w, h0), wrt=(index,))
                produced = values(got)
                if got is None and variants and variants[0][1] == "detached" and index == 2:
                    autograd.require(False, "\n".join([msg("cmp.none", what=what),
                                                       msg("diag.dynamic_graph.rnn_detached")]))
                if got is None and index == 1 and not trace.nodes_named("TanhBackward0"):
                    # no step ran at all, so w was never used
                    autograd.require(False, "\n".join([msg("cmp.none", what=what),
                                                       msg("diag.dynamic_graph.rnn_empty", steps=steps)]))
                # steps computed with gradients off are missing from the graph
                if unrecorded and got is None:
                    autograd.require(False, "\n".join([msg("cmp.none", what=what),
                                                       msg("diag.dynamic_graph.rnn_no_grad")]))
                if unrecorded and produced is not None and not same(produced, expected):
                    autograd.fail_with(what, produced, expected, msg("diag.dynamic_graph.rnn_no_grad"))
                for key, variant, m in variants:
                    if produced is None or same(produced, expected):
                        break
                    if (variant == "dot" and n < 2) or (variant == "prefix" and m == 0 and index == 1):
                        continue  # the same as the task / w unused (then w.grad is None, not zeros)
                    (wrong,) = autograd.grad(rnn_variant, (xs, w, h0, variant, m), wrt=(index,))
                    if recognised(produced, expected, [("", wrong)]) is not None:
                        autograd.fail_with(what, produced, expected, msg(key, m=m, steps=steps))
                autograd.check_grad(got, rnn_loss, (xs, w, h0), wrt=(index,), names=(what,), trace=trace)

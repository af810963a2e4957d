"""The `dynamic_graph` topic: plausible mistakes fail on every seed with the
diagnosis that names them, correct answers in other styles pass on every
seed (test_curriculum grades the reference solution on every seed and the
untouched stubs).

Every mistake is planted in its own copy of the student module and all of
them are graded in one session under 20 seeds (``grade_variants``)."""

from conftest import assert_all_pass, assert_diagnosed, grade_named, instruction_only

TOPIC = "dynamic_graph"

WRONG = {
    "per_element_do_while_truncated": {
        # every element takes its own branch
        "branch_grad": """
def branch_grad(x):
    loss = torch.where(x > 0, x * x, torch.exp(x)).sum()
    loss.backward()
    return loss, x.grad
""",
        # multiplies before testing: always at least one step
        "loop_grad": """
def loop_grad(x, c, limit):
    y = x * c
    steps = 1
    while y.norm() < limit:
        y = y * c
        steps += 1
    y.sum().backward()
    return steps, x.grad
""",
        # truncated backpropagation through time
        "rnn_grad": """
def rnn_grad(xs, w, h0):
    h = h0
    for x_t in xs:
        h = torch.tanh(w * h.detach() + x_t)
    h.sum().backward()
    return w.grad, h0.grad
""",
    },
    "ge_le_skip_first": {
        "branch_grad": """
def branch_grad(x):
    loss = (x * x).sum() if x.sum() >= 0 else torch.exp(x).sum()
    loss.backward()
    return loss, x.grad
""",
        "loop_grad": """
def loop_grad(x, c, limit):
    y = x
    steps = 0
    while y.norm() <= limit:
        y = y * c
        steps += 1
    y.sum().backward()
    return steps, x.grad
""",
        "rnn_grad": """
def rnn_grad(xs, w, h0):
    h = h0
    for x_t in xs[1:]:
        h = torch.tanh(w * h + x_t)
    h.sum().backward()
    return w.grad, h0.grad
""",
    },
    "first_element_log_formula_reversed": {
        "branch_grad": """
def branch_grad(x):
    loss = (x * x).sum() if x[0] > 0 else torch.exp(x).sum()
    loss.backward()
    return loss, x.grad
""",
        # the step count from a formula (int() rounds toward zero), then one multiplication
        "loop_grad": """
import math

def loop_grad(x, c, limit):
    steps = int(math.log(limit / float(x.norm())) / math.log(c)) + 1
    y = x * c ** steps
    y.sum().backward()
    return steps, x.grad
""",
        "rnn_grad": """
def rnn_grad(xs, w, h0):
    h = h0
    for x_t in reversed(xs):
        h = torch.tanh(w * h + x_t)
    h.sum().backward()
    return w.grad, h0.grad
""",
    },
    "swapped_ceil_formula_dot": {
        "branch_grad": """
def branch_grad(x):
    if x.sum() > 0:
        loss = torch.exp(x).sum()
    else:
        loss = (x * x).sum()
    loss.backward()
    return loss, x.grad
""",
        # a formula that is right away from the boundaries
        "loop_grad": """
import math

def loop_grad(x, c, limit):
    steps = max(0, math.ceil(math.log(limit / float(x.norm())) / math.log(c)))
    y = x * c ** steps
    y.sum().backward()
    return steps, x.grad
""",
        "rnn_grad": """
def rnn_grad(xs, w, h0):
    h = h0
    for x_t in xs:
        h = torch.tanh(w @ h + x_t)
    h.sum().backward()
    return w.grad, h0.grad
""",
    },
    "no_backward_backward_each_step_skip_last": {
        "branch_grad": """
def branch_grad(x):
    loss = (x * x).sum() if x.sum() > 0 else torch.exp(x).sum()
    return loss, x.grad
""",
        "loop_grad": """
def loop_grad(x, c, limit):
    y = x
    steps = 0
    while y.norm() < limit:
        y = y * c
        steps += 1
        y.sum().backward(retain_graph=True)
    if steps == 0:
        y.sum().backward()
    return steps, x.grad
""",
        "rnn_grad": """
def rnn_grad(xs, w, h0):
    h = h0
    for x_t in xs[:-1]:
        h = torch.tanh(w * h + x_t)
    h.sum().backward()
    return w.grad, h0.grad
""",
    },
    "max_stops_early_zeros": {
        "branch_grad": """
def branch_grad(x):
    loss = (x * x).sum() if x.max() > 0 else torch.exp(x).sum()
    loss.backward()
    return loss, x.grad
""",
        # looks one step ahead, so it stops one step early
        "loop_grad": """
def loop_grad(x, c, limit):
    y = x
    steps = 0
    while (y * c).norm() < limit:
        y = y * c
        steps += 1
    y.sum().backward()
    return steps, x.grad
""",
        # starts from zeros instead of h0
        "rnn_grad": """
def rnn_grad(xs, w, h0):
    h = torch.zeros_like(h0)
    for x_t in xs:
        h = torch.tanh(w * h + x_t)
    h.sum().backward()
    return w.grad, h0.grad
""",
    },
    "all_positive_detached_loop": {
        "branch_grad": """
def branch_grad(x):
    loss = (x * x).sum() if bool((x > 0).all()) else torch.exp(x).sum()
    loss.backward()
    return loss, x.grad
""",
        # detaches "so the while condition can read the value": the graph is lost
        "loop_grad": """
def loop_grad(x, c, limit):
    y = x.detach()
    steps = 0
    while y.norm() < limit:
        y = y * c
        steps += 1
    y.sum().backward()
    return steps, x.grad
""",
        # computes the whole sequence under no_grad except the last step
        "rnn_grad": """
def rnn_grad(xs, w, h0):
    h = h0
    with torch.no_grad():
        for x_t in xs[:-1]:
            h = torch.tanh(w * h + x_t)
    h = torch.tanh(w * h + xs[-1])
    h.sum().backward()
    return w.grad, h0.grad
""",
    },
    "squeezed_sequence": {
        # xs.squeeze() to "drop the batch axis": a sequence of one step (drawn
        # on every seed, with one feature and with several) loses its time axis
        "rnn_grad": """
def rnn_grad(xs, w, h0):
    h = h0
    for x_t in xs.squeeze():
        h = torch.tanh(w * h + x_t)
    h.sum().backward()
    return w.grad, h0.grad
""",
    },
}

RIGHT = {
    # torch.where on the (scalar) condition, the loss as a float, autograd.grad;
    # a for loop with break and another norm; autograd.grad for the RNN
    "where_break_grad": {
        "branch_grad": """
def branch_grad(x):
    loss = torch.where(x.sum() > 0, x.pow(2).sum(), torch.sum(torch.exp(x)))
    (grad,) = torch.autograd.grad(loss, x)
    return loss.item(), grad
""",
        "loop_grad": """
def loop_grad(x, c, limit):
    y, steps = x, 0
    for _ in range(10000):
        if torch.linalg.vector_norm(y) >= limit:
            break
        y = c * y
        steps = steps + 1
    torch.autograd.backward(torch.sum(y))
    return steps, x.grad
""",
        "rnn_grad": """
def rnn_grad(xs, w, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = (w * h + xs[t]).tanh()
    return torch.autograd.grad(h.sum(), (w, h0))
""",
    },
    # Python floats for the conditions, lists for the returns, the norm as
    # the square root of a sum of squares, recursion
    "floats_lists_recursion": {
        "branch_grad": """
def branch_grad(x):
    if float(x.detach().sum()) > 0:
        loss = torch.sum(x ** 2)
    else:
        loss = x.exp().sum()
    loss.backward()
    return [loss, x.grad]
""",
        "loop_grad": """
def grow(y, c, limit, steps):
    if float((y * y).sum().sqrt()) < limit:
        return grow(torch.mul(y, c), c, limit, steps + 1)
    return y, steps

def loop_grad(x, c, limit):
    y, steps = grow(x, c, limit, 0)
    y.sum().backward()
    return [steps, x.grad]
""",
        "rnn_grad": """
def rnn_grad(xs, w, h0):
    h = h0
    for x_t in xs.unbind(0):
        h = torch.tanh(torch.add(torch.mul(w, h), x_t))
    torch.autograd.backward([h.sum()])
    return [w.grad, h0.grad]
""",
    },
}


DG = "diag.dynamic_graph."
# What each planted mistake's feedback says on every seed (and nothing else of
# this topic's, nor a generic diagnosis that is not listed).
EXPECT = {
    "per_element_do_while_truncated": {
        "test_branch_grad": [DG + "per_element"],
        "test_loop_grad": [DG + "loop_zero", DG + "loop_boundary", DG + "grad_follows_steps"],
        "test_rnn_grad": [DG + "rnn_detached"],
    },
    "ge_le_skip_first": {
        "test_branch_grad": [DG + "sum_zero"],
        "test_loop_grad": [DG + "loop_boundary", DG + "grad_follows_steps"],
        # T = 1: nothing left of the loop, so w gets no gradient
        "test_rnn_grad": [DG + "rnn_skip_first", DG + "rnn_empty", "w.grad (T = 1, n = "],
    },
    "first_element_log_formula_reversed": {
        "test_branch_grad": [DG + "wrong_branch"],
        "test_loop_grad": ["req.dynamic_graph.loop_graph"],
        "test_rnn_grad": [DG + "rnn_reversed"],
    },
    "swapped_ceil_formula_dot": {
        "test_branch_grad": [DG + "wrong_branch"],
        "test_loop_grad": ["req.dynamic_graph.loop_graph"],
        "test_rnn_grad": [DG + "rnn_dot"],
    },
    "no_backward_backward_each_step_skip_last": {
        "test_branch_grad": [DG + "no_backward"],
        "test_loop_grad": [DG + "backward_in_loop"],
        "test_rnn_grad": [DG + "rnn_prefix", DG + "rnn_empty", "w.grad (T = 1, n = "],
    },
    "max_stops_early_zeros": {
        "test_branch_grad": [DG + "wrong_branch"],
        "test_loop_grad": [DG + "loop_off_by_one", DG + "grad_follows_steps"],
        "test_rnn_grad": ["h0.grad (T = 1", "diag.none_leaf"],
    },
    "all_positive_detached_loop": {
        "test_branch_grad": [DG + "wrong_branch"],
        "test_loop_grad": ["dynamic_graph_all_positive_detached_loop.loop_grad raised RuntimeError",
                           "diag.requires_grad"],
        "test_rnn_grad": [DG + "rnn_no_grad"],
    },
    "squeezed_sequence": {
        "test_rnn_grad": ["rnn_grad raised TypeError: iteration over a 0-d tensor"],
    },
}


def test_mistakes_fail_on_every_seed_and_correct_styles_pass(pytester):
    results = grade_named(pytester, TOPIC, WRONG, RIGHT)

    assert set(EXPECT) == set(WRONG)
    # the formula with int() is also wrong at the loop's edges (x already past the limit, or landing on it)
    assert_diagnosed(results, TOPIC, EXPECT,
                     may={("first_element_log_formula_reversed", "test_loop_grad"):
                          [DG + "loop_boundary", DG + "loop_zero", DG + "loop_off_by_one", DG + "grad_follows_steps"]})
    # the formulas lose the share of the instruction the loop broke (it built
    # no graph step by step), whatever their values earn; the report says so
    for variant in ("first_element_log_formula_reversed", "swapped_ceil_formula_dot"):
        for run in results[variant]["test_loop_grad"]:
            assert run["score"] <= instruction_only(3), run
            assert run["instruction"] == {"share": 0.25, "score": 0.0, "max_score": 0.75, "followed": False}, run

    for variant in RIGHT:
        assert_all_pass(results, variant)
        # every input class a check declares (a single element, both signs,
        # each rank and a size-1 axis for the RNN) is drawn on each seed
        for check, runs in results[variant].items():
            for run in runs:
                assert run["inputs_missing"] == [], (variant, check, run["inputs"], run["inputs_missing"])

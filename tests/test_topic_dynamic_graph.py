"""The `dynamic_graph` topic: plausible mistakes fail on every seed with the
diagnosis that names them, correct answers in other styles pass on every
seed (test_curriculum grades the reference solution on every seed and the
untouched stubs).

Every planted mistake (mistakes/dynamic_graph/) and correct style is graded
in one session under 20 seeds (``grade_planted_named``)."""

from conftest import assert_all_pass, assert_diagnosed, instruction_only
from planted_mistakes import grade_planted_named, planted_named

TOPIC = "dynamic_graph"


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
# What a planted mistake's feedback (mistakes/dynamic_graph/<name>.py) says on every seed
# besides its file's expected diagnoses (and nothing else of this topic's, nor
# a generic diagnosis that is not listed).
EXPECT = {
    # T = 1: nothing left of the loop, so w gets no gradient
    "rnn_skip_first": ["w.grad (T = 1, n = "],
    "rnn_skip_last": ["w.grad (T = 1, n = "],
    "rnn_zeros": ["h0.grad (T = 1"],
    "loop_detached": [".loop_grad raised RuntimeError"],
    "rnn_squeezed_sequence": ["rnn_grad raised TypeError: iteration over a 0-d tensor"],
}


def test_mistakes_fail_on_every_seed_and_correct_styles_pass(pytester):
    results = grade_planted_named(pytester, TOPIC, RIGHT)

    # the formula with int() is also wrong at the loop's edges (x already past the limit, or landing on it)
    assert_diagnosed(
        results,
        TOPIC,
        planted_named(TOPIC, EXPECT),
        may={
            ("loop_log_formula", "test_loop_grad"): [
                DG + "loop_boundary",
                DG + "loop_zero",
                DG + "loop_off_by_one",
                DG + "grad_follows_steps",
            ]
        },
    )
    # the formulas lose the share of the instruction the loop broke (it built
    # no graph step by step), whatever their values earn; the report says so
    for variant in ("loop_log_formula", "loop_ceil_formula"):
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

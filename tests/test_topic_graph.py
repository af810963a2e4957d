"""The `graph` topic: plausible mistakes fail on every seed with the
diagnosis that names them (and no other), a docstring's instruction broken
with right values costs its share of the points (read from the trace), and
correct solutions in other styles pass.

Every planted mistake (mistakes/graph/<name>.py) and every correct style is
graded under the 20 seeds of ``grade_seeds``, all in one grading session."""

from conftest import assert_planted, instruction_only
from planted_mistakes import Expect, planted

from pytest_autograd_grader.i18n import msg

TOPIC = "graph"

# The ids each check may answer with; a planted mistake must get its own and none of the others.
SPECIFIC = {
    "test_build_graph": ("diag.graph.not_recorded", "diag.graph.order", "req.graph.y_from_a_b"),
    "test_grad_fn_names": ("diag.graph.none_type", "diag.graph.repr", "req.graph.read_grad_fn"),
    "test_hand_gradients": (
        "req.graph.by_hand",
        "diag.graph.hand_none",
        "diag.graph.order",
        "diag.graph.one_path",
        "diag.graph.local_swap",
        "diag.graph.sign_some",
        "diag.sign",
    ),
    "test_autograd_gradients": (
        "req.graph.use_autograd",
        "diag.graph.order",
        "diag.graph.returned_inputs",
        "diag.graph.sum_not_mean",
        "diag.graph.mean_axis",
        "diag.multiple_calls",
        "diag.multiple",
        "diag.factor",
        "diag.too_small",
    ),
}


# What the test asserts of a planted mistake (mistakes/graph/<name>.py) beyond its
# file's diagnosis: more feedback text, a partial score, text that must be absent.
EXPECT = {
    "detached_inputs": Expect(
        texts=("a: expected requires_grad = True, got False", msg("diag.graph.not_recorded", what="a"))
    ),
    "y_recomputed": Expect(texts=(msg("req.graph.y_from_a_b", adds=4),), score=instruction_only(2)),
    "build_order": Expect(texts=(msg("diag.graph.order", expected="(a, b, y)"),)),
    "malformed_return": Expect(texts=("build_graph's (a, b, y): expected 3 values, got 2",)),
    "names_typed_in": Expect(texts=(msg("req.graph.read_grad_fn", nodes=0, reads=0),), score=instruction_only(2)),
    "names_from_detached": Expect(
        texts=("the name of a.grad_fn: expected 'AddBackward0', got 'NoneType'", msg("diag.graph.none_type", count=3))
    ),
    "names_order": Expect(texts=("the name of a.grad_fn: expected 'AddBackward0', got 'MulBackward0'",)),
    "autograd_by_hand": Expect(texts=(msg("req.graph.by_hand", count=1),), score=instruction_only(3)),
    "grad_read_by_hand": Expect(texts=("dy/dw: expected a gradient, got None",), absent=("requires_grad=True",)),
    "one_path": Expect(texts=("dy/dw: values differ",)),
    "sign_some": Expect(texts=("dy/dw: values differ", "those where the expected value is negative")),
    "local_swap": Expect(texts=("dy/dx: values differ",)),
    "every_sign": Expect(texts=("dy/dw: values differ",)),
    "squeezed_axis": Expect(texts=("dy/dw: expected shape (",)),
    "vector_only_loop": Expect(texts=("hand_gradients raised ValueError: only one element tensors can be converted",)),
    "mean_over_rows": Expect(texts=("w.grad: values differ", "is the size of axis 0 of x")),
    "gradients_swapped": Expect(texts=(msg("diag.graph.order", expected="(w.grad, x.grad)"),)),
    "autograd_mean": Expect(texts=("w.grad: values differ",)),
    "backward_twice": Expect(texts=(msg("diag.multiple_calls", k=2, calls=2, name="x"),)),
    "written_by_hand": Expect(score=instruction_only(3)),
    "returned_inputs": Expect(texts=(msg("diag.graph.returned_inputs", names="(w, x)", grads="(w.grad, x.grad)"),)),
}

# Correct, in other styles than the reference's.
OTHER_STYLES = {
    "build_graph": """
def build_graph(x, w):
    a = x + w
    b = 1 + w
    return [a, b, a * b]
""",
    # Reads only y's node and walks to a's and b's.
    "grad_fn_names": """
def grad_fn_names(x, w):
    a, b, y = build_graph(x, w)
    node = y.grad_fn
    return [node.next_functions[0][0].name(), node.next_functions[1][0].name(), node.name()]
""",
    "hand_gradients": """
def hand_gradients(x, w):
    a, b = x + w, w + 1
    return [(b * 1 + a * 1).numpy(), b.numpy()]
""",
    "autograd_gradients": """
def autograd_gradients(x, w):
    return list(torch.autograd.grad(torch.sum(torch.mul(torch.add(x, w), torch.add(w, 1))), [w, x]))
""",
}

CORRECT = {"styles": OTHER_STYLES}


def test_planted_mistakes_fail_and_other_styles_pass_on_every_seed(pytester):
    assert_planted(pytester, TOPIC, planted(TOPIC, EXPECT), CORRECT, SPECIFIC)


def test_every_declared_input_class_is_drawn_on_every_seed(grade_seeds):
    # a vector, a matrix, a matrix with an axis of size 1, both signs: each
    # check draws every class it declares on each of the 20 seeds
    graded = grade_seeds([TOPIC])
    assert len(graded.report["checks"]) == 4 * 20
    for check in graded.report["checks"]:
        assert check["status"] == "passed", check["feedback"]
        assert check["inputs_missing"] == [], (check["id"], check["inputs"], check["inputs_missing"])
        assert {"rank 2", "size-1 axis", "negative", "positive"} <= set(check["inputs"]), check["id"]

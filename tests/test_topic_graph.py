"""The `graph` topic: plausible mistakes fail on every seed with the
diagnosis that names them (and no other), a docstring's instruction broken
with right values costs its share of the points (read from the trace), and
correct solutions in other styles pass.

Every planted mistake and every correct style is graded under the 20 seeds
of ``grade_seeds``, all in one grading session."""


from conftest import Mistake, assert_planted, instruction_only

from pytest_autograd_grader.i18n import msg

TOPIC = "graph"

# The ids each check may answer with; a planted mistake must get its own and none of the others.
SPECIFIC = {
    "test_build_graph": ("diag.graph.not_recorded", "diag.graph.order", "req.graph.y_from_a_b"),
    "test_grad_fn_names": ("diag.graph.none_type", "diag.graph.repr", "req.graph.read_grad_fn"),
    "test_hand_gradients": ("req.graph.by_hand", "diag.graph.hand_none", "diag.graph.order", "diag.graph.one_path", "diag.graph.local_swap",
                            "diag.graph.sign_some", "diag.sign"),
    "test_autograd_gradients": ("req.graph.use_autograd", "diag.graph.order", "diag.graph.returned_inputs",
                                "diag.graph.sum_not_mean", "diag.graph.mean_axis", "diag.multiple_calls",
                                "diag.multiple", "diag.factor", "diag.too_small"),
}


MISTAKES = [
    Mistake("build_graph", "computed from detached copies: nothing recorded", """
def build_graph(x, w):
    a = x.detach() + w.detach()
    b = w.detach() + 1
    return a, b, a * b
""", "diag.graph.not_recorded", ("a: expected requires_grad = True, got False",
                                 msg("diag.graph.not_recorded", what="a"))),
    Mistake("build_graph", "y computed again, not from a and b", """
def build_graph(x, w):
    a = x + w
    b = w + 1
    y = (x + w) * (w + 1)
    return a, b, y
""", "req.graph.y_from_a_b", (msg("req.graph.y_from_a_b", adds=4),), instruction_only(2)),
    Mistake("build_graph", "the right tensors in another order", """
def build_graph(x, w):
    a = x + w
    b = w + 1
    return a * b, a, b
""", "diag.graph.order", (msg("diag.graph.order", expected="(a, b, y)"),)),
    Mistake("build_graph", "a malformed return is the student's failure, not a broken check", """
def build_graph(x, w):
    return x + w, w + 1
""", None, ("build_graph's (a, b, y): expected 3 values, got 2",)),
    Mistake("grad_fn_names", "the names typed in, no graph read", """
def grad_fn_names(x, w):
    return ("AddBackward0", "AddBackward0", "MulBackward0")
""", "req.graph.read_grad_fn", (msg("req.graph.read_grad_fn", nodes=0, reads=0),), instruction_only(2)),
    Mistake("grad_fn_names", "'build the same graph' on detached inputs: 'NoneType' three times", """
def grad_fn_names(x, w):
    x, w = x.detach(), w.detach()
    a = x + w
    b = w + 1
    y = a * b
    return tuple(type(t.grad_fn).__name__ for t in (a, b, y))
""", "diag.graph.none_type", ("the name of a.grad_fn: expected 'AddBackward0', got 'NoneType'",
                              msg("diag.graph.none_type", count=3))),
    Mistake("grad_fn_names", "the printed node instead of its class name", """
def grad_fn_names(x, w):
    a = x + w
    b = w + 1
    y = a * b
    return tuple(str(t.grad_fn) for t in (a, b, y))
""", "diag.graph.repr"),
    Mistake("grad_fn_names", "the names in the wrong order: a plain mismatch", """
def grad_fn_names(x, w):
    a = x + w
    b = w + 1
    y = a * b
    return tuple(type(t.grad_fn).__name__ for t in (y, a, b))
""", None, ("the name of a.grad_fn: expected 'AddBackward0', got 'MulBackward0'",)),
    Mistake("hand_gradients", "'by hand' done by autograd", """
def hand_gradients(x, w):
    x = x.clone().requires_grad_(True)
    w = w.clone().requires_grad_(True)
    ((x + w) * (w + 1)).sum().backward()
    return w.grad, x.grad
""", "req.graph.by_hand", (msg("req.graph.by_hand", count=1),), instruction_only(3)),
    Mistake("hand_gradients", "x.grad and w.grad read where the exercise forbids backward", """
def hand_gradients(x, w):
    return x.grad, w.grad
""", "diag.graph.hand_none", ("dy/dw: expected a gradient, got None",), absent=("requires_grad=True",)),
    Mistake("hand_gradients", "only the path through a", """
def hand_gradients(x, w):
    return x + w, w + 1
""", "diag.graph.one_path", ("dy/dw: values differ",)),
    Mistake("hand_gradients", "a per-element sign mistake (right wherever dy/dw > 0, as with one lucky element)", """
def hand_gradients(x, w):
    return (2 * w + x + 1).abs(), w + 1
""", "diag.graph.sign_some", ("dy/dw: values differ", "those where the expected value is negative")),
    Mistake("hand_gradients", "dy/da taken as a instead of b", """
def hand_gradients(x, w):
    return 2 * w + x + 1, x + w
""", "diag.graph.local_swap", ("dy/dx: values differ",)),
    Mistake("hand_gradients", "every sign flipped: the generic diagnosis", """
def hand_gradients(x, w):
    return -(2 * w + x + 1), w + 1
""", "diag.sign", ("dy/dw: values differ",)),
    Mistake("hand_gradients", "a size-1 axis squeezed away (drawn on every seed)", """
def hand_gradients(x, w):
    return (2 * w + x + 1).squeeze(), (w + 1).squeeze()
""", None, ("dy/dw: expected shape (",)),
    Mistake("hand_gradients", "an element loop that handles a vector only (a matrix is drawn on every seed)", """
def hand_gradients(x, w):
    dw = torch.tensor([2 * w[i] + x[i] + 1 for i in range(len(x))], dtype=x.dtype)
    return dw, torch.tensor([w[i] + 1 for i in range(len(w))], dtype=x.dtype)
""", None, ("hand_gradients raised ValueError: only one element tensors can be converted",)),
    Mistake("autograd_gradients", "a mean over the rows: each row summed, then averaged (equal for a single row)", """
def autograd_gradients(x, w):
    ((x + w) * (w + 1)).sum(dim=1).mean().backward()
    return w.grad, x.grad
""", "diag.graph.mean_axis", ("w.grad: values differ", "is the size of axis 0 of x")),
    Mistake("autograd_gradients", "the two gradients swapped", """
def autograd_gradients(x, w):
    ((x + w) * (w + 1)).sum().backward()
    return x.grad, w.grad
""", "diag.graph.order", (msg("diag.graph.order", expected="(w.grad, x.grad)"),)),
    Mistake("autograd_gradients", "a mean where the loss is a sum", """
def autograd_gradients(x, w):
    ((x + w) * (w + 1)).mean().backward()
    return w.grad, x.grad
""", "diag.graph.sum_not_mean", ("w.grad: values differ",)),
    Mistake("autograd_gradients", "two backward calls, .grad never cleared", """
def autograd_gradients(x, w):
    loss = ((x + w) * (w + 1)).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    return w.grad, x.grad
""", "diag.multiple_calls", (msg("diag.multiple_calls", k=2, calls=2, name="x"),)),
    Mistake("autograd_gradients", "the gradients written out by hand", """
def autograd_gradients(x, w):
    with torch.no_grad():
        return 2 * w + x + 1, w + 1
""", "req.graph.use_autograd", (), instruction_only(3)),
    Mistake("autograd_gradients", "the tensors returned instead of their .grad", """
def autograd_gradients(x, w):
    ((x + w) * (w + 1)).sum().backward()
    return w, x
""", "diag.graph.returned_inputs", (msg("diag.graph.returned_inputs", names="(w, x)", grads="(w.grad, x.grad)"),)),
]

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
    assert_planted(pytester, TOPIC, MISTAKES, CORRECT, SPECIFIC)


def test_every_declared_input_class_is_drawn_on_every_seed(grade_seeds):
    # a vector, a matrix, a matrix with an axis of size 1, both signs: each
    # check draws every class it declares on each of the 20 seeds
    graded = grade_seeds([TOPIC])
    assert len(graded.report["checks"]) == 4 * 20
    for check in graded.report["checks"]:
        assert check["status"] == "passed", check["feedback"]
        assert check["inputs_missing"] == [], (check["id"], check["inputs"], check["inputs_missing"])
        assert {"rank 2", "size-1 axis", "negative", "positive"} <= set(check["inputs"]), check["id"]

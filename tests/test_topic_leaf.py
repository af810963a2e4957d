"""The `leaf` topic: plausible mistakes fail on every seed with the
diagnosis that names them (and no other), predict_leaves may not build
tensors, and correct solutions in other styles pass.

Every planted mistake (mistakes/leaf/<name>.py) and every correct style is
graded under the 20 seeds of ``grade_seeds``, all in one grading session."""

from conftest import assert_planted, instruction_only
from planted_mistakes import Expect, planted

from pytest_autograd_grader.i18n import msg

TOPIC = "leaf"

COPIES = ("diag.leaf.made_copy", "diag.leaf.detached_copy")
# The ids each check may answer with; a planted mistake must get its own and none of the others.
SPECIFIC = {
    "test_tutorial_graph": COPIES
    + (
        "diag.leaf.no_backward",
        "diag.leaf.grad_not_stored",
        "diag.graph.sum_not_mean",
        "diag.leaf.cut_off",
        "diag.leaf.path_cut",
        "diag.nonleaf_grad_kept",
        "diag.multiple_calls",
        "diag.graph.order",
        "diag.none_leaf",
        "diag.none_not_leaf",
    ),
    "test_init_parameter": (
        "diag.leaf.scale_first",
        "diag.none_not_leaf",
        "diag.leaf.no_backward",
        "diag.leaf.grad_not_stored",
        "diag.graph.sum_not_mean",
        "diag.none_leaf",
        "diag.leaf.matmul_loss",
        "diag.leaf.returned_grad",
        "diag.implicit_grad",
    ),
    "test_predict_leaves": (
        "req.leaf.no_tensors",
        "diag.leaf.created_leaf",
        "diag.leaf.op_without_grad",
        "diag.leaf.any_input",
        "diag.leaf.recorded_op",
        "diag.leaf.no_requires_grad",
        "diag.leaf.unreached",
        "diag.leaf.reached",
        "diag.leaf.nonleaf_no_grad",
        "diag.leaf.bools",
    ),
}


# What the test asserts of a planted mistake (mistakes/leaf/<name>.py) beyond its
# file's diagnosis: more feedback text, a partial score, text that must be absent.
EXPECT = {
    "made_copy": Expect(
        texts=("w: expected is_leaf = True, got False", msg("diag.leaf.made_copy", what="w", grad_fn="CloneBackward0"))
    ),
    "detached_copy": Expect(texts=("a: expected is_leaf = False, got True", msg("diag.leaf.detached_copy", what="a"))),
    "tutorial_grad_not_stored": Expect(texts=("w.grad: expected a gradient, got None",)),
    "tutorial_no_backward": Expect(texts=("w.grad: expected a gradient, got None",)),
    "tutorial_mean": Expect(texts=("w.grad: values differ",)),
    "intermediates_retained": Expect(texts=("a: expected has_grad = False, got True",)),
    "backward_twice": Expect(texts=(msg("diag.multiple_calls", k=2, calls=2, name="x"),)),
    "x_data": Expect(texts=("x.grad: expected a gradient, got None", msg("diag.leaf.cut_off", what="x"))),
    "b_under_no_grad": Expect(texts=(msg("diag.leaf.path_cut", what="b"),)),
    "scale_first": Expect(
        texts=("w: expected is_leaf = True, got False", msg("diag.leaf.scale_first", grad_fn="MulBackward0"))
    ),
    "init_mean": Expect(texts=("w.grad: values differ",)),
    "init_no_backward": Expect(texts=("w.grad: expected a gradient, got None",)),
    "init_autograd_grad": Expect(texts=("w.grad: expected a gradient, got None",)),
    "unused_input_grad": Expect(texts=("2 of 4 parts right", "has_grad of t", "(graph: nodes = ["), score=2),
    "only_created_leaves": Expect(texts=("is_leaf of t4 = t", "expected True, got False"), score=2),
    "simulated_with_tensors": Expect(texts=("(first: ones)",), score=instruction_only(4)),
    "ints_not_bools": Expect(texts=("expected True or False (a bool), got a whole number (an int): 1",)),
    "requires_grad_keeps_grad": Expect(texts=("2 of 4 parts right",), score=2),
    "walk_ignores_requires_grad": Expect(texts=("2 of 4 parts right",), score=2),
    "leaf_means_no_grad": Expect(
        texts=("is_leaf of t", "has_grad of t1 (input, requires_grad=True): expected True, got False")
    ),
    "exp_taken_for_leaf": Expect(texts=("is_leaf of t7 = exp(t6)",), score=2),
}


# Correct, in other styles than the reference's.
OTHER_STYLES = {
    "tutorial_graph": """
def tutorial_graph(x, w):
    a = torch.add(w, x)
    b = torch.add(w, 1)
    y = torch.mul(a, b)
    y.backward(torch.ones_like(y))
    return [w, x, a, b, y]
""",
    "init_parameter": """
def init_parameter(data, scale, x):
    w = data * scale
    w.requires_grad = True
    torch.sum(torch.mul(w, x)).backward()
    return w
""",
    # Recursion instead of a stack, numpy arrays instead of lists.
    "predict_leaves": """
def predict_leaves(nodes):
    import numpy as np
    requires = []
    for node in nodes:
        requires.append(node[1] if node[0] == "input" else any(requires[i] for i in node[1:]))
    leaf = np.array([node[0] == "input" or not requires[k] for k, node in enumerate(nodes)])
    grad = np.zeros(len(nodes), dtype=bool)

    def visit(k):
        if requires[k]:
            if leaf[k]:
                grad[k] = True
            for i in nodes[k][1:] if nodes[k][0] != "input" else ():
                visit(i)

    visit(len(nodes) - 1)
    return leaf, grad
""",
}
# A parameter made as torch.nn.Parameter.
PARAMETER = {
    "init_parameter": """
def init_parameter(data, scale, x):
    w = torch.nn.Parameter(data * scale)
    (w * x).sum().backward()
    return w
"""
}

# Correct again: method calls and autograd.backward; a parameter filled in
# place under no_grad, or rebuilt from a Python list, or detached first.
MORE_STYLES = {
    "tutorial_graph": """
def tutorial_graph(x, w):
    a = w.add(x)
    b = w.add(1.0)
    y = a.mul(b)
    torch.autograd.backward([y], [torch.ones_like(y)])
    return (w, x, a, b, y)
""",
    "init_parameter": """
def init_parameter(data, scale, x):
    w = torch.empty_like(data)
    with torch.no_grad():
        w.copy_(data).mul_(scale)
    w.requires_grad_()
    torch.einsum('...,...->', w, x).backward()
    return w
""",
}
FROM_LIST = {
    "init_parameter": """
def init_parameter(data, scale, x):
    w = torch.tensor((data * scale).tolist(), dtype=torch.float64, requires_grad=True)
    (w * x).sum().backward()
    return w
"""
}
DETACHED_FIRST = {
    "init_parameter": """
def init_parameter(data, scale, x):
    w = (data * scale).detach().requires_grad_()
    w.mul(x).sum().backward()
    return w
"""
}

CORRECT = {
    "styles": OTHER_STYLES,
    "parameter": PARAMETER,
    "more": MORE_STYLES,
    "from_list": FROM_LIST,
    "detached_first": DETACHED_FIRST,
}


def test_planted_mistakes_fail_and_other_styles_pass_on_every_seed(pytester):
    assert_planted(pytester, TOPIC, planted(TOPIC, EXPECT), CORRECT, SPECIFIC)

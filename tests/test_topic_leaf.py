"""The `leaf` topic: solutions pass, stubs say "not implemented", and
plausible mistakes get their diagnosis."""

from conftest import solution_with_all

from pytest_autograd_grader.messages import msg


WRONG = {
    # The classic: requires_grad first, then scaled, so w is MulBackward0's output.
    "init_parameter": """
def init_parameter(data, scale, x):
    w = data.requires_grad_(True) * scale
    (w * x).sum().backward()
    return w
""",
    # Keeps the gradients of intermediates that should have been dropped.
    "tutorial_graph": """
def tutorial_graph(x, w):
    a = x + w
    b = w + 1
    y = a * b
    for t in (a, b, y):
        t.retain_grad()
    y.sum().backward()
    return w, x, a, b, y
""",
    # Right about leaves, but believes every tensor that requires grad keeps .grad.
    "predict_leaves": """
def predict_leaves(nodes):
    requires = []
    for node in nodes:
        requires.append(bool(node[1]) if node[0] == "input" else any(requires[i] for i in node[1:]))
    is_leaf = [node[0] == "input" or not requires[k] for k, node in enumerate(nodes)]
    return is_leaf, list(requires)
""",
}


def test_plausible_mistakes_are_diagnosed(grade_topics):
    graded = grade_topics(["leaf"], modules={"leaf": solution_with_all("leaf", WRONG)})
    assert graded.report["score"] == 2.0  # half of predict_leaves' 4 points

    check = graded.check("test_init_parameter")
    assert check["status"] == "failed"
    assert "expected is_leaf = True, got False" in check["feedback"]
    assert msg("diag.none_not_leaf", grad_fn="MulBackward0") in check["feedback"]

    check = graded.check("test_tutorial_graph")
    assert check["status"] == "failed"
    assert "a: expected has_grad = False, got True" in check["feedback"]
    assert msg("diag.nonleaf_grad_kept") in check["feedback"]

    # The last tensor of every graph is a non-leaf that requires grad.
    check = graded.check("test_predict_leaves")
    assert check["status"] == "failed" and check["score"] == check["max_score"] / 2
    assert "2 of 4 parts right" in check["feedback"]
    assert "has_grad of t" in check["feedback"] and msg("diag.nonleaf_grad_kept") in check["feedback"]

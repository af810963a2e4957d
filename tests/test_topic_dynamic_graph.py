"""The `dynamic_graph` topic: solutions pass, stubs say "not implemented",
and plausible mistakes get their diagnosis."""

import ast

from conftest import solution_with

from pytest_autograd_grader.messages import msg


def solution_with_all(topic, replacements):
    """The reference solution with several functions replaced (one grading
    run then tests one mistake per check)."""
    (first, text), *rest = replacements.items()
    source = solution_with(topic, first, text)
    for function, text in rest:
        lines = source.splitlines(keepends=True)
        node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == function)
        source = "".join(lines[:node.lineno - 1]) + text.strip("\n") + "\n" + "".join(lines[node.end_lineno:])
    return source


def test_solution_scores_full_marks(grade_topics):
    graded = grade_topics(["dynamic_graph"])
    assert graded.report["percent"] == 100.0
    assert {c["status"] for c in graded.report["checks"]} == {"passed"}


def test_stub_scores_zero_with_not_implemented(grade_topics):
    graded = grade_topics(["dynamic_graph"], stubs=["dynamic_graph"])
    assert graded.report["score"] == 0
    for check in graded.report["checks"]:
        assert check["status"] == "failed"
        assert "not implemented yet: dynamic_graph." in check["feedback"]


WRONG = {
    # Detaches "so the while condition can read the value": the graph is lost.
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
    # Cuts the graph at every step (truncated backpropagation through time):
    # h0 never reaches backward and w only gets the last step's share.
    "rnn_grad": """
def rnn_grad(xs, w, h0):
    h = h0
    for x_t in xs:
        h = torch.tanh(w * h.detach() + x_t)
    h.sum().backward()
    return w.grad, h0.grad
""",
}


def test_cutting_the_graph_is_diagnosed(grade_topics):
    graded = grade_topics(["dynamic_graph"], modules={"dynamic_graph": solution_with_all("dynamic_graph", WRONG)})
    assert graded.check("test_branch_grad")["status"] == "passed"

    check = graded.check("test_loop_grad")
    assert check["status"] == "failed" and check["score"] == 0
    assert "dynamic_graph.loop_grad raised RuntimeError" in check["feedback"]
    assert msg("diag.requires_grad") in check["feedback"]

    check = graded.check("test_rnn_grad")
    assert check["status"] == "failed"
    assert "h0.grad (T = " in check["feedback"] and "expected a gradient, got None" in check["feedback"]
    assert msg("diag.none_leaf") in check["feedback"]

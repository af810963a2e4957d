"""The `dynamic_graph` topic: solutions pass, stubs say "not implemented",
and plausible mistakes get their diagnosis."""

from conftest import solution_with_all

from pytest_autograd_grader.messages import msg


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

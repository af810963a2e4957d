"""The `vector_backward` topic: solutions pass, stubs say "not implemented",
and plausible mistakes get their diagnosis."""

from conftest import solution_with

from pytest_autograd_grader.messages import msg

ONES = msg("diag.ones")


def test_sum_instead_of_the_given_vector_is_diagnosed(grade_topics):
    wrong = solution_with("vector_backward", "vjp_matmul", """
def vjp_matmul(x, Y, v):
    (x @ Y).sum().backward()
    return x.grad, Y.grad
""")
    graded = grade_topics(["vector_backward"], modules={"vector_backward": wrong})
    check = graded.check("test_vjp_matmul")
    assert check["status"] == "failed"
    assert "vector-Jacobian product with a vector of ones" in check["feedback"]
    assert ONES in check["feedback"]


def test_unweighted_losses_are_diagnosed(grade_topics):
    wrong = solution_with("vector_backward", "weighted_losses", """
def weighted_losses(w, x, weights):
    loss = ((x @ w) ** 2).mean() + torch.exp(w).sum()
    loss.backward()
    return w.grad
""")
    graded = grade_topics(["vector_backward"], modules={"vector_backward": wrong})
    check = graded.check("test_weighted_losses")
    assert check["status"] == "failed"
    assert ONES in check["feedback"]


def test_missing_gradient_argument_is_diagnosed(grade_topics):
    wrong = solution_with("vector_backward", "vjp_matmul", """
def vjp_matmul(x, Y, v):
    (x @ Y).backward()
    return x.grad, Y.grad
""")
    graded = grade_topics(["vector_backward"], modules={"vector_backward": wrong})
    feedback = graded.check("test_vjp_matmul")["feedback"]
    assert "grad can be implicitly created only for" in feedback or ONES in feedback
    if "grad can be implicitly created only for" in feedback:
        assert msg("diag.implicit_grad") in feedback


def test_rows_not_zeroed_are_diagnosed(grade_topics):
    wrong = solution_with("vector_backward", "jacobian_rows", """
def jacobian_rows(x, Y):
    loss = x @ Y
    rows = []
    for j in range(loss.shape[1]):
        e = torch.zeros_like(loss)
        e[0, j] = 1.0
        loss.backward(gradient=e, retain_graph=True)
        rows.append(x.grad.clone())
    return torch.cat(rows)
""")
    graded = grade_topics(["vector_backward"], modules={"vector_backward": wrong})
    check = graded.check("test_jacobian_rows")
    assert check["status"] == "failed"
    # the first case has equal columns, so row 1 is exactly twice row 0
    assert "row 1: values differ from torch.autograd" in check["feedback"]
    assert "the gradient is 2 times too large. .grad adds up over backward calls" in check["feedback"]

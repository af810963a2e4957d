"""The `inplace` topic: solutions pass, stubs say "not implemented", and
plausible mistakes get their diagnosis."""

from conftest import solution_with

from pytest_autograd_grader.messages import msg


def test_reassigned_parameter_and_unrepaired_function_are_diagnosed(grade_topics):
    # a later definition replaces the solution's
    wrong = solution_with("inplace", "sgd", """
def sgd(w, x, y, lr, steps):
    for _ in range(steps):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        w = w - lr * w.grad
    return w
""") + """
def repaired(x):
    e = x.exp()
    e.add_(1)
    return e.log() * x
"""
    graded = grade_topics(["inplace"], modules={"inplace": wrong})
    check = graded.check("test_sgd_step_keeps_leaf")
    assert check["status"] == "failed" and check["score"] == 0
    assert "expected is_leaf = True, got False" in check["feedback"]
    assert msg("diag.none_not_leaf", grad_fn="SubBackward0") in check["feedback"]
    assert graded.check("test_sgd_steps")["status"] == "failed"

    check = graded.check("test_repaired")
    assert check["status"] == "failed"
    assert check["score"] == 1.0  # the forward values are right
    assert "modified by an inplace operation" in check["feedback"]
    assert msg("diag.inplace_saved") in check["feedback"]


def test_update_outside_no_grad_is_diagnosed(grade_topics):
    wrong = solution_with("inplace", "sgd", """
def sgd(w, x, y, lr, steps):
    for _ in range(steps):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        w -= lr * w.grad
        w.grad = None
    return w
""")
    graded = grade_topics(["inplace"], modules={"inplace": wrong})
    for name in ("test_sgd_step_keeps_leaf", "test_sgd_steps"):
        check = graded.check(name)
        assert check["status"] == "failed"
        assert "a leaf Variable that requires grad is being used in an in-place operation" in check["feedback"]
        assert msg("diag.inplace_leaf") in check["feedback"]
    assert graded.check("test_repaired")["status"] == "passed"

"""The `higher_order` topic: solutions pass, stubs say "not implemented", and
plausible mistakes get their diagnosis."""

from conftest import solution_with

from pytest_autograd_grader.messages import msg


def test_missing_create_graph_is_diagnosed(grade_topics):
    # every task done without create_graph=True; later definitions replace the solution's
    wrong = solution_with("higher_order", "first_derivative", """
def first_derivative(coeffs, x):
    (g,) = torch.autograd.grad(_p(coeffs, x).sum(), x)
    return g
""") + """
def derivatives(coeffs, x, n):
    result = []
    current = _p(coeffs, x)
    for _ in range(n):
        (current,) = torch.autograd.grad(current.sum(), x)
        result.append(current)
    return result


def hessian_vector_product(a, x, v):
    (g,) = torch.autograd.grad(torch.logsumexp(a @ x, dim=0), x)
    (hv,) = torch.autograd.grad((g * v).sum(), x)
    return hv
"""
    graded = grade_topics(["higher_order"], modules={"higher_order": wrong})
    assert graded.check("test_first_derivative[")["status"] == "passed"
    check = graded.check("test_first_derivative_is_differentiable")
    assert check["status"] == "failed"
    assert "expected a gradient, got None" in check["feedback"]
    assert msg("diag.no_create_graph") in check["feedback"]
    for name in ("test_derivatives", "test_hessian_vector_product"):
        check = graded.check(name)
        assert check["status"] == "failed"
        assert "does not require grad" in check["feedback"]
        assert msg("diag.no_create_graph") in check["feedback"]
        assert msg("diag.requires_grad") not in check["feedback"]


def test_detached_first_gradient_gives_zero_second_derivative(grade_topics):
    # "fixing" the error by making the first gradient a new leaf and asking
    # for zeros where x is unused
    wrong = solution_with("higher_order", "hessian_vector_product", """
def hessian_vector_product(a, x, v):
    (g,) = torch.autograd.grad(torch.logsumexp(a @ x, dim=0), x)
    g.requires_grad_(True)
    (hv,) = torch.autograd.grad((g * v).sum(), x, allow_unused=True, materialize_grads=True)
    return hv
""")
    graded = grade_topics(["higher_order"], modules={"higher_order": wrong})
    check = graded.check("test_hessian_vector_product")
    assert check["status"] == "failed"
    assert msg("diag.second_zero") in check["feedback"]

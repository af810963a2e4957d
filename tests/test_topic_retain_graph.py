"""The `retain_graph` topic: solutions pass, stubs say "not implemented", and
plausible mistakes get their diagnosis."""

from conftest import solution_with

from pytest_autograd_grader.messages import msg

BACKWARD_TWICE = msg("diag.backward_twice")


def test_missing_retain_graph_is_diagnosed(grade_topics):
    wrong = """
import torch


def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    for _ in range(k):
        loss.backward()
    return x.grad


def caught_error(x):
    loss = (x ** 3).sum()
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as error:
        return error, x.grad


def two_losses(x, w):
    h = torch.tanh(x * w)
    h.sum().backward()
    first = w.grad.clone()
    (h ** 2).mean().backward()
    return first, w.grad
"""
    graded = grade_topics(["retain_graph"], modules={"retain_graph": wrong})
    for name in ("test_backward_k_times", "test_two_losses"):
        check = graded.check(name)
        assert check["status"] == "failed"
        assert "backward through the graph a second time" in check["feedback"]
        assert BACKWARD_TWICE in check["feedback"]
    assert graded.check("test_caught_error")["status"] == "passed"


def test_zeroing_between_backward_calls_is_diagnosed(grade_topics):
    wrong = solution_with("retain_graph", "backward_k_times", """
def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    for _ in range(k):
        x.grad = None
        loss.backward(retain_graph=True)
    return x.grad
""")
    graded = grade_topics(["retain_graph"], modules={"retain_graph": wrong})
    feedback = graded.check("test_backward_k_times")["feedback"]
    assert "of the expected one. Accumulation was asked for" in feedback


def test_no_error_raised_is_reported(grade_topics):
    wrong = solution_with("retain_graph", "caught_error", """
def caught_error(x):
    loss = (x ** 3).sum()
    loss.backward(retain_graph=True)
    try:
        loss.backward()
    except RuntimeError as error:
        return error, x.grad
    return None, x.grad
""")
    graded = grade_topics(["retain_graph"], modules={"retain_graph": wrong})
    check = graded.check("test_caught_error")
    assert check["status"] == "failed"
    assert "expected the caught error 'backward through the graph a second time', got None" in check["feedback"]
    # the second backward went through, so x.grad holds two gradients
    assert "2 times too large" in check["feedback"]
    assert graded.report["score"] == 6


def test_returned_grad_without_clone_is_caught(grade_topics):
    wrong = solution_with("retain_graph", "two_losses", """
def two_losses(x, w):
    h = torch.tanh(x * w)
    h.sum().backward(retain_graph=True)
    first = w.grad
    (h ** 2).mean().backward()
    return first, w.grad
""")
    graded = grade_topics(["retain_graph"], modules={"retain_graph": wrong})
    check = graded.check("test_two_losses")
    assert check["status"] == "failed"
    assert "w.grad after L1.backward(): values differ from torch.autograd" in check["feedback"]

"""The `graph` topic: solutions pass, stubs say "not implemented", and
plausible mistakes get their diagnosis."""

from conftest import solution_with


def test_flipped_sign_is_diagnosed(grade_topics):
    wrong = solution_with("graph", "hand_gradients", """
def hand_gradients(x, w):
    return -(2 * w + x + 1), w + 1
""")
    graded = grade_topics(["graph"], modules={"graph": wrong})
    check = graded.check("test_hand_gradients")
    assert check["status"] == "failed"
    assert "dy/dw" in check["feedback"] and "sign is flipped" in check["feedback"]


def test_repeated_backward_without_zeroing_is_diagnosed(grade_topics):
    wrong = solution_with("graph", "autograd_gradients", """
def autograd_gradients(x, w):
    for _ in range(2):
        ((x + w) * (w + 1)).sum().backward()
    return w.grad, x.grad
""")
    graded = grade_topics(["graph"], modules={"graph": wrong})
    assert "2 times too large" in graded.check("test_autograd_gradients")["feedback"]


def test_malformed_return_is_the_students_failure_not_a_broken_check(grade_topics):
    wrong = solution_with("graph", "build_graph", """
def build_graph(x, w):
    return x + w, w + 1
""")
    check = grade_topics(["graph"], modules={"graph": wrong}).check("test_build_graph")
    assert check["status"] == "failed"
    assert "build_graph's (a, b, y): expected 3 values, got 2" in check["feedback"]

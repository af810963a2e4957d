"""The `no_grad` topic: solutions pass, stubs say "not implemented", and
plausible mistakes get their diagnosis."""

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
    graded = grade_topics(["no_grad"])
    assert graded.report["percent"] == 100.0
    assert {c["status"] for c in graded.report["checks"]} == {"passed"}


def test_stub_scores_zero_with_not_implemented(grade_topics):
    graded = grade_topics(["no_grad"], stubs=["no_grad"])
    assert graded.report["score"] == 0
    for check in graded.report["checks"]:
        assert check["status"] == "failed"
        assert "not implemented yet: no_grad." in check["feedback"]


WRONG = {
    # The whole forward pass under no_grad, loss included: nothing to backward.
    "frozen_features": """
def frozen_features(x, W1, W2):
    with torch.no_grad():
        h = torch.tanh(x @ W1)
        out = h @ W2
        loss = (out ** 2).mean()
    loss.backward()
    return h, W1.grad, W2.grad
""",
    # The target is not cut off, so gradient also flows through x_next @ w.
    "td_grad": """
def td_grad(w, x, x_next, r, gamma):
    q = x @ w
    target = r + gamma * (x_next @ w)
    loss = ((q - target) ** 2).mean()
    loss.backward()
    return target, w.grad
""",
}


def test_plausible_mistakes_are_diagnosed(grade_topics):
    graded = grade_topics(["no_grad"], modules={"no_grad": solution_with_all("no_grad", WRONG)})
    assert graded.check("test_predict_requires_grad")["status"] == "passed"

    check = graded.check("test_frozen_features")
    assert check["status"] == "failed" and check["score"] == 0
    assert "no_grad.frozen_features raised RuntimeError" in check["feedback"]
    assert msg("diag.requires_grad") in check["feedback"]

    check = graded.check("test_td_grad")
    assert check["status"] == "failed" and check["score"] == 0
    assert "target: expected requires_grad = False, got True" in check["feedback"]
    assert "w.grad: values differ from torch.autograd" in check["feedback"]

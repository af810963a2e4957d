"""The `no_grad` topic: solutions pass, stubs say "not implemented", and
plausible mistakes get their diagnosis."""

from conftest import solution_with_all

from pytest_autograd_grader.messages import msg


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

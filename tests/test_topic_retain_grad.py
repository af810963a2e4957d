"""The `retain_grad` topic: solutions pass, stubs say "not implemented", and
plausible mistakes get their diagnosis."""

from conftest import solution_with_all

from pytest_autograd_grader.messages import msg


WRONG = {
    # retain_grad() never called: a, b and y lose their gradients.
    "intermediate_grads": """
def intermediate_grads(x, w, v):
    a = x + w
    b = w + 1
    y = a * b
    (v * y).sum().backward()
    return a, b, y
""",
    # Only the hidden layer is retained, the output is forgotten.
    "hidden_grads": """
def hidden_grads(x, W1, W2):
    h = torch.tanh(x @ W1)
    h.retain_grad()
    out = h @ W2
    (out ** 2).mean().backward()
    return h, out
""",
    # retain_grad() called after backward: too late.
    "chain_grads": """
def chain_grads(x, c):
    zs = [x]
    for k in range(c.shape[0]):
        zs.append(torch.tanh(c[k] * zs[-1]))
    zs[-1].sum().backward()
    for z in zs[1:]:
        z.retain_grad()
    return zs[1:]
""",
}


def test_missing_retain_grad_is_diagnosed(grade_topics):
    graded = grade_topics(["retain_grad"], modules={"retain_grad": solution_with_all("retain_grad", WRONG)})
    assert graded.report["score"] == 0
    expected = {"test_intermediate_grads": "a.grad", "test_hidden_grads": "out.grad", "test_chain_grads": "z_1.grad"}
    for name, what in expected.items():
        check = graded.check(name)
        assert check["status"] == "failed", name
        assert f"{what}: expected a gradient, got None" in check["feedback"], name
        assert msg("diag.none_intermediate") in check["feedback"], name

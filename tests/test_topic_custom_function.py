"""The `custom_function` topic: solutions pass, stubs say "not implemented",
and plausible mistakes get their diagnosis."""

from conftest import solution_with

from pytest_autograd_grader.messages import msg


def test_wrong_backwards_and_float32_gradcheck_are_diagnosed(grade_topics):
    # Swish.backward without the product rule, Hypot.backward that forgets
    # the 1/2 of d sqrt(u) = du / (2 sqrt(u)), and a float32 gradcheck input;
    # later definitions replace the solution's
    wrong = solution_with("custom_function", "Swish", """
class Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output * s * (1 - s)
""") + """
class Hypot(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        r = torch.sqrt(x ** 2 + y ** 2)
        ctx.save_for_backward(x, y, r)
        return r

    @staticmethod
    def backward(ctx, grad_output):
        x, y, r = ctx.saved_tensors
        return grad_output * 2 * x / r, grad_output * 2 * y / r


def gradcheck_input(x):
    return x.detach().clone().requires_grad_(True)
"""
    graded = grade_topics(["custom_function"], "--grade-seed", "3", modules={"custom_function": wrong})
    assert graded.check("test_swish_forward")["status"] == "passed"
    check = graded.check("test_swish_backward")
    assert check["status"] == "failed" and "values differ from torch.autograd" in check["feedback"]
    check = graded.check("test_swish_gradcheck")
    assert check["status"] == "failed"
    assert "gradcheck failed" in check["feedback"] and "Jacobian mismatch" in check["feedback"]
    assert msg("diag.gradcheck_float32") not in check["feedback"]

    check = graded.check("test_hypot")
    assert check["status"] == "failed"
    assert check["score"] == 0.5  # the forward part only
    assert msg("diag.multiple", k=2) in check["feedback"]
    assert "gradcheck failed" in check["feedback"]

    check = graded.check("test_gradcheck_input")
    assert check["status"] == "failed"
    assert "gradcheck failed" in check["feedback"]
    assert msg("diag.gradcheck_float32") in check["feedback"]

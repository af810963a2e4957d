"""autograd.gradcheck tells a failure as which input, which Jacobian entry,
finite differences against the student's backward, and the likely mistake;
never as gradcheck's raw numerical/analytical matrices.

One grading session runs every case below (one check each) on fixed
inputs, so the expected numbers can be written down."""

from __future__ import annotations

import pytest
from conftest import grade_checks

from pytest_autograd_grader.i18n import msg

FUNCTIONS = '''
import torch


def square(backward_of):
    """x**2 with the backward ``backward_of(grad_output, x)``."""

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return backward_of(grad_output, x)

    return Square


Right = square(lambda g, x: g * 2 * x)
IgnoresGradOutput = square(lambda g, x: 2 * x)
SumsGradOutput = square(lambda g, x: g.sum() * 2 * x)
Doubled = square(lambda g, x: g * 4 * x)
Halved = square(lambda g, x: g * x)
Negated = square(lambda g, x: -g * 2 * x)
NoGradient = square(lambda g, x: None)
Noisy = square(lambda g, x: g * 2 * x + 1e-9 * torch.rand_like(x))


class Mul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return grad_output * x, grad_output * y   # swapped


class CumSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.cumsum(0)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output   # the Jacobian is triangular, not the identity
'''

CHECKS = '''
import pytest
import torch

pytestmark = pytest.mark.grade(concept="custom_function")

X = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64)
Y = torch.tensor([0.5, 4.0, -1.5], dtype=torch.float64)


@pytest.mark.parametrize("name", ["Right", "IgnoresGradOutput", "SumsGradOutput", "Doubled", "Halved", "Negated",
                                  "NoGradient", "Noisy", "CumSum"])
def test_one_input(submission, autograd, name):
    autograd.gradcheck(getattr(submission("functions"), name).apply, (X,), names=("x",))


def test_float32(submission, autograd):
    autograd.gradcheck(submission("functions").Right.apply, (X.float(),), names=("x",))


def test_two_inputs_unnamed(submission, autograd):
    autograd.gradcheck(submission("functions").Mul.apply, (X, Y))
'''

RAW = ("numerical:", "analytical:", "Numerical", "Analytical", "tensor(")

_feedback: dict = {}


@pytest.fixture
def feedback(pytester):
    """Each case's status and feedback, graded once for the module."""
    if not _feedback:
        graded = grade_checks(pytester, CHECKS, "--tb=no", "-q", "-rN", functions=FUNCTIONS)
        for check in graded.report["checks"]:
            name = check["id"].split("::")[1]
            _feedback[name.removeprefix("test_one_input[").rstrip("]")] = (check["status"], check["feedback"])
    return _feedback


def failure(feedback, case: str) -> str:
    status, text = feedback[case]
    assert status == "failed", (case, text)
    assert "gradcheck failed" in text
    for raw in RAW:
        assert raw not in text, (raw, text)
    return text


def count(bad: int, total: int, input: str = "x") -> str:
    return msg("gradcheck.count", input=input, bad=bad, total=total, atol=1e-5, rtol=1e-3)


def worst(output: str, input: str, expected, got) -> str:
    return msg("gradcheck.worst", output=output, input=input, expected=expected, got=got)


def test_a_right_backward_passes(feedback):
    assert feedback["Right"] == ("passed", "")


def test_a_constant_factor_names_the_entry_and_the_factor(feedback):
    text = failure(feedback, "Doubled")
    # d(x**2)/dx = 2x = [2, -4, 6]; the backward gives 4x: the worst entry is the last one
    assert count(3, 9) in text
    assert worst("[2]", "x[2]", 6.0, 12.0) in text
    assert msg("diag.factor", k=2) in text
    text = failure(feedback, "Halved")
    assert worst("[2]", "x[2]", 6.0, 3.0) in text
    assert msg("diag.gradcheck_fraction", k=2) in text
    text = failure(feedback, "Negated")
    assert worst("[2]", "x[2]", 6.0, -6.0) in text
    assert msg("diag.sign") in text and msg("diag.factor", k=2) not in text


def test_a_backward_that_ignores_grad_output(feedback):
    text = failure(feedback, "IgnoresGradOutput")
    # every row of its Jacobian is 2x: off the diagonal, 6 entries that should be 0
    assert count(6, 9) in text
    assert worst("[0]", "x[2]", 0.0, 6.0) in text
    assert msg("diag.gradcheck_grad_output") in text
    assert msg("diag.gradcheck_mixes") not in text


def test_a_backward_that_mixes_elements(feedback):
    text = failure(feedback, "SumsGradOutput")
    assert msg("diag.gradcheck_mixes") in text
    assert msg("diag.gradcheck_grad_output") not in text
    # a function whose Jacobian is not diagonal is not called elementwise
    text = failure(feedback, "CumSum")
    assert count(3, 9) in text
    # three entries off by 1 (rounding picks which): below the diagonal
    assert any(worst(output, input, 1.0, 0.0) in text for output, input in [("[1]", "x[0]"), ("[2]", "x[0]"),
                                                                             ("[2]", "x[1]")]), text
    assert msg("diag.gradcheck_mixes") not in text and msg("diag.gradcheck_grad_output") not in text
    assert "Likely mistake" not in text


def test_no_gradient_for_an_input(feedback):
    text = failure(feedback, "NoGradient")
    assert worst("[2]", "x[2]", 6.0, 0.0) in text
    assert msg("diag.gradcheck_zero", input="x") in text


def test_gradients_in_swapped_order_with_default_names(feedback):
    text = failure(feedback, "test_two_inputs_unnamed")
    # d(xy)/dx = y, d(xy)/dy = x: each input's gradient is the other's
    assert count(3, 9, "input 1") in text and count(3, 9, "input 2") in text
    assert msg("diag.gradcheck_swapped", got="input 1", belongs="input 2", order="input 1, input 2") in text


def test_float32_inputs_are_named_as_the_cause(feedback):
    text = failure(feedback, "test_float32")
    assert "worst entry: d output[" in text
    assert msg("diag.gradcheck_float32") in text


def test_a_failure_the_jacobians_do_not_show_keeps_gradchecks_first_line(feedback):
    # a backward that is not deterministic: the Jacobians agree, gradcheck
    # still fails, and only its first sentence is shown
    status, text = feedback["Noisy"]
    assert status == "failed"
    assert msg("gradcheck.other", what="functions.Noisy.apply", detail="  Backward is not reentrant") in text
    assert "does not agree" not in text and "worst entry" not in text
    for raw in RAW:
        assert raw not in text

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

CHECKS = """
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
"""

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
    assert any(
        worst(output, input, 1.0, 0.0) in text for output, input in [("[1]", "x[0]"), ("[2]", "x[0]"), ("[2]", "x[1]")]
    ), text
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


# -- the calls gradcheck is about to make, asked in one request -------------

AHEAD = (
    FUNCTIONS
    + '''

calls = []


class Picky(torch.autograd.Function):
    """Fails on the inputs gradcheck's finite differences move."""

    @staticmethod
    def forward(ctx, x):
        if not bool((x == torch.tensor([1.0, -2.0, 3.0], dtype=x.dtype)).all()):
            raise ValueError("only the inputs as given, please")
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class Counted(torch.autograd.Function):
    """Right, counting its own forward and backward calls."""

    @staticmethod
    def forward(ctx, x):
        calls.append("forward")
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        calls.append("backward")
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x


def count_calls():
    return calls.count("forward"), calls.count("backward")
'''
)


def _gradcheck(tmp_path, function: str, ahead: bool, monkeypatch) -> tuple[str, int, tuple]:
    """gradcheck of ``functions.<function>.apply`` on X, through the proxy
    and the inline executor: its feedback ("" when it passes), the requests
    it made, and the student's own count of its calls (Counted)."""
    from pytest_autograd_grader.boundary.submission import Budget, InlineExecutor, StudentFunction, Submission
    from pytest_autograd_grader.checking.autograd import Autograd
    from pytest_autograd_grader.outcomes import GradeFailure

    folder = tmp_path / ("ahead" if ahead else "alone")
    folder.mkdir(exist_ok=True)
    (folder / "functions.py").write_text(AHEAD)
    if not ahead:
        monkeypatch.setattr(StudentFunction, "answers_ahead", lambda self, calls, vjp=False: None)
    executor = InlineExecutor()
    requests = []
    run = executor.run
    monkeypatch.setattr(executor, "run", lambda *args, **kwargs: requests.append(args[3]) or run(*args, **kwargs))
    module = Submission(executor, folder, "functions", Budget(20.0))
    try:
        Autograd(device="cpu").gradcheck(getattr(module, function).apply, (X_VALUES,), names=("x",))
        text = ""
    except GradeFailure as failure:
        text = failure.feedback
    counted = module.count_calls() if function == "Counted" else ()
    monkeypatch.undo()
    return text, len(requests), counted


X_VALUES = __import__("torch").tensor([1.0, -2.0, 3.0], dtype=__import__("torch").float64)


def test_gradcheck_asks_its_finite_differences_and_jacobian_rows_in_one_request_each(tmp_path, monkeypatch):
    text, requests, counted = _gradcheck(tmp_path, "Counted", True, monkeypatch)
    one_by_one, requests_one_by_one, counted_one_by_one = _gradcheck(tmp_path, "Counted", False, monkeypatch)
    assert text == one_by_one == ""
    # 7 forwards (x, and each of 3 elements moved down and up) and 6 Jacobian
    # rows (3, twice) become 2 requests; gradcheck's 2 other backward calls stay
    assert requests_one_by_one >= 15 and requests <= 5, (requests, requests_one_by_one)
    # the student's code runs as often either way (only the count call differs)
    assert counted[0] == counted_one_by_one[0] and counted[1] == counted_one_by_one[1]


@pytest.mark.parametrize("function", ["Doubled", "IgnoresGradOutput", "Noisy", "Picky"])
def test_feedback_is_the_same_as_when_each_call_is_asked_alone(tmp_path, monkeypatch, function):
    text, _, _ = _gradcheck(tmp_path, function, True, monkeypatch)
    one_by_one, _, _ = _gradcheck(tmp_path, function, False, monkeypatch)
    assert text and text == one_by_one
    assert "call_each" not in text and "vjp_each" not in text
    if function == "Picky":
        # the failure asked ahead is told as the student's own call raising it
        assert "only the inputs as given, please" in text and "Picky" in text


def test_a_hang_on_a_moved_input_is_a_timeout_of_the_students_function(pytester):
    # asked ahead, the hang spends the check's time; gradcheck's own next
    # call then finds none left, and the timeout is told as it always was
    slow = """
import time
import torch


class Slow(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        if float(x[0]) != 1.0:
            time.sleep(60)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output
"""
    checks = """
import pytest
import torch

pytestmark = pytest.mark.grade(concept="custom_function")


def test_slow(submission, autograd):
    autograd.gradcheck(submission("functions").Slow.apply, (torch.tensor([1.0, 2.0], dtype=torch.float64),))
"""
    graded = grade_checks(pytester, checks, "--grade-timeout=1", functions=slow)
    (check,) = graded.report["checks"]
    assert check["status"] == "timeout", check
    assert "functions.Slow.apply" in check["feedback"] and "call_each" not in check["feedback"]

"""``autograd.expect_error`` accepts an error only when PyTorch raised it.

Who raised an exception (``ErrorRecord.raised_by``) is read from where it was
raised, never from the source text: every way a student could write
PyTorch's words themselves is refused, and every genuine PyTorch error is
still accepted, raised or returned.

raised_by is computed inside the student's own process, so a student who
rewrites the grader's (or torch's) modules there can still forge it; these
tests cover made-up errors written in student code.
"""

from __future__ import annotations

import pytest
from conftest import grade_checks
from test_diagnose import RAISE

from pytest_autograd_grader.boundary.encode import error_fields, raised_by
from pytest_autograd_grader.checking.diagnose import AUTOGRAD_ERRORS

QUIET = ("-p", "no:warnings")

FORGE = """
    import torch

    import forge_helper

    TEXT = "Trying to backward through the graph a second time (or directly access saved tensors)"

    def raise_paren():
        raise(RuntimeError(TEXT))

    def exec_string():
        exec("raise RuntimeError(TEXT)")

    def eval_compiled():
        eval(compile("(_ for _ in ()).throw(RuntimeError(TEXT))", "<made up>", "eval"))

    def other_module():
        forge_helper.fail(TEXT)

    def torch_check():
        torch._check(False, lambda: TEXT)

    def torch_check_with():
        torch._check_with(RuntimeError, False, lambda: TEXT)

    def generator_throw():
        def steps():
            yield 1
        it = steps()
        next(it)
        it.throw(RuntimeError(TEXT))

    def unstarted_generator_throw():
        (x for x in ()).throw(RuntimeError(TEXT))

    def nested_function():
        def inner():
            raise RuntimeError(TEXT)
        inner()

    def in_a_lambda():
        (lambda: exec("raise RuntimeError(TEXT)"))()

    def torch_file_name():
        # compile() lets code claim any file name, torch's included
        exec(compile("raise RuntimeError(TEXT)", torch.__file__, "exec"), {"__name__": "torch", "TEXT": TEXT})

    def int_echo():
        int(TEXT)  # C code that repeats the text: ValueError: invalid literal ... 'TEXT'

    def device_echo():
        torch.device(TEXT)  # RuntimeError: Invalid device string: 'TEXT'

    def assert_close_message():
        torch.testing.assert_close(torch.ones(1), torch.zeros(1), msg=TEXT)

    def in_a_hook():
        x = torch.ones(2, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: forge_helper.fail(TEXT))
        y.sum().backward()

    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise RuntimeError(TEXT)

    def custom_backward():
        Twice.apply(torch.ones(2, requires_grad=True)).sum().backward()

    def catch(name):
        if name == "unraised":
            return RuntimeError(TEXT)  # made, never raised
        try:
            globals()[name]()
        except Exception as exc:
            return exc
        return "no error"
"""

HELPER = """
    def fail(text):
        raise RuntimeError(text)
"""

FORGERIES = ["raise_paren", "exec_string", "eval_compiled", "other_module", "torch_check", "torch_check_with",
             "generator_throw", "unstarted_generator_throw", "nested_function", "in_a_lambda", "torch_file_name",
             "int_echo", "device_echo", "assert_close_message", "in_a_hook", "custom_backward"]

# PyTorch's own errors, produced for real (shared with test_diagnose), plus
# ways a student legitimately passes one on, and one raised by C code at an
# attribute store rather than a call.
GENUINE = RAISE + """
    def attribute_store():
        y = _x() * 2
        y.requires_grad = False

    def reraised():
        try:
            backward_twice()
        except RuntimeError as exc:
            raise exc  # the student passes PyTorch's own error on

    def in_a_generator():
        def steps():
            backward_twice()
            yield
        next(steps())
"""


def test_made_up_errors_are_refused_and_real_ones_accepted(pytester):
    names = list(AUTOGRAD_ERRORS)
    checks = f"""
        import pytest

        pytestmark = pytest.mark.grade(concept="retain_graph", points=1)

        @pytest.mark.parametrize("name", {FORGERIES!r})
        def test_forged_raised(submission, autograd, name):
            autograd.expect_error("backward_twice", getattr(submission("forge"), name))

        @pytest.mark.parametrize("name", {FORGERIES + ["unraised"]!r})
        def test_forged_returned(submission, autograd, name):
            autograd.expect_error("backward_twice", submission("forge").catch(name), what="the caught error")

        @pytest.mark.parametrize("name", {names!r})
        def test_genuine_raised(submission, autograd, name):
            record = autograd.expect_error(name, getattr(submission("genuine"), name))
            assert record.raised_by == "library" and record.type == "RuntimeError"

        @pytest.mark.parametrize("name", {names!r})
        def test_genuine_returned(submission, autograd, name):
            autograd.expect_error(name, submission("genuine").catch(name), what="the caught error")

        @pytest.mark.parametrize("name", ["reraised", "in_a_generator"])
        def test_genuine_passed_on(submission, autograd, name):
            autograd.expect_error("backward_twice", getattr(submission("genuine"), name))

        def test_genuine_attribute_store(submission, autograd):
            autograd.expect_error("nonleaf_requires_grad", submission("genuine").attribute_store)
    """
    graded = grade_checks(pytester, checks, *QUIET, forge=FORGE, forge_helper=HELPER, genuine=GENUINE)
    assert not [c for c in graded.report["checks"] if c["status"] == "error"], graded.text
    forged = [c for c in graded.report["checks"] if "forged" in c["id"]]
    assert len(forged) == 2 * len(FORGERIES) + 1
    for check in forged:
        assert "not by PyTorch; make the mistake really happen" in check["feedback"], check
        # PyTorch's words inside the student's own text are the grader's to
        # read: no points. Who raised an error with PyTorch's very words is
        # the student process's claim: it costs the instruction's share.
        quoted = "made from your own text" in check["feedback"]
        assert check["status"] == "failed" and check["score"] == (0 if quoted else 0.75), check
        if quoted:
            assert check["instruction"] is None, check  # never looked at: no share taken on
        else:
            assert check["instruction"] == {"share": 0.25, "score": 0.0, "max_score": 0.25, "followed": False}
    how = {"raise_paren": "RuntimeError was raised by your own code", "exec_string": "raised by your own code",
           "torch_check": "RuntimeError was raised by your own code", "generator_throw": "raised by your own code",
           "int_echo": "this ValueError was made from your own text",
           "device_echo": "this RuntimeError was made from your own text",
           "assert_close_message": "this AssertionError was made from your own text"}
    for name, text in how.items():
        assert text in graded.check(f"test_forged_raised[{name}]")["feedback"], name
    assert "this RuntimeError was never raised" in graded.check("test_forged_returned[unraised]")["feedback"]
    genuine = [c for c in graded.report["checks"] if "genuine" in c["id"]]
    assert len(genuine) == 2 * len(names) + 3
    for check in genuine:
        assert check["status"] == "passed", check


# -- the rule itself, in this process ----------------------------------------

def _raised(fn) -> BaseException:
    try:
        fn()
    except BaseException as exc:
        return exc
    raise AssertionError("no exception")


def test_raised_by_reads_the_raising_instruction_not_the_source():
    import torch

    text = "Trying to backward through the graph a second time"

    def backward_twice():
        y = torch.ones(2, requires_grad=True).exp().sum()
        y.backward()
        y.backward()

    def thrown():
        def steps():
            yield
        it = steps()
        next(it)
        it.throw(RuntimeError(text))

    assert raised_by(_raised(backward_twice)) == "library"
    assert raised_by(_raised(lambda: torch.ones(2) @ torch.ones(3))) == "library"
    assert raised_by(_raised(lambda: exec("raise(RuntimeError('Trying to backward through the graph'))"))) == "student"
    assert raised_by(_raised(lambda: torch._check(False, lambda: text))) == "student"
    assert raised_by(_raised(thrown)) == "student"
    assert raised_by(RuntimeError(text)) == "nobody"
    # torch's own Python code raising is torch's: grad of a non-scalar
    implicit = _raised(lambda: (torch.ones(2, requires_grad=True) * 2).backward())
    assert raised_by(implicit) == "library"
    assert error_fields(implicit)["raised_by"] == "library"


ECHOED = "invalid literal for int() with base 10: 'Trying to backward through the graph a second time'"


@pytest.mark.parametrize("field, value", [("type", "ValueError"), ("message", ECHOED)])
def test_expect_error_wants_pytorchs_own_wording(field, value):
    from pytest_autograd_grader.boundary.records import ErrorRecord
    from pytest_autograd_grader.checking.autograd import Autograd
    from pytest_autograd_grader.outcomes import GradeFailure

    genuine = dict(type="RuntimeError", message="Trying to backward through the graph a second time (or ...)",
                   raised_by="library")
    assert Autograd().expect_error("backward_twice", ErrorRecord(**genuine)).raised_by == "library"
    with pytest.raises(GradeFailure, match="made from your own text, not by PyTorch"):
        Autograd().expect_error("backward_twice", ErrorRecord(**{**genuine, field: value}))

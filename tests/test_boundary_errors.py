"""``autograd.expect_error`` accepts an error only when PyTorch raised it.

Who raised an exception (``ErrorRecord.raised_by``) is read from where it was
raised, never from the source text, and the torch call that raised that very
exception object must be in the call's trace, of a kind that raises the
error given what the trace recorded: every way a student could make
PyTorch's words themselves (in Python, or through C code that raises a
message of the caller's choosing) earns nothing, and every genuine PyTorch
error is still accepted, raised or returned.

All of it is read inside the student's own process, so a student who
rewrites the grader's (or torch's) modules there can still forge it; these
tests cover made-up errors written in student code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from conftest import grade_checks
from test_diagnose import RAISE

from pytest_autograd_grader.boundary.encode import error_fields, raised_by
from pytest_autograd_grader.checking.misconceptions import AUTOGRAD_ERRORS

if TYPE_CHECKING:
    from pytest_autograd_grader.boundary.tracing import Trace

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

    # C code raises a message of the caller's choosing: no Python raise of the student's
    def assert_async():
        torch._assert_async(torch.tensor(False), TEXT)

    def assert_scalar():
        torch.ops.aten._assert_scalar(False, TEXT)

    def ctypes_set_string():
        import ctypes
        ctypes.pythonapi.PyErr_SetString(ctypes.py_object(RuntimeError), TEXT.encode())

    def torch_globals():
        # code compiled with torch's file name, run in torch's own module globals
        exec(compile(f"raise RuntimeError({TEXT!r})", torch.__file__, "exec"), vars(torch))

    def _freed():
        x = torch.ones(2, requires_grad=True)
        loss = (x * 2).sum()
        loss.backward()  # frees the graph: a second backward through it is genuine
        return x, loss

    def hook_in_c_after_free():
        x, loss = _freed()
        y = x * 3
        y.register_hook(lambda g: torch._assert_async(torch.tensor(False), TEXT))
        y.sum().backward()

    class Second(torch.autograd.Function):
        calls = 0

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            Second.calls += 1
            if Second.calls > 1:
                torch._assert_async(torch.tensor(False), TEXT)
            return g * 2

    def custom_backward_in_c_second_time():
        # a graph that saves nothing: the second backward through it runs the custom backward again
        loss = Second.apply(torch.ones(2, requires_grad=True)).sum()
        loss.backward()
        loss.backward()

    def real_then_made_up():
        # a real second backward, then a made-up error in its place
        x, loss = _freed()
        try:
            (x.exp() * 1).sum().backward()
        except RuntimeError:
            pass
        torch._assert_async(torch.tensor(False), TEXT)

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

FORGERIES = [
    "raise_paren",
    "exec_string",
    "eval_compiled",
    "other_module",
    "torch_check",
    "torch_check_with",
    "generator_throw",
    "unstarted_generator_throw",
    "nested_function",
    "in_a_lambda",
    "torch_file_name",
    "int_echo",
    "device_echo",
    "assert_close_message",
    "in_a_hook",
    "custom_backward",
]
# raised by C code (encode.raised_by says "library"): only the trace tells
C_FORGERIES = [
    "assert_async",
    "assert_scalar",
    "ctypes_set_string",
    "torch_globals",
    "hook_in_c_after_free",
    "custom_backward_in_c_second_time",
    "real_then_made_up",
]

# PyTorch's own errors, produced for real (shared with test_diagnose), plus
# ways a student legitimately passes one on, and one raised by C code at an
# attribute store rather than a call.
GENUINE = (
    RAISE
    + """
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

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors  # freed by the first backward: PyTorch raises here
            return 2 * x * g

    def custom_saved_tensors():
        loss = Square.apply(_x()).sum()
        loss.backward()
        loss.backward()

    def grad_then_backward():
        x = _x()
        loss = (x ** 3).sum()
        torch.autograd.grad(loss, x)  # frees the graph as backward does
        torch.autograd.backward([loss])
"""
)


def test_made_up_errors_are_refused_and_real_ones_accepted(pytester):
    names = list(AUTOGRAD_ERRORS)
    checks = f"""
        import pytest

        pytestmark = pytest.mark.grade(concept="retain_graph", points=1)

        @pytest.mark.parametrize("name", {FORGERIES + C_FORGERIES!r})
        def test_forged_raised(submission, autograd, name):
            autograd.expect_error("backward_twice", getattr(submission("forge"), name))

        @pytest.mark.parametrize("name", {FORGERIES + C_FORGERIES + ["unraised"]!r})
        def test_forged_returned(submission, autograd, name):
            # inside a part: a made-up error still costs the whole check
            with autograd.part(2):
                autograd.expect_error("backward_twice", submission("forge").catch(name), what="the caught error")
            with autograd.part(1):
                pass

        @pytest.mark.parametrize("name", {names!r})
        def test_genuine_raised(submission, autograd, name):
            record = autograd.expect_error(name, getattr(submission("genuine"), name))
            assert record.raised_by == "library" and record.type == "RuntimeError"

        @pytest.mark.parametrize("name", {names!r})
        def test_genuine_returned(submission, autograd, name):
            autograd.expect_error(name, submission("genuine").catch(name), what="the caught error")

        @pytest.mark.parametrize("name", ["reraised", "in_a_generator", "custom_saved_tensors", "grad_then_backward"])
        def test_genuine_passed_on(submission, autograd, name):
            autograd.expect_error("backward_twice", getattr(submission("genuine"), name))

        def test_genuine_attribute_store(submission, autograd):
            autograd.expect_error("nonleaf_requires_grad", submission("genuine").attribute_store)
    """
    graded = grade_checks(pytester, checks, *QUIET, forge=FORGE, forge_helper=HELPER, genuine=GENUINE)
    assert not [c for c in graded.report["checks"] if c["status"] == "error"], graded.text
    forged = [c for c in graded.report["checks"] if "forged" in c["id"]]
    assert len(forged) == 2 * len(FORGERIES + C_FORGERIES) + 1
    for check in forged:
        assert "make the mistake really happen and return the exception PyTorch raises" in check["feedback"], check
        # made-up errors earn nothing, not even the other part of the check
        assert check["status"] == "failed" and check["score"] == 0, check
    not_from_call = "did not come from the autograd call the exercise asks for"
    for name in C_FORGERIES:
        for test in ("test_forged_raised", "test_forged_returned"):
            assert not_from_call in graded.check(f"{test}[{name}]")["feedback"], (test, name)
    why = {
        "assert_async": "it came out of _assert_async, which does not raise this error",
        "ctypes_set_string": "no torch call of your code raised this very exception",
        "torch_globals": "no torch call of your code raised this very exception",
        "hook_in_c_after_free": "your own code that backward ran, a hook or a custom Function's backward",
        "custom_backward_in_c_second_time": "your own code that backward ran",
        "real_then_made_up": "it came out of _assert_async",
    }
    for name, text in why.items():
        assert text in graded.check(f"test_forged_raised[{name}]")["feedback"], name
    how = {
        "raise_paren": "RuntimeError was raised by your own code",
        "exec_string": "raised by your own code",
        "torch_check": "RuntimeError was raised by your own code",
        "generator_throw": "raised by your own code",
        "int_echo": "this ValueError was made from your own text",
        "device_echo": "this RuntimeError was made from your own text",
        "assert_close_message": "this AssertionError was made from your own text",
    }
    for name, text in how.items():
        assert text in graded.check(f"test_forged_raised[{name}]")["feedback"], name
    assert "this RuntimeError was never raised" in graded.check("test_forged_returned[unraised]")["feedback"]
    genuine = [c for c in graded.report["checks"] if "genuine" in c["id"]]
    assert len(genuine) == 2 * len(names) + 5
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


def _second_backward(**call) -> Trace:
    """A trace whose only call, a backward, raised a RuntimeError (error 0)."""
    from pytest_autograd_grader.boundary.call_facts import RaisedError
    from pytest_autograd_grader.boundary.tracing import BackwardCall, Trace

    fields = dict(
        kind="backward",
        retain_graph=None,
        create_graph=False,
        outputs=1,
        gradient=False,
        inputs=None,
        raised="RuntimeError",
        through_freed=True,
    )
    return Trace(calls=(BackwardCall(**{**fields, **call}),), errors=(RaisedError("backward", "RuntimeError", 0),))


@pytest.mark.parametrize("field, value", [("type", "ValueError"), ("message", ECHOED)])
def test_expect_error_wants_pytorchs_own_wording(field, value):
    from pytest_autograd_grader.boundary.records import ErrorRecord
    from pytest_autograd_grader.checking.autograd import Autograd
    from pytest_autograd_grader.outcomes import GradeFailure

    genuine = dict(
        type="RuntimeError",
        message="Trying to backward through the graph a second time (or ...)",
        raised_by="library",
        raised_at=0,
        trace=_second_backward(),
    )
    assert Autograd().expect_error("backward_twice", ErrorRecord(**genuine)).raised_by == "library"
    with pytest.raises(GradeFailure, match="made from your own text, not by PyTorch"):
        Autograd().expect_error("backward_twice", ErrorRecord(**{**genuine, field: value}))


TEXTS = {name: texts[0] for name, (texts, _) in AUTOGRAD_ERRORS.items()}


@pytest.mark.parametrize(
    "name, call, why",
    [
        ("backward_twice", {"through_freed": False}, "no earlier backward or torch.autograd.grad call without"),
        ("backward_twice", {"through_freed": None}, "no earlier backward or torch.autograd.grad call without"),
        ("implicit_grad", {"gradient": True, "scalar": False}, "was given a gradient, or every tensor"),
        ("implicit_grad", {"scalar": True}, "was given a gradient, or every tensor"),
        ("shape_mismatch", {"gradient": False}, "was given no gradient argument"),
        ("no_grad_fn", {"no_graph": False}, "every tensor this backward call differentiated requires grad"),
        ("unused_input", {}, "it came out of backward, which does not raise this error"),
        ("inplace_leaf", {}, "it came out of backward, which does not raise this error"),
    ],
)
def test_an_error_the_call_that_raised_it_cannot_raise_earns_nothing(name, call, why):
    """What the trace recorded of the call must fit the error: the kind of
    call, and the state it ran in."""
    from pytest_autograd_grader.boundary.records import ErrorRecord
    from pytest_autograd_grader.checking.autograd import Autograd
    from pytest_autograd_grader.outcomes import GradeFailure

    record = ErrorRecord(type="RuntimeError", message=TEXTS[name], raised_at=0, trace=_second_backward(**call))
    with pytest.raises(GradeFailure, match="did not come from the autograd call") as failure:
        Autograd().expect_error(name, record)
    assert why in failure.value.feedback
    fits = {
        "backward_twice": {},
        "implicit_grad": {"scalar": False},
        "shape_mismatch": {"gradient": True},
        "no_grad_fn": {"no_graph": True},
        "unused_input": {"kind": "grad"},
    }
    if name in fits:
        Autograd().expect_error(
            name,
            ErrorRecord(type="RuntimeError", message=TEXTS[name], raised_at=0, trace=_second_backward(**fits[name])),
        )


def test_an_error_no_traced_call_raised_earns_nothing():
    from pytest_autograd_grader.boundary.records import ErrorRecord
    from pytest_autograd_grader.checking.autograd import Autograd
    from pytest_autograd_grader.outcomes import GradeFailure

    text = TEXTS["backward_twice"]
    for record in (
        ErrorRecord(type="RuntimeError", message=text),  # no trace at all
        ErrorRecord(type="RuntimeError", message=text, raised_at=-1, trace=_second_backward()),
        ErrorRecord(type="RuntimeError", message=text, raised_at=3, trace=_second_backward()),
    ):
        with pytest.raises(GradeFailure, match="no torch call of your code raised this very exception"):
            Autograd().expect_error("backward_twice", record)
    # a record made by hand is judged by the trace passed with it
    record = ErrorRecord(type="RuntimeError", message=text, raised_at=0)
    assert Autograd().expect_error("backward_twice", record, trace=_second_backward()) is record

"""The student's side of the boundary: every way student code can fail turns
into a failed check with feedback a student can act on, and a check only
ever sees plain records, never a live student object."""

from __future__ import annotations

import textwrap

import pytest
import torch
from conftest import grade_checks

from pytest_autograd_grader.boundary.decode import decode
from pytest_autograd_grader.boundary.encode import encode
from pytest_autograd_grader.boundary.records import ObjectRecord, TensorRecord
from pytest_autograd_grader.boundary.wire import dumps, loads

FIND_LEAVES = """
    import pytest
    import torch

    pytestmark = pytest.mark.grade(concept="leaf", points=2)

    @pytest.mark.parametrize("module", MODULES)
    def test_find_leaves(submission, autograd, module):
        x = torch.ones(3, requires_grad=True)
        got = submission(module).find_leaves(x)
        autograd.assert_close(got, x * 2, "find_leaves(x)")

    @pytest.mark.grade(points=1)
    def test_interrupt(submission):
        submission("exits").interrupt()
"""

# module name -> (its source, or None for no file; texts its check's feedback must hold)
FAILURES = {
    "missing": (None, ["not attempted: there is no missing.py in the submission"]),
    "empty": ("# TODO\n", ["not attempted: empty.py is empty; start from the exercise file and write find_leaves"]),
    "syntax": (
        """
        import torch

        def find_leaves(x)
            return x * 2
    """,
        ["syntax.py has a syntax error at line 4", "def find_leaves(x)"],
    ),
    "typo": (
        """
        import torch
        import torchh_typo

        def find_leaves(x):
            return x * 2
    """,
        ["typo.py could not be loaded: ModuleNotFoundError", "torchh_typo", "(at typo.py:3: import torchh_typo)"],
    ),
    "atimport": (
        """
        import torch
        W = torch.ones(2) @ torch.ones(3)

        def find_leaves(x):
            return x * 2
    """,
        ["atimport.py could not be loaded: RuntimeError", "(at atimport.py:3: W = torch.ones(2) @ torch.ones(3))"],
    ),
    "leaf": (
        """
        def find_leaves(x):
            raise NotImplementedError("write me")
    """,
        ["not implemented yet: leaf.find_leaves"],
    ),
    "renamed": (
        """
        def find_leafs(x):
            return x * 2
    """,
        ["renamed.py has no function 'find_leaves'"],
    ),
    "raises": (
        """
        import torch

        def helper(x):
            return x.reshape(7, 7)

        def find_leaves(x):
            y = x * 2
            return helper(y)
    """,
        [
            "raises.find_leaves raised RuntimeError:",
            "shape '[7, 7]' is invalid",
            "(at raises.py:5: return x.reshape(7, 7))",
        ],
    ),
    "prints": (
        """
        def find_leaves(x):
            print("debug: x is", tuple(x.shape))
            raise ValueError("bad")
    """,
        ["prints.find_leaves raised ValueError: bad", "what your code printed:", "debug: x is (3,)"],
    ),
    "exits": (
        """
        import sys

        def find_leaves(x):
            sys.exit(3)

        def interrupt():
            raise KeyboardInterrupt
    """,
        ["exits.find_leaves called sys.exit(3)"],
    ),
    "wrong": (
        """
        def find_leaves(x):
            return x * 2 + 0.5
    """,
        [
            "find_leaves(x): values differ from torch.autograd",
            "expected shape (3,) float32 [2, 2, 2]",
            "produced shape (3,) float32 [2.5, 2.5, 2.5]",
            "largest difference 0.5",
        ],
    ),
}


# module -> the file and line its check's report points at (annotations)
PLACES = {
    "missing": ("missing.py", None),
    "empty": ("empty.py", None),
    "syntax": ("syntax.py", 4),
    "typo": ("typo.py", 3),
    "atimport": ("atimport.py", 3),
    "leaf": ("leaf.py", 3),
    "renamed": ("renamed.py", None),
    "raises": ("raises.py", 5),
    "prints": ("prints.py", 4),
    "exits": ("exits.py", 4),
    "wrong": ("wrong.py", 2),
}


def test_each_student_side_failure_is_a_failed_check(pytester):
    pytester.makepyfile(
        test_other="""
        import pytest
        import torch

        @pytest.mark.grade(concept="graph", points=1)
        def test_still_graded(submission, autograd):
            autograd.assert_close(submission("good").f(torch.ones(2)), torch.ones(2), "f")
    """
    )
    modules = {name: source for name, (source, _) in FAILURES.items() if source is not None}
    checks = f"MODULES = {list(FAILURES) + ['good']!r}\n" + textwrap.dedent(FIND_LEAVES)
    graded = grade_checks(
        pytester,
        checks,
        "test_other.py",
        good="def f(x):\n    return x\n\ndef find_leaves(x):\n    return x * 2\n",
        **modules,
    )
    for name, (_, texts) in FAILURES.items():
        check = graded.check(f"[{name}]")
        assert check["status"] == "failed", (name, check)
        assert check["score"] == 0 and check["max_score"] == 2
        assert check["feedback"].startswith("[Leaf tensors] "), check["feedback"]
        for text in texts:
            assert text in check["feedback"], (name, text, check["feedback"])
        # the student sees their own code, never a traceback into the grader
        assert "Traceback" not in check["feedback"] and "pytest_autograd_grader" not in check["feedback"], check
        # nor the grader's paths: files are named relative to the submission
        assert str(pytester.path) not in check["feedback"] and "/tmp" not in check["feedback"], check
        assert (check["file"], check["line"]) == PLACES[name], (name, check)
    assert "NotImplementedError" not in graded.check("[leaf]")["feedback"]
    assert "Likely mistake" not in graded.check("[wrong]")["feedback"]
    interrupt = graded.check("test_interrupt")
    assert interrupt["status"] == "failed" and "exits.interrupt raised KeyboardInterrupt" in interrupt["feedback"]
    # one student module failing costs only the checks that use it
    assert graded.check("[good]")["status"] == "passed"
    assert graded.check("test_still_graded")["status"] == "passed"
    assert graded.report["score"] == 3 and graded.report["max_score"] == 2 * len(FAILURES) + 2 + 1 + 1
    assert graded.report["complete"] is True
    assert not [c for c in graded.report["checks"] if c["status"] == "error"]
    assert "[Leaf tensors] not implemented yet: leaf.find_leaves" in graded.text


def test_syntax_error_in_an_imported_helper_names_the_helper(tmp_path):
    from pytest_autograd_grader.boundary.submission import InlineExecutor, Submission
    from pytest_autograd_grader.outcomes import StudentFailure

    (tmp_path / "leaf.py").write_text("import helper_mod\n\ndef find_leaves(x):\n    return x\n")
    (tmp_path / "helper_mod.py").write_text("x = 1\ny = = 2\n")
    with pytest.raises(StudentFailure) as failure:
        Submission(InlineExecutor(), tmp_path, "leaf", 10.0).find_leaves(1)
    assert "helper_mod.py has a syntax error at line 2" in failure.value.feedback


# -- what the student returned, and what crosses back ------------------------

RETURNS = """
    import pytest
    import torch
    from pytest_autograd_grader.boundary.records import ObjectRecord, TensorRecord

    pytestmark = pytest.mark.grade(concept="leaf", points=2)

    X = torch.arange(6, dtype=torch.float64).reshape(2, 3)

    @pytest.mark.parametrize("name", ["wrong_type", "wrong_shape", "wrong_dtype", "wrong_device",
                                      "has_nan", "has_inf", "right"])
    def test_double(submission, autograd, name):
        got = getattr(submission("leaf"), name)(X)
        autograd.assert_grad(got, X * 2, "the gradient")

    @pytest.mark.grade(points=1)
    @pytest.mark.parametrize("name,kind", [
        ("a_module", "module"), ("a_function", "function"), ("an_instance", "live.Liar"),
        ("a_generator", "generator"), ("a_class", "type"),
    ])
    def test_object_records(submission, name, kind):
        got = getattr(submission("live"), name)()
        assert type(got) is ObjectRecord, repr(got)
        assert got.type == kind, got
        assert got != 42  # the student's __eq__ is never consulted

    @pytest.mark.grade(points=1)
    def test_tensor_subclass_becomes_plain(submission, autograd):
        got = submission("live").a_subclass()
        assert type(got) is TensorRecord and type(got.data) is torch.Tensor, repr(got)
        assert got.requires_grad is True and got.is_leaf is True
        autograd.assert_close(got, torch.zeros(3), "zeros")

    @pytest.mark.grade(points=1)
    def test_lying_tensor_cannot_pass(submission, autograd):
        autograd.assert_close(submission("live").a_subclass(), torch.ones(3), "ones")

    @pytest.mark.grade(points=1)
    def test_lying_object_cannot_pass(submission, autograd):
        autograd.assert_equal(submission("live").an_instance(), [1.0, 2.0], "values")

    @pytest.mark.grade(points=1)
    def test_function_cannot_pass(submission, autograd):
        autograd.assert_close(submission("live").a_function(), torch.ones(3), "ones")

    def triple(t):
        return t * 3

    @pytest.mark.grade(points=1)
    def test_module_level_function_argument(submission, autograd):
        autograd.assert_close(submission("live").apply(triple, torch.ones(2)), torch.full((2,), 3.0), "apply")

    @pytest.mark.grade(points=1)
    def test_lambda_argument(submission):
        submission("live").apply(lambda t: t * 2, torch.ones(2))

    @pytest.mark.grade(points=1)
    def test_object_argument(submission):
        submission("live").apply(object(), torch.ones(2))
"""

STUDENT_RETURNS = """
    import torch

    def wrong_type(x):
        return (x * 2).tolist()

    def wrong_shape(x):
        return (x * 2).flatten()

    def wrong_dtype(x):
        return (x * 2).float()

    def wrong_device(x):
        return torch.empty(x.shape, dtype=x.dtype, device="meta")

    def has_nan(x):
        y = x * 2
        y[0, 1] = float("nan")
        return y

    def has_inf(x):
        return (x * 2).exp() ** 1000

    def right(x):
        return x * 2
"""

STUDENT_LIVE = """
    import os
    import torch

    class Liar:
        def __eq__(self, other):
            return True
        def __ne__(self, other):
            return False
        def __bool__(self):
            return True

    class Always(torch.Tensor):
        def __eq__(self, other):
            return torch.ones((), dtype=torch.bool)
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs or {})

    def a_module():
        return os

    def a_function():
        return a_module

    def an_instance():
        return Liar()

    def a_generator():
        return (i for i in range(3))

    def a_class():
        return Liar

    def a_subclass():
        return torch.zeros(3).as_subclass(Always).requires_grad_()

    def apply(f, x):
        return f(x)
"""


def test_returns_are_records_and_wrong_ones_fail(pytester):
    graded = grade_checks(pytester, RETURNS, leaf=STUDENT_RETURNS, live=STUDENT_LIVE)
    expected = {
        "[wrong_type]": "the gradient: expected a tensor, got a list",
        "[wrong_shape]": "the gradient: expected shape (2, 3), got shape (6,)",
        "[wrong_dtype]": "the gradient: expected dtype float64, got float32",
        # a meta tensor holds no values: the answer is refused before any comparison
        "[wrong_device]": "the answer of leaf.wrong_device could not be read: it holds a tensor on a device "
        "other than cpu or cuda (a meta tensor, say, which holds no values)",
        "[has_nan]": "the gradient: contains NaN values",
        "[has_inf]": "the gradient: contains infinite values",
        "test_lying_tensor_cannot_pass": "ones: values differ",
        "test_lying_object_cannot_pass": "values: expected a list, got a live.Liar",
        "test_function_cannot_pass": "ones: expected a tensor, got a function (<function a_module>)",
    }
    for name, text in expected.items():
        check = graded.check(name)
        assert check["status"] == "failed", check
        assert text in check["feedback"], check["feedback"]
    assert "produced shape (2, 3) float64 [0, nan, 4" in graded.check("[has_nan]")["feedback"]
    assert "_grade_submission" not in graded.text  # the student's own module names only
    passed = [
        "[right]",
        "[a_module-module]",
        "[a_function-function]",
        "[an_instance-live.Liar]",
        "[a_generator-generator]",
        "[a_class-type]",
        "test_tensor_subclass_becomes_plain",
        "test_module_level_function_argument",
    ]
    for name in passed:
        assert graded.check(name)["status"] == "passed", graded.check(name)
    # a check that tries to hand a live object to student code is the check author's bug
    lam, obj = graded.check("test_lambda_argument"), graded.check("test_object_argument")
    assert lam["status"] == "error" and "passes argument 1 to live.apply" in lam["feedback"]
    assert "test_lambda_argument.<locals>.<lambda> is not a module-level function" in lam["feedback"]
    assert obj["status"] == "error" and "a value of type object cannot cross to the sandbox" in obj["feedback"]
    assert "2 check(s) are broken (status error)" in graded.text
    assert graded.report["score"] == 2 + len(passed) - 1


def test_decode_refuses_forged_records():
    from pytest_autograd_grader.boundary.records import BoundaryError

    class Sub(torch.Tensor):
        pass

    forged = {
        "$": "tensor",
        "data": torch.zeros(2).as_subclass(Sub),
        "grad": None,
        "requires_grad": False,
        "is_leaf": True,
        "grad_fn": None,
        "retains_grad": False,
    }
    with pytest.raises(BoundaryError):
        decode(forged)
    with pytest.raises(BoundaryError):
        decode(
            {
                "$": "tensor",
                "data": torch.zeros(2),
                "grad": None,
                "requires_grad": 1,
                "is_leaf": True,
                "grad_fn": None,
                "retains_grad": False,
            }
        )
    with pytest.raises(BoundaryError):
        loads(b"not a torch file")
    with pytest.raises(BoundaryError):
        decode({"$": "nonsense"})


def test_records_round_trip_through_the_safe_loader():
    x = torch.ones(2, 2, requires_grad=True)
    y = (x * 3).sum()
    y.backward()
    tree = loads(dumps(encode({"x": x, "y": y, "pair": (1, "a", None), "n": [2.5]})))
    value = decode(tree)
    assert isinstance(value["x"], TensorRecord) and torch.equal(value["x"].grad, torch.full((2, 2), 3.0))
    assert value["y"].grad_fn == "SumBackward0" and value["y"].is_leaf is False and value["y"].grad is None
    assert value["pair"] == (1, "a", None) and value["n"] == [2.5]
    assert isinstance(decode(loads(dumps(encode(object())))), ObjectRecord)


# -- hidden checks -----------------------------------------------------------


def test_hidden_check_shows_only_its_concept(pytester):
    checks = """
        import pytest
        import torch

        @pytest.mark.grade(concept="leaf", points=2, hidden=True)
        def test_secret(submission, autograd):
            x = torch.tensor([1.25, 2.5])
            autograd.assert_grad(submission("leaf").f(x), x * 4, "secret gradient")

        @pytest.mark.grade(concept="leaf", points=1, hidden=True)
        def test_secret_raises(submission):
            submission("leaf").g()

        @pytest.mark.grade(concept="leaf", points=1)
        def test_visible(submission, autograd):
            x = torch.tensor([1.25, 2.5])
            autograd.assert_grad(submission("leaf").h(x), x * 4, "visible gradient")
    """
    graded = grade_checks(
        pytester,
        checks,
        leaf="""
        def f(x):
            print("secret_print_42")
            return x * 8

        def h(x):
            return x * 3

        def g():
            raise ValueError("secret_detail_9731")
    """,
    )
    hidden = "A hidden check on 'Leaf tensors' failed."
    secret = graded.checks["test_checks.py::test_secret"]
    assert secret["feedback"] == hidden and secret["status"] == "failed" and secret["hidden"] is True
    assert graded.check("test_secret_raises")["feedback"] == hidden
    assert "visible gradient" in graded.check("test_visible")["feedback"]
    text = graded.text
    assert text.count(hidden) >= 2
    for leak in (
        "secret_print_42",
        "secret gradient",
        "secret_detail_9731",
        "test_secret(",
        "x * 4",
        "[1.25, 2.5]",
        "[10, 20]",
    ):
        assert leak not in text.replace("test_secret_raises", "").replace("test_secret", ""), leak
    # the visible one still shows expected against produced
    assert "expected shape (2,) float32 [5, 10]" in text and "produced shape (2,) float32 [3.75, 7.5]" in text


def test_inline_student_code_runs_with_gradients_on(tmp_path):
    """As in a worker process: the grader calling from a no_grad region (or a
    backward pass) does not turn autograd off for the student's code."""
    from pytest_autograd_grader.boundary.submission import InlineExecutor, Submission

    (tmp_path / "leaf.py").write_text("def double(x):\n    return x * 2\n")
    proxy = Submission(InlineExecutor(), tmp_path, "leaf", 10.0)
    with torch.no_grad():
        record = proxy.double(torch.ones(2, requires_grad=True))
    assert record.grad_fn == "MulBackward0" and record.requires_grad is True


# -- reading answers: limits, doctored outcomes, budget, on_value ---------------


class Scripted:
    """An executor whose worker answers with the bytes it is given."""

    def __init__(self, *answers: bytes):
        self.answers = list(answers)
        self.last_run_seconds = 0.0

    def run(self, directory, module, function, payload, op, timeout) -> bytes:
        return self.answers.pop(0)

    def close(self) -> None:
        pass


def _framed(tree) -> bytes:
    import json
    import struct

    raw = json.dumps({"tree": tree, "tensors": []}).encode()
    return struct.pack("!I", len(raw)) + raw


@pytest.mark.parametrize(
    "answer, reason",
    [
        (_framed(["SECRET"]), "it is not in the grader's format (outcome)"),
        (_framed({"stage": 5}), "it is not in the grader's format (outcome)"),
        (_framed({"stage": "raised"}), "it is not in the grader's format (KeyError)"),
        (
            _framed(
                {
                    "stage": "raised",
                    "error": {"$": "error", "type": ["SECRET"], "message": "SECRET", "file": "", "line": 1, "code": ""},
                }
            ),
            "its field type has type list",
        ),
        (_framed({"stage": "ok"}), "it is not in the grader's format (KeyError)"),
        (_framed({"stage": "ok", "value": {"$": "SECRET"}}), "it holds a record of an unknown kind"),
        (_framed({"stage": "timeout", "seconds": "SECRET"}), "it is not in the grader's format (ValueError)"),
        (_framed({"stage": "too_large", "size": "SECRET", "limit": 1}), "it is not in the grader's format (TypeError)"),
        (_framed({"stage": "syntax", "file": ["SECRET"]}), "it is not in the grader's format (TypeError)"),
        (b"SECRET", "its JSON part is 1397048146 bytes long"),
    ],
)
def test_an_answer_that_cannot_be_read_fails_the_check_without_quoting_it(tmp_path, answer, reason):
    from pytest_autograd_grader.boundary.submission import Submission
    from pytest_autograd_grader.outcomes import StudentFailure

    proxy = Submission(Scripted(answer), tmp_path, "leaf", 10.0)
    with pytest.raises(StudentFailure) as failure:
        proxy.find_leaves()
    assert failure.value.grade_status == "failed"
    assert failure.value.feedback.startswith(f"the answer of leaf.find_leaves could not be read: {reason}")
    assert "SECRET" not in failure.value.feedback


def test_limits_and_on_value_and_budget(tmp_path):
    from pytest_autograd_grader.boundary.records import ErrorRecord, Limits
    from pytest_autograd_grader.boundary.submission import Budget, InlineExecutor, Submission
    from pytest_autograd_grader.outcomes import StudentFailure

    (tmp_path / "leaf.py").write_text(
        "import torch\n\n"
        "def pair(x):\n    return [x * 2, 'two']\n\n"
        "def fails():\n    raise ValueError('no')\n\n"
        "def many():\n    return list(range(50))\n\n"
        "def big():\n    return torch.zeros(300_000)\n\n"
        "def double(x):\n    return x * 2\n"
    )
    seen = []
    budget = Budget(10.0)
    proxy = Submission(
        InlineExecutor(), tmp_path, "leaf", budget, limits=Limits(max_items=45, max_bytes=1 << 20), on_value=seen.append
    )
    x = torch.ones(2, requires_grad=True)
    pair = proxy.pair(x)
    error = proxy.fails.capture()
    out, grads = proxy.double.vjp((x,), (torch.ones(2),))
    assert seen == [pair, error, (out, grads)]
    assert isinstance(error, ErrorRecord) and error.raised_by == "student"
    assert torch.equal(grads[0].data, torch.full((2,), 2.0))
    assert budget.used > 0  # reading the answers counts too
    with pytest.raises(StudentFailure) as failure:
        proxy.many()
    assert failure.value.feedback == (
        "the answer of leaf.many could not be read: it holds at least 46 values; "
        "at most 45 are accepted (return fewer values)"
    )
    with pytest.raises(StudentFailure) as failure:
        proxy.big()
    assert failure.value.feedback == "leaf.big returned 1.1 MB of data; at most 1 MB is accepted: return smaller values"
    assert len(seen) == 3  # refused answers are never handed back


def test_the_sandbox_s_own_refusals_and_the_directory_are_the_graders(tmp_path):
    from pytest_autograd_grader.boundary.submission import Submission
    from pytest_autograd_grader.outcomes import StudentFailure

    proxy = Submission(
        Scripted(
            dumps({"stage": "too_large", "size": 12 << 20, "limit": 8 << 20}),
            _framed({"stage": "missing", "module": "SECRET", "directory": "/SECRET"}),
        ),
        tmp_path,
        "leaf",
        10.0,
    )
    with pytest.raises(StudentFailure) as failure:
        proxy.f()
    assert failure.value.grade_status == "failed"
    assert failure.value.feedback == "leaf.f returned 12.0 MB of data; at most 8 MB is accepted: return smaller values"
    with pytest.raises(StudentFailure) as failure:
        proxy.f()
    assert failure.value.feedback.startswith("not attempted: there is no leaf.py in the submission;")
    assert "SECRET" not in failure.value.feedback


def _drive(module, x):
    """Run in the worker with the student's module, as the engine track's interpreter is."""
    return module.double(x) + 1


def test_run_calls_a_grader_function_with_the_student_module(tmp_path):
    from pytest_autograd_grader.boundary.submission import InlineExecutor, Submission

    (tmp_path / "engine.py").write_text("def double(x):\n    return 2 * x\n")
    proxy = Submission(InlineExecutor(), tmp_path, "engine", 10.0)
    assert proxy.run(_drive, 20) == 41


def test_an_unwritten_part_is_named_by_its_function_never_from_a_file_outside(tmp_path):
    from pytest_autograd_grader.boundary.sources import function_at

    (tmp_path / "engine.py").write_text("class Tensor:\n    def backward(self):\n        raise NotImplementedError\n")
    assert function_at(tmp_path, "engine.py", 3) == "Tensor.backward"
    assert function_at(tmp_path, "engine.py", 1) is None
    outside = tmp_path.parent / "secret_checks.py"
    outside.write_text("def test_hidden():\n    pass\n")
    # the file name comes from the student's process: nothing outside the submission is read
    assert function_at(tmp_path, "../secret_checks.py", 1) is None
    assert function_at(tmp_path, str(outside), 1) is None

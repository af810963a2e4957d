"""Instructions read from the student's own trace ("by hand", "one backward
per pass") weigh only the share of a check's points that its marker
declares: right values keep the rest, the feedback says what the broken
instruction cost, and the report shows that part of the check on its own."""

import json

import pytest
from conftest import grade_checks

from pytest_autograd_grader.i18n import msg

STUDENT = """
import torch


def by_hand(x):
    return 2 * x + 1


def by_backward(x):
    x = x.clone().requires_grad_(True)
    (x * x + x).sum().backward()
    return x.grad


def wrong_by_backward(x):
    x = x.clone().requires_grad_(True)
    (x * x).sum().backward()
    return x.grad


def half_by_backward(x):
    x = x.clone().requires_grad_(True)
    (x * x + x).sum().backward()
    return x.grad, x.grad


def hangs(x):
    while True:
        pass


def stub(x):
    raise NotImplementedError
"""

BAD_SHARES = [0, 0.75, True, "a quarter"]

CHECKS = """
import pytest
import torch

pytestmark = pytest.mark.grade(concept="graph", points=4, instruction_share=0.25)

X = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)


def by_hand(submission, autograd, name):
    got = getattr(submission("work"), name)(X)
    calls = len(submission.trace.calls)
    autograd.instruction(calls == 0, "req.graph.by_hand", count=calls)
    autograd.assert_close(got, 2 * X + 1, "dy/dx")


@pytest.mark.parametrize("name", ["by_hand", "by_backward", "wrong_by_backward", "stub"])
def test_derived(submission, autograd, name):
    by_hand(submission, autograd, name)


def test_parts(submission, autograd):
    got = submission("work").half_by_backward(X)
    calls = len(submission.trace.calls)
    autograd.instruction(calls == 0, "req.graph.by_hand", count=calls)
    first, second = autograd.unpack(got, 2, "(first, second)")
    with autograd.part(1):
        autograd.assert_close(first, 2 * X + 1, "first")
    with autograd.part(1):
        autograd.assert_close(second, 3 * X, "second")


@pytest.mark.grade(instruction_share=None)
def test_default_share(submission, autograd):
    by_hand(submission, autograd, "by_backward")


@pytest.mark.grade(hidden=True)
def test_hidden(submission, autograd):
    by_hand(submission, autograd, "by_backward")


@pytest.mark.grade(timeout=2)
def test_timeout_after_broken(submission, autograd):
    by_hand(submission, autograd, "by_backward")
    submission("work").hangs(X)


@pytest.mark.grade(instruction_share=None)
def test_no_instruction():
    pass
""" + "".join(
    f"\n\n@pytest.mark.grade(instruction_share={share!r})\ndef test_bad_{i}():\n    pass\n"
    for i, share in enumerate(BAD_SHARES)
)

_graded = {}


@pytest.fixture
def graded(pytester):
    """The checks above graded once for the whole module."""
    if not _graded:
        _graded["run"] = grade_checks(pytester, CHECKS, "--grade-json-private", "private.json", work=STUDENT)
        _graded["private"] = json.loads((pytester.path / "private.json").read_text())
    return _graded["run"]


def test_right_values_with_a_broken_instruction_lose_only_its_share(graded):
    honest = graded.check("test_derived[by_hand]")
    assert (honest["status"], honest["score"]) == ("passed", 4.0)
    assert honest["instruction"] == {"share": 0.25, "score": 1.0, "max_score": 1.0, "followed": True}

    broken = graded.check("test_derived[by_backward]")
    assert (broken["status"], broken["score"]) == ("failed", 3.0)
    assert (
        "instruction not followed (costs 1 of the 4 points; read from what your code's process reported"
        in broken["feedback"]
    )
    assert msg("req.graph.by_hand", count=1) in broken["feedback"]
    assert broken["instruction"] == {"share": 0.25, "score": 0.0, "max_score": 1.0, "followed": False}


def test_wrong_values_say_the_instruction_too_and_earn_nothing(graded):
    wrong = graded.check("test_derived[wrong_by_backward]")
    assert (wrong["status"], wrong["score"]) == ("failed", 0.0)
    assert "dy/dx: values differ" in wrong["feedback"]
    assert "the task's instructions were not followed either" in wrong["feedback"]
    assert "costs" not in wrong["feedback"]
    assert wrong["instruction"]["followed"] is False and wrong["instruction"]["score"] == 0


def test_a_stub_never_reaches_the_instruction(graded):
    stub = graded.check("test_derived[stub]")
    assert (stub["status"], stub["score"]) == ("failed", 0.0)
    assert "not implemented yet: work.stub" in stub["feedback"] and "instruction" not in stub["feedback"]
    assert stub["instruction"] == {"share": 0.25, "score": 0.0, "max_score": 1.0, "followed": None}


def test_parts_and_the_instruction_multiply(graded):
    parts = graded.check("test_parts")
    # half the values, then a quarter of what they earned lost: 4 x 0.5 x 0.75
    assert (parts["status"], parts["score"]) == ("failed", 1.5)
    assert "1 of 2 parts right" in parts["feedback"]
    assert "instruction not followed (costs 1 of the 4 points" in parts["feedback"]


def test_a_check_that_declares_no_share_takes_a_quarter(graded):
    default = graded.check("test_default_share")
    assert (default["status"], default["score"]) == ("failed", 3.0)
    assert default["instruction"] == {"share": 0.25, "score": 0.0, "max_score": 1.0, "followed": False}
    # a check that never looks at an instruction has no such part
    assert graded.check("test_no_instruction")["instruction"] is None


def test_a_hidden_check_keeps_the_instruction_to_instructors(graded):
    hidden = graded.check("test_hidden")
    assert (hidden["status"], hidden["score"]) == ("failed", 3.0)
    assert "instruction" not in hidden["feedback"] and "backward" not in hidden["feedback"]
    private = {c["id"]: c for c in _graded["private"]["checks"]}
    assert "instruction not followed" in private["test_checks.py::test_hidden"]["private_feedback"]


def test_a_timeout_after_a_broken_instruction_stays_a_timeout(graded):
    late = graded.check("test_timeout_after_broken")
    assert (late["status"], late["score"]) == ("timeout", 0.0)


def test_a_share_the_marker_cannot_mean_is_the_checks_error(graded):
    for i, share in enumerate(BAD_SHARES):
        bad = graded.check(f"test_bad_{i}")
        assert bad["status"] == "error", bad
        assert "instruction_share must be a number above 0 and at most 0.5" in bad["feedback"], bad
        assert repr(share) in bad["feedback"], bad

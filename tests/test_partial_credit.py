"""Partial credit as docs/authors/partial-credit.md states it: nested weights, parts that need
others, a failure outside every part, made-up errors, ``autograd.credit``,
and that raising never earns more than answering wrongly."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from conftest import grade_checks, run_grader, solution_with_all

from pytest_autograd_grader.checking.autograd import Autograd
from pytest_autograd_grader.outcomes import GradeFailure, StudentFailure
from pytest_autograd_grader.session_state import Credit

HEADER = """
import pytest
from pytest_autograd_grader.checking.provenance import ForgedError
from pytest_autograd_grader.outcomes import GradeFailure, StudentFailure

pytestmark = pytest.mark.grade(concept="graph", points=6)

def raised(text="TypeError: unsupported operand"):
    raise StudentFailure(text)
"""


def graded(pytester, body: str):
    pytester.makepyfile(test_checks=HEADER + body)
    return run_grader(pytester)


def test_nested_parts_split_their_parents_weight(pytester):
    report = graded(
        pytester,
        """
def test_nested(autograd):
    with autograd.part(1, name="forward"):
        pass
    with autograd.part(2, name="backward"):
        with autograd.part(1, name="x.grad"):
            autograd.assert_equal(2, 3, "x.grad")
        with autograd.part(1, name="y.grad"):
            pass
""",
    )
    check = report.check("test_nested")
    # b1 is half of B, B is 2 of 3: failing it costs 1/3 of the check
    assert (check["status"], check["score"]) == ("failed", 4.0)
    lines = check["feedback"].splitlines()
    assert "2 of 3 parts right (a part made of smaller parts counts the share of them that is right)" in lines[0]
    assert lines[1:] == ["backward: 1 of 2 parts right", "  x.grad:", "    x.grad: expected 3, got 2"]


def test_a_part_that_needs_a_failed_part_is_skipped_and_said_once(pytester):
    report = graded(
        pytester,
        """
def test_needs(autograd):
    @autograd.part(1)
    def forward():
        autograd.assert_equal(None, 3, "f(x)")

    @autograd.part(2, needs=forward)
    def backward():
        raise AssertionError("the body of a skipped part ran")

    @autograd.part(1, name="second order", needs=[backward])
    def second():
        raise AssertionError("the body of a skipped part ran")

    with autograd.part(2):
        pass
""",
    )
    check = report.check("test_needs")
    assert (check["status"], check["score"]) == ("failed", 2.0)
    feedback = check["feedback"]
    assert "2 of 6 parts right" in feedback
    assert feedback.count("f(x): expected") == 1
    assert "backward: skipped: it needs forward, which failed" in feedback
    assert "second order: skipped: it needs backward, which was skipped" in feedback
    assert "body of a skipped part ran" not in feedback


def test_needs_on_a_with_block_is_the_checks_error(pytester):
    report = graded(
        pytester,
        """
def test_with_needs(autograd):
    first = autograd.part(1)
    with first:
        pass
    with autograd.part(1, needs=first):
        pass
""",
    )
    check = report.check("test_with_needs")
    assert check["status"] == "error"
    assert "a with block cannot be skipped" in check["feedback"]


def test_a_failure_outside_the_parts_keeps_their_feedback_and_with_a_total_their_credit(pytester):
    report = graded(
        pytester,
        """
def test_declared(autograd):
    autograd.parts(total=4)
    for case in range(4):
        answer = raised() if case == 2 else case
        with autograd.part(1):
            autograd.assert_equal(answer, 0, f"case {case}")

def test_undeclared(autograd):
    for case in range(4):
        answer = raised() if case == 2 else case
        with autograd.part(1):
            autograd.assert_equal(answer, 0, f"case {case}")
""",
    )
    declared = report.check("test_declared")
    # case 0 right, case 1 wrong, case 2 raised: 1 of the 4 declared parts
    assert (declared["status"], declared["score"]) == ("failed", 1.5)
    feedback = declared["feedback"]
    assert "1 of its 4 parts right, the parts it did not reach counting as wrong" in feedback
    assert "case 1: expected 0, got 1" in feedback and "TypeError: unsupported operand" in feedback
    undeclared = report.check("test_undeclared")
    assert (undeclared["status"], undeclared["score"]) == ("failed", 0.0)
    feedback = undeclared["feedback"]
    assert "so it earns no points (before it stopped, 1 of 2 parts were right)" in feedback
    assert "case 1: expected 0, got 1" in feedback and "TypeError: unsupported operand" in feedback


def test_a_stub_that_fails_a_part_and_then_stops_the_check_is_said_once():
    credit = Credit()
    grader = Autograd(credit=credit)
    with grader.part():
        raise StudentFailure("not implemented yet: leaf.find")
    failure = credit.failure(StudentFailure("not implemented yet: leaf.find"))
    assert failure.feedback.count("not implemented yet") == 1
    assert failure.fraction == 0.0


def test_a_declared_total_the_parts_do_not_reach_is_the_checks_error(pytester):
    report = graded(
        pytester,
        """
def test_short(autograd):
    autograd.parts(total=3)
    with autograd.part(1):
        pass
""",
    )
    check = report.check("test_short")
    assert check["status"] == "error" and "parts weighing only 1" in check["feedback"]


def test_a_made_up_error_costs_the_whole_check_even_with_a_total(pytester):
    report = graded(
        pytester,
        """
def test_forged(autograd):
    autograd.parts(total=3)
    with autograd.part(1):
        pass
    with autograd.part(2):
        raise ForgedError("x: this RuntimeError was raised by your own code, not by PyTorch")
""",
    )
    check = report.check("test_forged")
    assert (check["status"], check["score"]) == ("failed", 0.0)
    assert "raised by your own code" in check["feedback"]


def test_autograd_credit_decides_a_finished_check_not_a_stopped_one(pytester):
    report = graded(
        pytester,
        """
def test_finished(autograd):
    with autograd.part(1):
        autograd.assert_equal(1, 2, "first")
    with autograd.part(1):
        pass
    autograd.credit(0.75, "3 of 4 cases right")

def test_stopped(autograd):
    autograd.parts(total=2)
    with autograd.part(1):
        pass
    autograd.credit(1.0)
    raised()
""",
    )
    finished = report.check("test_finished")
    assert (finished["status"], finished["score"]) == ("failed", 4.5)
    assert "3 of 4 cases right" in finished["feedback"] and "first: expected 2, got 1" in finished["feedback"]
    stopped = report.check("test_stopped")
    # the check never reached its verdict: the parts decide, the unreached one counts as wrong
    assert (stopped["status"], stopped["score"]) == ("failed", 3.0)
    assert "1 of its 2 parts right" in stopped["feedback"]


STUDENT = """
import os
import time

def f(x):
    return x

def sleepy(seconds):
    time.sleep(seconds)

def die():
    os._exit(3)
"""


def test_a_timeout_or_crash_inside_a_part_costs_that_part(pytester):
    checks = """
import pytest
import torch

pytestmark = pytest.mark.grade(concept="graph", points=3)

def right(submission, autograd):
    autograd.assert_close(submission("good").f(torch.ones(2)), torch.ones(2), "f")

@pytest.mark.grade(timeout=0.5)
def test_hangs_in_a_part(submission, autograd):
    with autograd.part(1):
        right(submission, autograd)
    with autograd.part(1):
        submission("good").sleepy(3.0)
    with autograd.part(1):
        right(submission, autograd)

def test_dies_in_a_part(submission, autograd):
    with autograd.part(1):
        right(submission, autograd)
    with autograd.part(1):
        submission("good").die()
    with autograd.part(1):
        right(submission, autograd)
"""
    report = grade_checks(pytester, checks, good=STUDENT)
    hung = report.check("test_hangs_in_a_part")
    # the time limit bounds the whole check: the calls after the timeout find no time left
    assert (hung["status"], hung["score"]) == ("timeout", 1.0)
    assert "1 of 3 parts right" in hung["feedback"] and "good.f did not finish" in hung["feedback"]
    died = report.check("test_dies_in_a_part")
    assert (died["status"], died["score"]) == ("crashed", 2.0)
    assert "2 of 3 parts right" in died["feedback"]


# -- raising never earns more than answering wrongly ---------------------------

# The top-level weights of the shipped course's checks with parts, loops
# unrolled (exercises/test_*.py), and a nested check.
SHIPPED = {
    "leaf.predict_leaves": [2, 2],
    "no_grad.frozen": [1, 1, 1],
    "no_grad.td_grad": [1, 2],
    "retain_graph": [2, 1],
    "inplace.repaired": [1, 2] * 6,
    "dynamic_graph.branch_grad": [1] * 4,
    "dynamic_graph.loop_grad": [1, 2] * 4,
    "dynamic_graph.rnn_grad": [1, 1] * 3,
    "custom_function.hypot": [1, 2, 1],
}


def score(weights, answers, stop_at, total):
    """The check's fraction: part i is right when answers[i], and at
    ``stop_at`` (None: never) the student's call raises before the part."""
    credit = Credit()
    grader = Autograd(credit=credit)
    if total:
        grader.parts(total=sum(weights))
    try:
        for i, (weight, right) in enumerate(zip(weights, answers)):
            if i == stop_at:
                raise StudentFailure("ValueError: raised instead of answering")
            with grader.part(weight):
                if not right:
                    raise GradeFailure("wrong")
    except GradeFailure as raised:
        failure = credit.failure(raised)
    else:
        failure = credit.failure()
    return 1.0 if failure is None else failure.fraction or 0.0


@pytest.mark.parametrize("total", [False, True], ids=["no total", "declared total"])
@pytest.mark.parametrize("check", sorted(SHIPPED))
def test_raising_never_beats_answering_wrongly(check, total):
    weights = SHIPPED[check]
    n = len(weights)
    patterns = (
        itertools.product((True, False), repeat=n)
        if n <= 8
        else [tuple((i >> k) % 3 != 0 for k in range(n)) for i in range(300)]
    )
    for answers in patterns:
        for stop in range(n):
            # from ``stop`` on the student either raises or answers wrongly (the least a wrong answer earns)
            wrong = score(weights, answers[:stop] + (False,) * (n - stop), None, total)
            assert score(weights, answers, stop, total) <= wrong + 1e-12, (answers, stop)


# -- the worked example of docs/authors/partial-credit.md ------------------------

PAGE = Path(__file__).resolve().parent.parent / "docs" / "authors" / "partial-credit.md"
HYPOT = """
import torch

def hypot(x, y):
    return {hypot}

def hypot3(x, y, z):
    return hypot(hypot(x, y), z)
"""
STUDENTS = {
    "right": ("torch.hypot(x, y)", 4.0, ()),
    "y.grad wrong": (
        "(x * x + y * y.detach()).sqrt()",
        3.0,
        (
            "3 of 4 parts right (a part made of smaller parts",
            "gradients: 1 of 2 parts right",
            "  y.grad: values differ from torch.autograd",
        ),
    ),
    "off by a constant": (
        "torch.hypot(x, y) + 1",
        2.0,
        ("2 of 4 parts right", "hypot3: skipped: it needs forward, which failed"),
    ),
}


def page_example() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("```python", text.index("Three parts, one nested"))
    head = 'import pytest\nimport torch\n\npytestmark = pytest.mark.grade(concept="graph")\n'
    return head + text[start + len("```python") : text.index("```", start + 9)]


@pytest.mark.parametrize("student", sorted(STUDENTS))
def test_the_pages_example_scores_as_it_says(pytester, student):
    code, points, said = STUDENTS[student]
    report = grade_checks(pytester, page_example(), hypot=HYPOT.format(hypot=code))
    check = report.check("test_hypot")
    assert check["score"] == points, check["feedback"]
    for line in said:
        assert line in check["feedback"]
    if said:
        assert check["feedback"].count("hypot(x, y): values differ") <= 1


# -- the shipped course: an error in a late case keeps the cases before it --------

RAISES_LATE = """
def loop_grad(x, c, limit):
    y = x
    steps = 0
    while y.norm() < limit:
        y = y * c
        steps += 1
    if steps >= 2:
        raise ValueError("my loop gives up after one step")
    y.sum().backward()
    return steps, x.grad
"""
WRONG_LATE = RAISES_LATE.replace('raise ValueError("my loop gives up after one step")', "return steps - 1, x.grad")


def test_shipped_loop_grad_keeps_the_cases_before_an_error_and_raising_never_pays(grade_topics):
    def graded(source):
        modules = {"dynamic_graph": solution_with_all("dynamic_graph", {"loop_grad": source})}
        return grade_topics(["dynamic_graph"], "-k", "loop_grad", modules=modules).check("test_loop_grad")

    raised, wrong = graded(RAISES_LATE), graded(WRONG_LATE)
    # the three cases of at most one step are right: 9 of the 12 declared parts of 3 points
    assert (raised["status"], raised["score"]) == ("failed", 2.25)
    assert "9 of its 12 parts right" in raised["feedback"] and "my loop gives up" in raised["feedback"]
    assert wrong["status"] == "failed" and raised["score"] <= wrong["score"]

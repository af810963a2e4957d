"""Input classes: a check declares the ones its exercise allows
(``grade(inputs=...)``), ``grade_rng`` notes what each drawn tensor
belongs to, and the report lists what the check drew on this seed and what
it declared but never drew, so a course author sees a check that lets an
input-dependent mistake through on some seeds. (test_curriculum asserts
every torch topic draws its declared classes on every seed.)"""

from __future__ import annotations

import pytest
import torch
from conftest import grade_checks

from pytest_autograd_grader.checking.input_classes import classes_of
from pytest_autograd_grader.checking.seeding import GradeRng

CHECKS = """
import pytest

@pytest.mark.grade(concept="leaf", inputs=("rank 1", "rank 2", "size-1 axis", "one element", "negative", "zero"))
def test_square(submission, grade_rng):
    for shape in grade_rng.shapes(ranks={ranks}):
        x = grade_rng.randn(*shape, mixed=True, zeros={zeros})
        assert submission("square").square(x) is not None
"""

STUDENT = "def square(x):\n    return x * x\n"


def test_a_check_that_draws_every_declared_class_reports_none_missing(pytester: pytest.Pytester):
    graded = grade_checks(pytester, CHECKS.format(ranks=(1, 2), zeros=1), square=STUDENT)
    check = graded.report["checks"][0]
    assert check["status"] == "passed"
    assert check["inputs_missing"] == []
    assert {"rank 1", "rank 2", "size-1 axis", "one element", "negative", "positive", "zero"} <= set(check["inputs"])


def test_a_check_that_never_draws_a_declared_class_says_which(pytester: pytest.Pytester):
    # 1-D only and no exact zero: a loop over the first axis, or a wrong
    # derivative at 0, would pass this check unseen
    graded = grade_checks(pytester, CHECKS.format(ranks=(1,), zeros=0), square=STUDENT)
    check = graded.report["checks"][0]
    assert check["inputs_missing"] == ["rank 2", "size-1 axis", "zero"]


def test_an_unknown_input_class_is_the_authors_error(pytester: pytest.Pytester):
    checks = CHECKS.format(ranks=(1,), zeros=0).replace('"zero"', '"zeroes"')
    graded = grade_checks(pytester, checks, square=STUDENT)
    check = graded.report["checks"][0]
    assert check["status"] == "error"
    assert "inputs must be a tuple of input class names" in check["feedback"] and "'zeroes'" in check["feedback"]


def test_every_seed_draws_each_rank_a_size_one_axis_and_a_single_element():
    for seed in range(200):
        rng = GradeRng.create(seed)
        shapes = rng.shapes(ranks=(1, 2, 3))
        assert [len(s) for s in shapes[:3]] == [1, 2, 3]
        assert 1 in shapes[3] and len(shapes[3]) == 3 and shapes[3] != (1, 1, 1)
        assert shapes[4] == (1, 1, 1)
        x = rng.randn(*shapes[2], mixed=True, zeros=2)
        assert {"negative", "positive", "zero"} <= classes_of(x)
        assert int((x == 0).sum()) == 2


def test_draws_without_the_new_options_keep_their_values():
    # checks written before input classes existed see the same inputs per seed
    torch_gen = torch.Generator()
    torch_gen.manual_seed(7)
    assert torch.equal(GradeRng.create(7).randn(3, 2), torch.randn(3, 2, generator=torch_gen, dtype=torch.float64))


def test_a_zero_dimensional_draw_is_a_rank_0_single_element():
    rng = GradeRng.create(3)
    x = rng.randn()
    assert x.shape == () and {"rank 0", "one element"} <= rng.drawn

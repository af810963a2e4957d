"""The autograd fixture's comparisons, called directly: what a failure says."""

from __future__ import annotations

import pytest
import torch

from pytest_autograd_grader.checking.autograd import Autograd
from pytest_autograd_grader.checking.diagnose import Context
from pytest_autograd_grader.i18n import msg
from pytest_autograd_grader.outcomes import GradeFailure
from pytest_autograd_grader.state import Credit


def failure_of(fn, *args, **kwargs) -> str:
    with pytest.raises(GradeFailure) as info:
        fn(*args, **kwargs)
    return info.value.feedback


def test_assert_equal_lists_every_wrong_item_by_label_with_a_hint():
    text = failure_of(Autograd().assert_equal, [True, False, True], [True, True, False], "is_leaf",
                      labels=["w", "a", "y"], hint="diag.nonleaf_grad_kept")
    assert text.splitlines() == [
        "a: expected True, got False",
        "y: expected False, got True",
        msg("diag.nonleaf_grad_kept"),
    ]


def test_assert_equal_expecting_none_names_what_came_instead():
    got = torch.zeros(2, 3)
    assert failure_of(Autograd().assert_equal, got, None, "W1.grad") == "W1.grad: expected None, got a Tensor"
    Autograd().assert_equal(None, None, "W1.grad")


def test_hint_may_be_plain_text():
    assert failure_of(Autograd().assert_equal, 1, 2, "steps", hint="count the loop once more").endswith(
        "\ncount the loop once more")


def test_a_single_random_number_off_by_an_exact_factor_is_still_diagnosed():
    # Random float64 inputs make an exact integer ratio strong evidence even
    # for one element (a random shape can be 1x1).
    one = torch.tensor([[-1.1441207]], dtype=torch.float64)
    assert "2 times too large" in failure_of(Autograd().assert_grad, one * 2, one, "w.grad")


def test_a_stub_failing_in_several_parts_is_reported_once():
    credit = Credit()
    grader = Autograd(credit=credit)
    for _ in range(2):
        with grader.part():
            raise GradeFailure("not implemented yet: leaf.find")
    failure = credit.failure()
    assert failure.feedback.count("not implemented yet") == 1
    assert failure.fraction == 0.0


def test_unpack_says_what_shape_was_expected():
    assert failure_of(Autograd().unpack, 3.0, 2, "(loss, grad)") == \
        "(loss, grad): expected a tuple or list of 2 values, got a number (a float): 3.0"
    assert Autograd().unpack((1, 2), 2, "pair") == [1, 2]


def test_a_loop_that_never_clears_grad_is_a_running_sum():
    g1, g2, g3 = (torch.tensor(v, dtype=torch.float64) for v in ([1.0, -2.0], [0.5, 3.0], [-4.0, 1.0]))
    text = failure_of(Autograd().assert_grad, g1 + g2 + g3, g3, "step 3",
                      context=Context(previous=(g1, g2)))
    assert "the gradient of step 3 is the sum of the gradients of steps 1 to 3" in text
    text = failure_of(Autograd().assert_grad, g1 + g2, g2, "step 2", context=Context(previous=(g1,), grad_of="w"))
    assert "the gradient of step 2 is the sum of the gradients of steps 1 and 2" in text
    assert "Zero it (w.grad = None or optimizer.zero_grad())" in text

"""The autograd fixture's comparisons, called directly: what a failure says."""

from __future__ import annotations

import pytest
import torch

from pytest_autograd_grader.checking.autograd import Autograd
from pytest_autograd_grader.checking.misconceptions import Context
from pytest_autograd_grader.i18n import msg
from pytest_autograd_grader.outcomes import GradeFailure
from pytest_autograd_grader.session_state import Credit


def failure_of(fn, *args, **kwargs) -> str:
    with pytest.raises(GradeFailure) as info:
        fn(*args, **kwargs)
    return info.value.feedback


def test_assert_equal_lists_every_wrong_item_by_label_with_a_hint():
    text = failure_of(
        Autograd().assert_equal,
        [True, False, True],
        [True, True, False],
        "is_leaf",
        labels=["w", "a", "y"],
        hint="diag.nonleaf_grad_kept",
    )
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
        "\ncount the loop once more"
    )


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
    assert failure_of(
        Autograd().unpack, 3.0, 2, "(loss, grad)"
    ) == "(loss, grad): expected a tuple or list of 2 values, got a number (a float): 3.0\n" + msg(
        "why.one_for_many", n=2
    )
    assert Autograd().unpack((1, 2), 2, "pair") == [1, 2]


def test_a_loop_that_never_clears_grad_is_a_running_sum():
    g1, g2, g3 = (torch.tensor(v, dtype=torch.float64) for v in ([1.0, -2.0], [0.5, 3.0], [-4.0, 1.0]))
    text = failure_of(Autograd().assert_grad, g1 + g2 + g3, g3, "step 3", context=Context(previous=(g1, g2)))
    assert "the gradient of step 3 is the sum of the gradients of steps 1 to 3" in text
    text = failure_of(Autograd().assert_grad, g1 + g2, g2, "step 2", context=Context(previous=(g1,), grad_of="w"))
    assert "the gradient of step 2 is the sum of the gradients of steps 1 and 2" in text
    assert "Zero it (w.grad = None or optimizer.zero_grad())" in text


def _assert_close_says(got, expected, rtol, atol) -> bool:
    try:
        torch.testing.assert_close(got, expected, rtol=rtol, atol=atol)
    except AssertionError:
        return False
    return True


_EDGES = [0.0, -0.0, 1.0, 1.0 + 5e-8, 1.0 + 5e-6, -2.5, 1e300, 5e-324, float("nan"), float("inf"), float("-inf")]


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_gradients_pass_exactly_where_torch_testing_assert_close_passes_them(dtype):
    # the comparison is torch.isclose (assert_close's own import costs every
    # run 0.3 s); its verdicts must stay assert_close's, edge values included
    from pytest_autograd_grader.checking.compare import close, tolerances

    rtol, atol = tolerances(dtype, "cpu")
    kind = getattr(torch, dtype)
    for x in _EDGES:
        for y in _EDGES:
            got, expected = torch.tensor([x], dtype=kind), torch.tensor([y], dtype=kind)
            assert close(got, expected, rtol, atol) == _assert_close_says(got, expected, rtol, atol), (x, y)
    got = torch.tensor(_EDGES, dtype=kind)
    assert close(got, got.clone(), rtol, atol) is False  # NaN is close to nothing, as in assert_close
    assert close(torch.empty(0, 2, dtype=kind), torch.empty(0, 2, dtype=kind), rtol, atol) is True


@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool", "complex128"])
def test_other_dtypes_pass_exactly_where_torch_testing_assert_close_passes_them(dtype):
    from pytest_autograd_grader.checking.compare import close, tolerances

    rtol, atol = tolerances(dtype, "cpu")
    values = [1 + 1j, complex("nan+1j"), 1 + 1.00000001j, 2j] if dtype == "complex128" else [0, 1, 2]
    for x in values:
        for y in values:
            got, expected = torch.tensor([x]).to(getattr(torch, dtype)), torch.tensor([y]).to(getattr(torch, dtype))
            assert close(got, expected, rtol, atol) == _assert_close_says(got, expected, rtol, atol), (x, y)


def test_a_gradient_off_by_more_than_the_tolerance_fails_and_within_it_passes():
    expected = torch.tensor([1.0, 2.0], dtype=torch.float64)
    Autograd().assert_grad(expected + 5e-8, expected, "x.grad")  # within float64's rtol 1e-7, atol 1e-7
    text = failure_of(Autograd().assert_grad, expected + 1e-5, expected, "x.grad")
    assert text.splitlines()[0] == msg("cmp.mismatch", what="x.grad")

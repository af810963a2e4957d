"""The `higher_order` topic: correct answers in other styles pass on every
seed, plausible mistakes fail on every seed, and each is told its mistake
(and no other diagnosis where its evidence is absent).

All variants are graded in ONE session and one sandbox worker (its start and
warm-up paid once): each variant is a copy of the checks file in a directory
of its own, calling a student module named TOPIC_VARIANT; the copies keep
the file's name, so every check gets exactly the inputs `--grade-seed S`
gives the real one, for each of the 20 seeds of SEEDS. A mistake variant
plants several mistakes/higher_order/<name>.py, one per function
(``planted_module``)."""

from __future__ import annotations

import re

import pytest
from conftest import fails_everywhere, grade_variants, instruction_only, passes_everywhere
from planted_mistakes import planted_module

from pytest_autograd_grader.i18n import msg

TOPIC = "higher_order"

VARIANTS = {
    # -- correct, in other styles than the reference's ----------------------
    "styles_a": """import torch


def _p(c, x):
    out = torch.zeros_like(x)
    for coef in reversed(list(c)):
        out = out * x + coef
    return out


def first_derivative(coeffs, x):
    p = _p(coeffs, x)
    return torch.autograd.grad(p, x, grad_outputs=torch.ones_like(p), create_graph=True)[0]


def derivatives(coeffs, x, n):
    out, current = [], _p(coeffs, x)
    for k in range(n):   # the last derivative need not be differentiable
        current = torch.autograd.grad(current, x, torch.ones_like(current), create_graph=k < n - 1)[0]
        out.append(current)
    return tuple(out)


def hessian_vector_product(a, x, v):
    f = torch.log(torch.exp(a @ x).sum())
    f.backward(create_graph=True)
    g = x.grad
    x.grad = None
    (g * v).sum().backward()
    return x.grad
""",
    "styles_b": """import torch


def _p(c, x):
    return (x.unsqueeze(-1) ** torch.arange(len(c), dtype=x.dtype, device=x.device) * c).sum(-1)


def first_derivative(coeffs, x):
    (g,) = torch.autograd.grad([_p(coeffs, x).sum()], [x], create_graph=True)
    return g


def derivatives(coeffs, x, n):
    out = [_p(coeffs, x)]
    for _ in range(n):
        out.append(torch.autograd.grad(out[-1].sum(), x, create_graph=True)[0])
    return out[1:]


def hessian_vector_product(a, x, v):
    g = torch.autograd.grad(torch.logsumexp(a @ x, 0), x, create_graph=True)[0]
    return torch.autograd.grad(g, x, grad_outputs=v)[0]
""",
    # -- mistakes, one per function (mistakes/higher_order/) ---------------------
    "backward": planted_module(TOPIC, "first_backward", "derivatives_backward", "hvp_backward"),
    "retain": planted_module(TOPIC, "first_retain", "derivatives_retain", "hvp_retain"),
    "no_create": planted_module(TOPIC, "first_no_create", "derivatives_no_create", "hvp_no_create"),
    "cut": planted_module(TOPIC, "first_cut", "derivatives_cut", "hvp_cut"),
    "mixups": planted_module(TOPIC, "first_mixups", "derivatives_mixups", "hvp_mixups"),
    "repeats": planted_module(TOPIC, "first_repeats", "derivatives_repeats", "hvp_repeats"),
    "misc": planted_module(TOPIC, "first_misc", "derivatives_misc", "hvp_misc"),
    "library": planted_module(TOPIC, "first_library", "derivatives_library", "hvp_library"),
    "zeros": planted_module(TOPIC, "first_zeros", "derivatives_zeros", "hvp_zeros"),
    # -- mistakes right for some inputs only, or a sum read as a mean -----------
    "polyval": planted_module(TOPIC, "p_polyval", "hvp_polyval"),
    "mean": planted_module(TOPIC, "first_mean", "derivatives_mean", "hvp_mean"),
    "vector_only": planted_module(TOPIC, "p_vector_only", "derivatives_vector_only"),
}

_graded: dict = {}


@pytest.fixture
def graded(pytester):
    """Every variant's results, graded once for the whole module
    (``grade_variants``): ``graded(variant, check)`` returns that check's 20
    results."""
    if not _graded:
        _graded.update(grade_variants(pytester, TOPIC, VARIANTS))
    return lambda variant, check: _graded[variant][check]


def failing_with(graded, variant, check, *texts, absent=(), score=0):
    """The check fails on every seed with ``score`` (no points unless said),
    its feedback holds every text of ``texts`` and none of ``absent``;
    returns the first seed's feedback."""
    return fails_everywhere(graded(variant, check), *texts, absent=absent, score=score)


def passing(graded, variant, check):
    passes_everywhere(graded(variant, check))


CHECKS = (
    "test_first_derivative",
    "test_first_derivative_is_differentiable",
    "test_derivatives",
    "test_hessian_vector_product",
)


@pytest.mark.parametrize("variant", ["styles_a", "styles_b"])
def test_correct_answers_in_other_styles_pass_on_every_seed(graded, variant):
    for check in CHECKS:
        passing(graded, variant, check)


def test_every_declared_input_class_is_drawn_on_every_seed(graded):
    # each rank the docstrings allow, a size-1 axis, a single element, both
    # signs (and exact zeros where declared): on each of the 20 seeds
    for check in CHECKS:
        for run in graded("styles_a", check):
            assert run["inputs_missing"] == [], (check, run["inputs"], run["inputs_missing"])
            assert {"rank 1", "rank 2", "size-1 axis", "one element", "negative", "positive"} <= set(run["inputs"]), (
                check,
                run["inputs"],
            )


def test_backward_instead_of_autograd_grad(graded):
    # right values, the instruction broken: its share lost
    failing_with(
        graded,
        "backward",
        "test_first_derivative",
        msg("req.higher_order.first_derivative", backward=1, grad=0),
        score=instruction_only(2),
    )
    passing(graded, "backward", "test_first_derivative_is_differentiable")  # its values are right
    failing_with(
        graded,
        "backward",
        "test_derivatives",
        "derivative 2 of p (n=",
        msg(
            "diag.higher_order.accumulated",
            what="derivative 2",
            previous=msg("diag.higher_order.previous_derivative", k=1),
        ),
    )
    failing_with(
        graded,
        "backward",
        "test_hessian_vector_product",
        "H @ v: values differ",
        msg("diag.higher_order.accumulated", what="H @ v", previous=msg("diag.higher_order.gradient_of_f")),
    )


def test_right_values_from_backward_or_a_library_still_break_the_rules(graded):
    failing_with(graded, "library", "test_first_derivative", "p'(x): expected a tensor, got a tuple")
    failing_with(
        graded,
        "library",
        "test_derivatives",
        msg("req.higher_order.derivatives", n=1, backward=1, grad=0),
        absent=("values differ",),
        score=instruction_only(2),
    )
    failing_with(
        graded,
        "library",
        "test_hessian_vector_product",
        msg("req.higher_order.hvp_two_passes", calls=3),
        absent=("values differ",),
        score=instruction_only(2),
    )
    failing_with(
        graded,
        "mixups",
        "test_first_derivative",
        msg("req.higher_order.first_derivative", backward=0, grad=0),
        score=instruction_only(2),
    )
    passing(graded, "mixups", "test_first_derivative_is_differentiable")


def test_missing_create_graph_is_told_only_when_it_is_missing(graded):
    retain = msg("diag.higher_order.retain_not_create")
    missing = msg("diag.no_create_graph")
    cut = msg("diag.higher_order.graph_cut")
    # retain_graph=True where create_graph=True belongs
    passing(graded, "retain", "test_first_derivative")
    failing_with(
        graded,
        "retain",
        "test_first_derivative_is_differentiable",
        "expected a gradient, got None",
        retain,
        absent=(missing,),
    )
    for check in ("test_derivatives", "test_hessian_vector_product"):
        failing_with(
            graded, "retain", check, "does not require grad", retain, absent=(missing, msg("diag.requires_grad"))
        )
    # create_graph left out
    passing(graded, "no_create", "test_first_derivative")
    failing_with(
        graded,
        "no_create",
        "test_first_derivative_is_differentiable",
        "expected a gradient, got None",
        missing,
        absent=(retain, cut),
    )
    failing_with(
        graded,
        "no_create",
        "test_hessian_vector_product",
        "does not require grad",
        missing,
        absent=(msg("diag.requires_grad"), retain, cut),
    )
    failing_with(
        graded,
        "no_create",
        "test_derivatives",
        "does not require grad",
        msg("diag.higher_order.create_graph_call", k=2),
        absent=(missing, retain),
    )
    # create_graph=True given, the graph cut afterwards
    failing_with(
        graded,
        "cut",
        "test_first_derivative_is_differentiable",
        "expected a gradient, got None",
        cut,
        absent=(missing,),
    )
    failing_with(graded, "cut", "test_derivatives", "does not require grad", cut, absent=(missing,))
    failing_with(
        graded,
        "cut",
        "test_hessian_vector_product",
        "appears to not have been used in the graph",
        cut,
        absent=(missing, msg("diag.unused_input")),
    )
    # p itself has no graph: nothing about create_graph
    failing_with(
        graded,
        "misc",
        "test_first_derivative",
        "does not require grad",
        msg("diag.requires_grad"),
        absent=(missing, cut, retain),
    )


def test_none_returned_is_not_called_a_missing_graph(graded):
    for check in ("test_first_derivative", "test_first_derivative_is_differentiable"):
        failing_with(
            graded,
            "zeros",
            check,
            "p'(x): expected a tensor, got None",
            absent=(msg("diag.no_create_graph"), msg("diag.higher_order.graph_cut"), "Likely mistake"),
        )


def test_a_gradient_made_a_new_leaf(graded):
    new_leaf = msg("diag.higher_order.new_leaf")
    failing_with(
        graded,
        "repeats",
        "test_first_derivative_is_differentiable",
        "expected a gradient, got None",
        new_leaf,
        absent=(msg("diag.no_create_graph"),),
    )
    # zeros from materialize_grads: the leaf, not create_graph alone, and not "second derivative zero"
    failing_with(
        graded, "zeros", "test_derivatives", "derivative 2 of p (n=", new_leaf, absent=(msg("diag.second_zero"),)
    )
    failing_with(
        graded,
        "zeros",
        "test_hessian_vector_product",
        "H @ v: values differ",
        new_leaf,
        absent=(msg("diag.second_zero"),),
    )


def test_wrong_derivative_lists(graded):
    failing_with(graded, "mixups", "test_derivatives", "derivative 1 of p (n=1)", msg("diag.higher_order.shifted"))
    failing_with(
        graded,
        "repeats",
        "test_derivatives",
        "derivative 2 of p (n=",
        msg("diag.higher_order.repeated", k=2, previous=1),
        absent=(msg("diag.higher_order.shifted"), "x.grad"),
    )
    failing_with(graded, "misc", "test_derivatives", "derivatives(coeffs, x, n=1): expected 1 values, got 2")
    # a different wrong list does not get the x.grad diagnosis: no backward call
    for variant in ("mixups", "repeats", "zeros"):
        failing_with(graded, variant, "test_derivatives", absent=("x.grad still held",))


def test_coefficients_read_in_numpy_polyval_order(graded):
    order = msg("diag.higher_order.polyval_order")
    failing_with(
        graded, "polyval", "test_first_derivative", "p'(x): values differ", order, absent=(msg("diag.too_small", k=2),)
    )
    failing_with(graded, "polyval", "test_first_derivative_is_differentiable", "values differ", order)
    failing_with(graded, "polyval", "test_derivatives", "derivative 1 of p (n=1)", order)


def test_a_mean_where_the_task_sums_is_not_called_accumulation(graded):
    # the factor found is said, with the number of elements it comes from;
    # one element (drawn on every seed too) hides it, the others show it
    accumulate = "accumulate with +="
    for variant, check in (
        ("mean", "test_first_derivative"),
        ("mean", "test_first_derivative_is_differentiable"),
        ("mean", "test_derivatives"),
        ("vector_only", "test_derivatives"),
        ("polyval", "test_hessian_vector_product"),
    ):
        feedback = failing_with(graded, variant, check, "values differ", absent=(accumulate,))
        assert re.search(r"is 1/(\d+) of the expected value, and x has (\d+) elements \(\1 = \2\*\*1\)", feedback), (
            variant,
            check,
            feedback,
        )
        assert "differentiated a mean (.mean()) where the task differentiates a sum" in feedback
    # a mean in every call of derivatives: derivative k is 1/N**k of its value
    for run in graded("mean", "test_derivatives"):
        assert re.search(r"x has (\d+) elements \(\d+ = \1\*\*1\)", run["feedback"]), run["feedback"]


def test_answers_right_for_vectors_only_fail_on_every_seed(graded):
    # powers along x[:, None]: a matrix x (drawn on every seed) raises
    failing_with(graded, "vector_only", "test_first_derivative", "vector_only.first_derivative raised")
    # .squeeze(): x of one element (d = 1, drawn on every seed) loses its axis
    failing_with(graded, "mean", "test_hessian_vector_product", "H @ v: expected shape (1,), got shape ()")


def test_wrong_hessian_vector_products(graded):
    failing_with(
        graded,
        "mixups",
        "test_hessian_vector_product",
        msg("diag.higher_order.sum_then_v"),
        absent=(msg("diag.higher_order.no_v"),),
    )
    failing_with(
        graded,
        "repeats",
        "test_hessian_vector_product",
        msg("diag.higher_order.no_v"),
        absent=(msg("diag.higher_order.sum_then_v"),),
    )
    failing_with(
        graded,
        "misc",
        "test_hessian_vector_product",
        msg("diag.higher_order.first_gradient"),
        absent=("x.grad still held",),
    )

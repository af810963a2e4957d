"""The `custom_function` topic: correct answers in other styles pass on
every seed, plausible mistakes fail on every seed, and each is told its
mistake (and no other diagnosis where its evidence is absent).

All variants are graded in ONE session and one sandbox worker (its start and
warm-up paid once): each variant is a copy of the checks file in a directory
of its own, calling a student module named TOPIC_VARIANT; the copies keep
the file's name, so every check gets exactly the inputs `--grade-seed S`
gives the real one, for each of the 20 seeds of SEEDS. A mistake variant
plants several mistakes/custom_function/<name>.py, one per function
(``planted_module``)."""

from __future__ import annotations

import pytest
from conftest import fails_everywhere, grade_variants, passes_everywhere
from planted_mistakes import planted_module

from pytest_autograd_grader.i18n import msg

TOPIC = "custom_function"

VARIANTS = {
    # -- correct, in other styles than the reference's ----------------------
    "styles_a": """import torch


class Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x   # an attribute of ctx instead of save_for_backward
        return x / (1 + torch.exp(-x))

    @staticmethod
    def backward(ctx, grad_output):
        s = torch.sigmoid(ctx.x)
        return (grad_output * s * (1 + ctx.x * (1 - s)),)


class Hypot(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        r = torch.hypot(x, y)
        ctx.save_for_backward(x, y, r)
        return r

    @staticmethod
    def backward(ctx, grad_output):
        x, y, r = ctx.saved_tensors
        scale = grad_output / r
        return scale * x, scale * y


def gradcheck_input(x):
    return torch.tensor(x, dtype=torch.float64, requires_grad=True)
""",
    "styles_b": """import torch


class Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)   # sigmoid recomputed in backward
        return torch.nn.functional.silu(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        s = 1 / (1 + torch.exp(-x))
        return torch.mul(grad_output, s + x * s * (1 - s))


class Hypot(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return (x * x + y * y).sqrt()

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        r = (x * x + y * y).sqrt()
        return tuple(grad_output * t / r for t in (x, y))


def gradcheck_input(x):
    return x.double().requires_grad_()
""",
    # -- mistakes, one per function (mistakes/custom_function/) ------------------
    "grad_output": planted_module(TOPIC, "swish_grad_output", "hypot_grad_output", "input_grad_output"),
    "sigmoid_only": planted_module(TOPIC, "swish_sigmoid_only", "hypot_sigmoid_only", "input_sigmoid_only"),
    "product": planted_module(TOPIC, "swish_product", "hypot_product", "input_product"),
    "mixing": planted_module(TOPIC, "swish_mixing", "hypot_mixing", "input_mixing"),
    "second_term": planted_module(TOPIC, "swish_second_term", "hypot_second_term"),
    "copy_paste": planted_module(TOPIC, "swish_copy_paste", "hypot_copy_paste"),
    # -- mistakes right for some inputs only: each input class on every seed ------
    # |x| where x belongs: right for x >= 0 only
    "abs_x": planted_module(TOPIC, "swish_abs_x", "hypot_abs_x", "input_abs_x"),
    # sqrt(y**2) "simplified": right for y > 0 only; a mean over grad_output (equal for one element)
    "sqrt_y": planted_module(TOPIC, "swish_sqrt_y", "hypot_sqrt_y"),
    # a local derivative reduced and broadcast; the Jacobian as a matrix (torch.diag: right for 1-D only)
    "reduced": planted_module(TOPIC, "swish_reduced", "hypot_reduced", "input_reduced"),
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


def failing_with(graded, variant, check, *texts, absent=(), score=0.0):
    """The check fails on every seed with ``score``, its feedback holds every
    text of ``texts`` and none of ``absent``."""
    return fails_everywhere(graded(variant, check), *texts, absent=absent, score=score)


def passing(graded, variant, check):
    passes_everywhere(graded(variant, check))


CHECKS = ("test_swish_forward", "test_swish_backward", "test_swish_gradcheck", "test_hypot", "test_gradcheck_input")
RAW_MATRICES = ("numerical:", "analytical:", "tensor(")


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
            assert {"rank 2", "size-1 axis", "negative", "positive"} <= set(run["inputs"]), (check, run["inputs"])


def test_a_backward_that_ignores_grad_output(graded):
    ignores = msg("diag.custom_function.ignores_grad_output")
    passing(graded, "grad_output", "test_swish_forward")
    failing_with(
        graded,
        "grad_output",
        "test_swish_backward",
        "values differ",
        ignores,
        absent=(msg("diag.ones"), "grad_tensors"),
    )
    failing_with(
        graded,
        "grad_output",
        "test_swish_gradcheck",
        "gradcheck failed",
        "worst entry: d output",
        msg("diag.gradcheck_grad_output"),
        absent=RAW_MATRICES,
    )
    failing_with(
        graded,
        "sigmoid_only",
        "test_hypot",
        "dL/dx from Hypot.backward: values differ",
        ignores,
        msg("diag.gradcheck_grad_output"),
        absent=(msg("diag.ones"),),
        score=0.5,
    )


def test_a_backward_without_the_product_rule(graded):
    rule = msg("diag.custom_function.product_rule")
    sigmoid_only = msg("diag.custom_function.sigmoid_only")
    for variant in ("product", "second_term"):
        failing_with(
            graded,
            variant,
            "test_swish_backward",
            "values differ",
            rule,
            absent=(sigmoid_only, msg("diag.custom_function.ignores_grad_output")),
        )
        failing_with(graded, variant, "test_swish_gradcheck", "gradcheck failed", "worst entry", absent=RAW_MATRICES)
    failing_with(graded, "sigmoid_only", "test_swish_backward", sigmoid_only, absent=(rule,))
    # another wrong backward gets none of these
    failing_with(
        graded,
        "copy_paste",
        "test_swish_backward",
        msg("diag.sign"),
        absent=(rule, sigmoid_only, msg("diag.custom_function.ignores_grad_output")),
    )


def test_gradients_returned_in_the_wrong_places(graded):
    # (dL/dy, dL/dx): named as swapped, in the check and in the gradcheck summary
    swapped = msg("diag.gradcheck_swapped", got="x", belongs="y", order="x, y")
    failing_with(
        graded,
        "grad_output",
        "test_hypot",
        "dL/dx from Hypot.backward: values differ",
        swapped,
        "x: ",
        "y: ",
        absent=RAW_MATRICES,
        score=0.5,
    )
    # the gradient for x returned for y as well: only y's is named
    copied = msg("diag.gradcheck_swapped", got="y", belongs="x", order="x, y")
    failing_with(
        graded,
        "copy_paste",
        "test_hypot",
        "dL/dy from Hypot.backward: values differ",
        copied,
        "y: ",
        absent=(swapped, "  x: "),
        score=0.5,
    )
    assert all(r["feedback"].count(copied) == 2 for r in graded("copy_paste", "test_hypot"))  # check and gradcheck
    # None for y
    failing_with(
        graded,
        "mixing",
        "test_hypot",
        "dL/dy from Hypot.backward: expected a gradient, got None",
        msg("diag.gradcheck_zero", input="y"),
        absent=(swapped,),
        score=0.5,
    )
    # a list counts as one gradient
    failing_with(
        graded,
        "second_term",
        "test_hypot",
        "incorrect number of gradients (expected 2, got 1)",
        msg("diag.custom_function.gradient_count"),
    )


def test_a_constant_factor_is_not_called_accumulation(graded):
    factor = msg("diag.factor", k=2)
    failing_with(
        graded,
        "product",
        "test_hypot",
        factor,
        "gradcheck failed",
        absent=(msg("diag.multiple", k=2, name="x"), msg("diag.multiple_calls", k=2, calls=2, name="x")),
        score=0.5,
    )


def test_a_backward_that_mixes_elements(graded):
    mixes = msg("diag.gradcheck_mixes")
    failing_with(graded, "mixing", "test_swish_backward", mixes)
    failing_with(graded, "mixing", "test_swish_gradcheck", mixes, absent=(msg("diag.gradcheck_grad_output"),))
    failing_with(graded, "grad_output", "test_swish_gradcheck", absent=(mixes,))


def test_a_sign_lost_for_negative_inputs(graded):
    for variant, check, name in (
        ("abs_x", "test_swish_backward", "x"),
        ("abs_x", "test_hypot", "x"),
        ("sqrt_y", "test_hypot", "y"),
    ):
        failing_with(
            graded,
            variant,
            check,
            "values differ",
            msg("diag.custom_function.lost_sign", name=name),
            absent=(msg("diag.gradcheck_mixes"), msg("diag.sign"), msg("diag.factor", k=2)),
            score=0.5 if check == "test_hypot" else 0.0,
        )
    # gradcheck alone (finite differences entry by entry) is told the same
    failing_with(
        graded,
        "abs_x",
        "test_swish_gradcheck",
        "gradcheck failed",
        msg("diag.custom_function.lost_sign", name="x"),
        absent=RAW_MATRICES,
    )
    # wrong everywhere (every sign flipped, a factor of 2): no lost sign
    for variant, check in (
        ("copy_paste", "test_swish_backward"),
        ("product", "test_hypot"),
        ("copy_paste", "test_swish_gradcheck"),
    ):
        failing_with(
            graded,
            variant,
            check,
            absent=(msg("diag.custom_function.lost_sign", name="x"),),
            score=0.5 if check == "test_hypot" else 0.0,
        )


def test_a_backward_that_is_not_elementwise(graded):
    mixes = msg("diag.gradcheck_mixes")
    # grad_output.mean(): right for one element only; a local derivative reduced, then broadcast
    failing_with(
        graded,
        "sqrt_y",
        "test_swish_backward",
        "values differ",
        mixes,
        absent=(msg("diag.custom_function.lost_sign", name="x"),),
    )
    failing_with(
        graded,
        "reduced",
        "test_hypot",
        "dL/dx from Hypot.backward: values differ",
        mixes,
        absent=(msg("diag.custom_function.lost_sign", name="x"),),
        score=0.5,
    )
    failing_with(graded, "sqrt_y", "test_swish_gradcheck", "gradcheck failed", mixes, absent=RAW_MATRICES)
    # torch.diag builds the Jacobian of a 1-D x only: a matrix x (drawn on every seed) is refused
    for check in ("test_swish_backward", "test_swish_gradcheck"):
        failing_with(graded, "reduced", check, "Swish.apply raised RuntimeError")


def test_shapes_a_vector_answer_gets_wrong(graded):
    # a size-1 axis squeezed away, a matrix flattened: drawn on every seed
    failing_with(graded, "abs_x", "test_gradcheck_input", "expected shape")
    failing_with(graded, "reduced", "test_gradcheck_input", "expected shape")


def test_gradcheck_inputs(graded):
    float32 = msg("diag.gradcheck_float32")
    # float32: gradcheck of the (right) Swish fails, told entry by entry, then why
    passing(graded, "second_term", "test_gradcheck_input")
    failing_with(
        graded,
        "grad_output",
        "test_gradcheck_input",
        "gradcheck of Swish on your gradcheck input",
        float32,
        absent=RAW_MATRICES,
    )
    failing_with(
        graded,
        "sigmoid_only",
        "test_gradcheck_input",
        "expected requires_grad = True, got False",
        msg("diag.custom_function.gradcheck_requires_grad"),
    )
    failing_with(graded, "product", "test_gradcheck_input", "expected is_leaf = True, got False")
    failing_with(graded, "mixing", "test_gradcheck_input", "values of your gradcheck input: values differ")

"""Every misconception in REFERENCE.md is named when a student plants it, and
``autograd.expect_error`` recognises each PyTorch error it knows by name."""

from __future__ import annotations

import pytest
import torch
from conftest import grade_checks

from pytest_autograd_grader.checking.misconceptions import (
    AUTOGRAD_ERRORS,
    Context,
    diagnose_error,
    diagnose_values,
    error_name,
)

# plugins installed here that only slow in-process runs down; the verdicts
# are the grader's own, so student code runs inline (test_submission.py
# covers the sandboxed boundary)
QUIET = ("--grade-inline", "--grade-seed", "3")


# -- misconceptions, planted in a student's module ---------------------------

MISTAKES_CHECKS = """
    import pytest
    import torch

    pytestmark = pytest.mark.grade(concept="graph", points=1)

    X = torch.tensor([[0.5, -1.25, 2.0], [1.5, 0.75, -0.5], [2.5, -2.0, 1.0]], dtype=torch.float64)
    V = torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0], [2.0, 1.5, -0.5]], dtype=torch.float64)
    W = torch.tensor([[0.5, 1.0, -1.5], [2.0, -0.25, 0.75], [1.0, 0.5, 0.125]], dtype=torch.float64)

    def square_sum(x):
        return (x * x).sum()

    def cube(x):
        return x ** 3

    def mean_loss(x):
        return ((x + 2) ** 2).mean()

    def weighted(x, w):
        return ((x @ w) * V).sum()

    def test_multiple(submission, autograd):
        got = submission("mistakes").multiple(X.clone().requires_grad_())
        autograd.check_grad(got, square_sum, (X,), names=["x.grad"])

    @pytest.mark.grade(concept="accumulation")
    def test_fraction(submission, autograd):
        got = submission("mistakes").fraction(X.clone().requires_grad_(), 3)
        autograd.check_grad(got, square_sum, (X,), names=["x.grad"], calls=3, scale=3)

    @pytest.mark.grade(concept="vector_backward")
    def test_ones(submission, autograd):
        got = submission("mistakes").ones(X.clone().requires_grad_(), V)
        autograd.check_grad(got, cube, (X,), grad_outputs=V, names=["x.grad"])

    def test_mean_as_sum(submission, autograd):
        got = submission("mistakes").mean_as_sum(X.clone().requires_grad_())
        autograd.check_grad(got, mean_loss, (X,), names=["x.grad"], mean_over=X.numel())

    def test_mean_twice(submission, autograd):
        got = submission("mistakes").mean_twice(X.clone().requires_grad_())
        autograd.check_grad(got, mean_loss, (X,), names=["x.grad"], mean_over=X.numel())

    def test_sign(submission, autograd):
        got = submission("mistakes").sign(X)
        autograd.check_grad(got, square_sum, (X,), names=["dL/dx"])

    def test_transpose_square(submission, autograd):
        got = submission("mistakes").transpose(X, W, V)
        autograd.check_grad(got, weighted, (X, W), wrt=(1,), names=["dL/dW"])

    def test_transpose_shape(submission, autograd):
        x, w, v = X[:2], torch.ones(3, 4, dtype=torch.float64), torch.arange(8.0, dtype=torch.float64).reshape(2, 4)
        got = submission("mistakes").transpose(x, w, v)
        autograd.check_grad(got, lambda x, w: ((x @ w) * v).sum(), (x, w), wrt=(1,), names=["dL/dW"])

    @pytest.mark.grade(concept="leaf")
    def test_leaf_none(submission, autograd):
        w = submission("mistakes").leaf_unused(X.clone().requires_grad_())
        autograd.check_grad(w.grad, square_sum, (X,), names=["w.grad"], holders=[w])

    @pytest.mark.grade(concept="leaf")
    def test_not_leaf(submission, autograd):
        w = submission("mistakes").not_leaf(X)
        autograd.check_grad(w.grad, square_sum, (X,), names=["w.grad"], holders=[w], role="leaf")

    @pytest.mark.grade(concept="leaf")
    def test_not_leaf_meta(submission, autograd):
        autograd.assert_meta(submission("mistakes").not_leaf(X), "w", is_leaf=True)

    @pytest.mark.grade(concept="leaf")
    def test_holder_as_produced(submission, autograd):
        w = submission("mistakes").good_leaf(X)
        autograd.check_grad(w, square_sum, (X,), names=["w.grad"], holders=[w])

    @pytest.mark.grade(concept="retain_grad")
    def test_intermediate(submission, autograd):
        a = submission("mistakes").intermediate(X.clone().requires_grad_())
        autograd.check_grad(a.grad, lambda a: (a * a).sum(), (X * 2,), names=["a.grad"], holders=[a],
                            role="intermediate")

    @pytest.mark.grade(concept="higher_order")
    @pytest.mark.parametrize("how", ["none", "zero"])
    def test_second(submission, autograd, how):
        got = submission("mistakes").second(X.clone().requires_grad_(), how)
        autograd.check_grad(got, lambda x: cube(x).sum(), (X,), order=2, names=["d2y/dx2"])

    @pytest.mark.grade(concept="no_grad")
    def test_no_graph(submission):
        submission("mistakes").no_graph(X.clone().requires_grad_())

    @pytest.mark.grade(concept="retain_graph")
    def test_backward_twice(submission):
        submission("mistakes").backward_twice(X.clone().requires_grad_())

    @pytest.mark.grade(concept="inplace")
    def test_inplace_leaf(submission):
        submission("mistakes").inplace_leaf(X.clone().requires_grad_())

    @pytest.mark.grade(concept="engine")
    def test_broadcast(submission, autograd):
        b = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
        x = torch.arange(12.0, dtype=torch.float64).reshape(4, 3)
        got = submission("engine").add_backward_bias(x, b)
        autograd.check_grad(got, lambda x, b: ((x + b) ** 2).sum(), (x, b), wrt=(1,), names=["b.grad"])

    @pytest.mark.grade(concept="engine")
    def test_fanout(submission, autograd):
        got = submission("engine").square_backward(X)
        autograd.check_grad(got, square_sum, (X,), names=["x.grad"])

    def test_no_pattern(submission, autograd):
        got = submission("mistakes").noise(X)
        autograd.check_grad(got, square_sum, (X,), names=["x.grad"])
"""

MISTAKES = """
    import torch

    def multiple(x):
        for _ in range(3):
            (x * x).sum().backward()
        return x.grad

    def fraction(x, k):
        for _ in range(k):
            x.grad = None          # zeroed, though accumulation was asked for
            (x * x).sum().backward()
        return x.grad

    def ones(x, v):
        (x ** 3).sum().backward()   # v ignored
        return x.grad

    def mean_as_sum(x):
        ((x + 2) ** 2).sum().backward()
        return x.grad

    def mean_twice(x):
        (((x + 2) ** 2).mean() / x.numel()).backward()
        return x.grad

    def sign(x):
        return -2 * x

    def transpose(x, w, g):
        return g.T @ x              # should be x.T @ g

    def leaf_unused(x):
        w = x.detach().clone().requires_grad_(True)
        (x * x).sum().backward()    # w never used
        return w

    def not_leaf(x):
        w = x.detach().requires_grad_(True) * 1.0
        (w * w).sum().backward()
        return w

    def good_leaf(x):
        w = x.detach().clone().requires_grad_(True)
        (w * w).sum().backward()
        return w

    def intermediate(x):
        a = x * 2
        (a * a).sum().backward()    # no a.retain_grad()
        return a

    def second(x, how):
        g, = torch.autograd.grad((x ** 3).sum(), x)   # no create_graph=True
        return None if how == "none" else torch.zeros_like(g)

    def no_graph(x):
        with torch.no_grad():
            y = (x * x).sum()
        y.backward()

    def backward_twice(x):
        y = (x.exp() * x).sum()
        y.backward()
        y.backward()

    def inplace_leaf(x):
        x += 1
        return x

    def noise(x):
        return 2 * x + torch.linspace(0, 1, x.numel(), dtype=x.dtype).reshape(x.shape)
"""

ENGINE = """
    import numpy as np

    def add_backward_bias(x, b):
        out_grad = 2 * (x.numpy() + b.numpy())
        return out_grad                  # not summed over the broadcast axis

    def square_backward(x):
        x = x.numpy()
        grad = np.zeros_like(x)
        for factor in (x, x):            # y = x * x: x is used twice
            grad = factor * 1.0          # = instead of +=
        return grad
"""


def test_each_misconception_is_diagnosed(pytester):
    graded = grade_checks(pytester, MISTAKES_CHECKS, *QUIET, mistakes=MISTAKES, engine=ENGINE)
    expected = {
        "test_multiple": ["x.grad: values differ", "3 times too large", "zero it"],
        "test_fraction": ["1/3 of the expected one", "Accumulation was asked for", "3 backward calls"],
        "test_ones": ["vector-Jacobian product with a vector of ones"],
        "test_mean_as_sum": ["9 times too large, and 9 is the number of elements averaged", "sum where a mean"],
        "test_mean_twice": ["1/9 of the expected one", "mean"],
        "test_sign": ["dL/dx: values differ", "sign is flipped"],
        "test_transpose_square": ["dL/dW: values differ", "transposed"],
        "test_transpose_shape": ["dL/dW: expected shape (3, 4), got shape (4, 3)", "transposed"],
        "test_leaf_none": ["w.grad: expected a gradient, got None", "this leaf has no gradient"],
        "test_not_leaf": [
            "w.grad: expected a gradient, got None",
            "made by an operation (it has grad_fn MulBackward0)",
        ],
        "test_not_leaf_meta": ["w: expected is_leaf = True, got False", "grad_fn MulBackward0"],
        "test_intermediate": ["a.grad: expected a gradient, got None", ".retain_grad()"],
        "test_second[none]": ["d2y/dx2: expected a gradient, got None", "create_graph=True"],
        "test_second[zero]": ["second derivative is zero everywhere", "create_graph=True"],
        "test_no_graph": [
            "raised RuntimeError: element 0 of tensors does not require grad",
            "(at mistakes.py:",
            "the tensor has no graph",
        ],
        "test_backward_twice": ["backward through the graph a second time", "retain_graph=True"],
        "test_inplace_leaf": [
            "a leaf Variable that requires grad is being used in an in-place operation",
            "(at mistakes.py:",
            "torch.no_grad()",
        ],
        "test_broadcast": [
            "b.grad: expected shape (3,), got shape (4, 3)",
            "broadcast shape (4, 3) instead of the parameter's shape (3,)",
        ],
        "test_fanout": ["1/2 of the expected one", "+= instead of"],
        "test_no_pattern": ["x.grad: values differ"],
    }
    for name, texts in expected.items():
        check = graded.checks[f"test_checks.py::{name}"]
        assert check["status"] == "failed", (name, check)
        for text in texts:
            assert text in check["feedback"], (name, text, check["feedback"])
    assert "Likely mistake" not in graded.check("test_no_pattern")["feedback"]
    assert "Accumulation was asked for" not in graded.check("test_fanout")["feedback"]
    assert "Accumulation was asked for" not in graded.check("test_mean_twice")["feedback"]
    # passing the tensor itself compares its .grad, not its data
    assert graded.check("test_holder_as_produced")["status"] == "passed"
    assert not [c for c in graded.report["checks"] if c["status"] == "error"]


GRADCHECK_CHECKS = """
    import pytest
    import torch

    pytestmark = pytest.mark.grade(concept="custom_function", points=2)

    X = torch.tensor([0.25, -0.5, 1.0], dtype=torch.float64)

    def test_float64_right(submission, autograd):
        autograd.gradcheck(submission("custom").MyExp.apply, (X,))

    def test_float32_inputs(submission, autograd):
        autograd.gradcheck(submission("custom").MyExp.apply, (X.float(),), what="MyExp")

    def test_float64_wrong(submission, autograd):
        autograd.gradcheck(submission("custom").BadExp.apply, (X,), what="BadExp")
"""

CUSTOM = """
    import torch

    class MyExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    class BadExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp()

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x
"""


def test_gradcheck_float32_is_diagnosed(pytester):
    graded = grade_checks(pytester, GRADCHECK_CHECKS, *QUIET, custom=CUSTOM)
    assert graded.check("test_float64_right")["status"] == "passed"
    f32 = graded.check("test_float32_inputs")
    assert f32["status"] == "failed"
    assert "MyExp: gradcheck failed" in f32["feedback"] and "gradcheck needs float64 inputs" in f32["feedback"]
    wrong = graded.check("test_float64_wrong")
    assert wrong["status"] == "failed" and "BadExp: gradcheck failed" in wrong["feedback"]
    assert "float64" not in wrong["feedback"].split("gradcheck failed", 1)[0]
    assert "gradcheck needs float64" not in wrong["feedback"]
    assert graded.report["score"] == 2 and graded.report["max_score"] == 6


# -- the rules themselves ------------------------------------------------------


def t(*values):
    return torch.tensor(values, dtype=torch.float64)


@pytest.mark.parametrize(
    "produced,expected,context,text",
    [
        (t(2, 4, 6), t(1, 2, 3), Context(), "2 times too large"),
        (t(2, 4, 6), t(1, 2, 3), Context(mean_over=2), "number of elements averaged"),
        (t(-1, -2, -3), t(1, 2, 3), Context(), "sign is flipped"),
        (t(0.5, 1, 1.5), t(1, 2, 3), Context(calls=2), "Accumulation was asked for"),
        (t(0.5, 1, 1.5), t(1, 2, 3), Context(), "+= instead of assigning with ="),
        (t(1, 1, 1), t(1, 2, 3), Context(ones_vjp=t(1, 1, 1)), "vector of ones"),
        (t(0, 0, 0), t(1, 2, 3), Context(order=2), "zero everywhere"),
        (t(2, 4, 6), t(1, 2, 3), Context(calls=1), "after a single backward, so a constant factor"),
    ],
)
def test_value_rules(produced, expected, context, text):
    assert text in diagnose_values(produced, expected, context)


@pytest.mark.parametrize(
    "produced,expected,context",
    [
        (t(1, 2, 3.5), t(1, 2, 3), Context()),  # no constant ratio
        (t(1, 2, 3), t(1, 2, 3), Context(ones_vjp=t(1, 2, 3))),  # the given vector was ones: right answer
        (t(0.5, 1, 1.5), t(1, 2, 3), Context(calls=3)),  # 1/2 is not 1/3: no accumulation story
        (t(3, 6, 9), t(1, 2, 3), Context(mean_over=2)),  # 3 is not N: a plain multiple
    ],
)
def test_value_rules_stay_quiet_or_precise(produced, expected, context):
    hint = diagnose_values(produced, expected, context)
    if context.mean_over == 2:
        assert "3 times too large" in hint and "averaged" not in hint
    else:
        assert hint is None


# -- expect_error: each known PyTorch error, produced for real ----------------

RAISE = """
    import torch

    def _x():
        return torch.tensor([1.0, 2.0], requires_grad=True)

    def backward_twice():
        y = (_x().exp()).sum()
        y.backward()
        y.backward()

    def inplace_leaf():
        _x().add_(1)

    def implicit_grad():
        (_x() * 2).backward()

    def shape_mismatch():
        (_x() * 2).backward(torch.ones(3))

    def no_grad_fn():
        torch.ones(2).sum().backward()

    def inplace_saved():
        x = _x()
        y = x.exp()
        y.add_(1)
        y.sum().backward()

    def nonleaf_requires_grad():
        (_x() * 2).requires_grad_(False)

    def int_requires_grad():
        torch.ones(2, dtype=torch.long, requires_grad=True)

    def int_from_asarray():
        torch.asarray([1, 2], requires_grad=True)

    def int_from_randperm():
        torch.randperm(3, requires_grad=True)

    def unused_input():
        x, z = _x(), _x()
        torch.autograd.grad((x * 2).sum(), [x, z])

    def catch(name):
        try:
            globals()[name]()
        except RuntimeError as exc:
            return exc
        return "no error"

    def quiet():
        return (_x() * 2).sum()

    def other_error():
        raise ValueError("not an autograd error")

    def stub():
        raise NotImplementedError

    TEXT = "Trying to backward through the graph a second time (or directly access saved tensors)"

    def forged_created():
        return RuntimeError(TEXT)

    def forged_raised():
        try:
            raise RuntimeError(TEXT)
        except RuntimeError as exc:
            return exc

    def forged_raising():
        raise RuntimeError(TEXT)
"""


def test_expect_error_matches_each_real_error(pytester):
    names = list(AUTOGRAD_ERRORS)
    checks = f"""
        import pytest

        pytestmark = pytest.mark.grade(concept="retain_graph", points=1)

        NAMES = {names!r}

        @pytest.mark.parametrize("name", NAMES)
        def test_raised(submission, autograd, name):
            record = autograd.expect_error(name, getattr(submission("errors"), name))
            assert record.type == "RuntimeError"

        @pytest.mark.parametrize("name", NAMES)
        def test_returned(submission, autograd, name):
            autograd.expect_error(name, submission("errors").catch(name), what="the caught error")

        @pytest.mark.parametrize("name", NAMES)
        def test_wrong_error(submission, autograd, name):
            other = NAMES[(NAMES.index(name) + 1) % len(NAMES)]
            autograd.expect_error(name, getattr(submission("errors"), other))

        def test_no_error(submission, autograd):
            autograd.expect_error("backward_twice", submission("errors").quiet)

        def test_returned_no_error(submission, autograd):
            autograd.expect_error("backward_twice", submission("errors").catch("quiet"), what="the caught error")

        def test_other_exception(submission, autograd):
            autograd.expect_error("inplace_leaf", submission("errors").other_error)

        def test_stub(submission, autograd):
            autograd.expect_error("inplace_leaf", submission("errors").stub)

        def test_unknown_name(submission, autograd):
            autograd.expect_error("no_such_error", submission("errors").quiet)

        @pytest.mark.parametrize("how", ["created", "raised"])
        def test_forged_and_returned(submission, autograd, how):
            autograd.expect_error("backward_twice", getattr(submission("errors"), "forged_" + how)())

        def test_forged_and_raising(submission, autograd):
            autograd.expect_error("backward_twice", submission("errors").forged_raising)

        @pytest.mark.parametrize("how", ["asarray", "randperm"])
        def test_int_requires_grad_from(submission, autograd, how):
            autograd.expect_error("int_requires_grad", getattr(submission("errors"), "int_from_" + how))
    """
    graded = grade_checks(pytester, checks, *QUIET, errors=RAISE)
    # every factory that takes requires_grad= raises it for real, not only torch.ones
    for how in ("asarray", "randperm"):
        made = graded.check(f"test_int_requires_grad_from[{how}]")
        assert made["status"] == "passed", made["feedback"]
    for name in names:
        assert graded.check(f"test_raised[{name}]")["status"] == "passed", graded.check(f"test_raised[{name}]")[
            "feedback"
        ]
        assert graded.check(f"test_returned[{name}]")["status"] == "passed", graded.check(f"test_returned[{name}]")
        wrong = graded.check(f"test_wrong_error[{name}]")
        assert wrong["status"] == "failed"
        assert f"expected PyTorch's error '{AUTOGRAD_ERRORS[name][0][0]}', got RuntimeError:" in wrong["feedback"]
    assert (
        "errors.quiet: expected PyTorch's error 'backward through the graph a second time', but no error was raised"
        in graded.check("test_no_error")["feedback"]
    )
    assert (
        "the caught error: expected the caught error 'backward through the graph a second time', got a str"
        in graded.check("test_returned_no_error")["feedback"]
    )
    assert "got ValueError: not an autograd error" in graded.check("test_other_exception")["feedback"]
    stub = graded.check("test_stub")
    assert stub["status"] == "failed" and "not implemented yet: errors.stub" in stub["feedback"]
    unknown = graded.check("test_unknown_name")
    assert unknown["status"] == "error" and "unknown error 'no_such_error'" in unknown["feedback"]
    assert (
        "this RuntimeError was never raised, not by PyTorch"
        in graded.check("test_forged_and_returned[created]")["feedback"]
    )
    for forged in ("test_forged_and_returned[raised]", "test_forged_and_raising"):
        assert "this RuntimeError was raised by your own code, not by PyTorch" in graded.check(forged)["feedback"]
    n = len(names)
    # a forged error with PyTorch's very words earns nothing
    forged = [
        graded.check(c)
        for c in ("test_forged_and_returned[created]", "test_forged_and_returned[raised]", "test_forged_and_raising")
    ]
    assert all(c["score"] == 0 and c["status"] == "failed" for c in forged), forged
    # the two int_requires_grad checks made by asarray and randperm pass too
    assert graded.report["score"] == 2 * n + 2 and graded.report["max_score"] == 3 * n + 10


@pytest.mark.parametrize("name", list(AUTOGRAD_ERRORS))
def test_every_error_has_a_diagnosis(name):
    text = AUTOGRAD_ERRORS[name][0][0]
    assert error_name(f"RuntimeError: {text} (details)") == name
    assert diagnose_error(text).startswith("Likely mistake:")


def test_missing_graph_while_differentiating_a_gradient_means_create_graph():
    message = "element 0 of tensors does not require grad and does not have a grad_fn"
    assert "create_graph=True" in diagnose_error(message, Context(order=2))
    assert "torch.no_grad()" in diagnose_error(message)


# Two gradings in one process, run in a fresh Python (below): the grader's
# boundary modules are first imported inside the first session, as in a new
# notebook kernel, and never touched in the test process itself.
TWO_SESSIONS = '''
import json
import textwrap

import torch  # noqa: F401  (loaded once, as in a kernel: pytester would drop a torch the sessions loaded)

pytest_plugins = ["pytester"]


def grade(pytester, checks, *args, **students):
    student = pytester.path / "student"
    student.mkdir(exist_ok=True)
    for name, source in students.items():
        (student / f"{{name}}.py").write_text(textwrap.dedent(source))
    pytester.makepyfile(test_checks=checks)
    pytester.runpytest("-p", "no:cacheprovider", "--grade", "--grade-json", "r.json", "test_checks.py",
                       "--grade-submission=student", "--grade-seed", "3", *args)
    return json.loads((pytester.path / "r.json").read_text())


FIRST = """
import pytest

pytestmark = pytest.mark.grade(concept="leaf")

def test_stub(submission, autograd, grade_rng):
    autograd.assert_equal(submission("leaf").find_leaves(grade_rng.randn(2)), [True], "leaves")
"""

SECOND = """
import pytest

pytestmark = pytest.mark.grade(concept="retain_graph", points=1)

@pytest.mark.parametrize("name", {names!r})
def test_raised(submission, autograd, name):
    autograd.expect_error(name, getattr(submission("errors"), name))

@pytest.mark.parametrize("name", {names!r})
def test_returned(submission, autograd, name):
    autograd.expect_error(name, submission("errors").catch(name), what="the caught error")
"""


def test_two_sessions(pytester):
    first = grade(pytester, FIRST, "--grade-lang", "zh", leaf="def find_leaves(x):\\n    raise NotImplementedError\\n")
    assert first["lang"] == "zh" and first["checks"][0]["status"] == "failed"
    graded = grade(pytester, SECOND, "--grade-inline", errors={errors!r})
    wrong = [(c["id"], c["feedback"]) for c in graded["checks"] if c["status"] != "passed"]
    assert graded["checks"] and wrong == []
'''


def test_expect_error_after_an_earlier_session_in_the_same_process(pytester):
    """A grading session never depends on what an earlier one in the same
    process did (a notebook kernel, watch mode, pytester's in-process runs).
    Modules of the grader first imported during a session are dropped from
    sys.modules after it (pytester restores its snapshot) while the package
    keeps them as attributes: the next session then imports ``encode`` afresh
    (``from .encode import``) but gets the earlier ``tracing``/``call_facts``
    (``from . import``). The link from an error to the torch call that raised
    it must not live in one copy's module state the other copy never reads.
    Run in a fresh Python, so that no test here imports a second copy."""
    pytester.makepyfile(test_two_sessions=TWO_SESSIONS.format(names=list(AUTOGRAD_ERRORS), errors=RAISE))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "test_two_sessions.py")
    assert result.ret == 0, "\n".join(result.outlines[-40:])

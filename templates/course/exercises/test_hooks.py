import pytest

from pytest_autograd_grader import msg, same, values

pytestmark = pytest.mark.grade(concept="hooks")

# x of each rank, with a size-1 axis, a single element, and both signs
ANY_SHAPE = ("rank 1", "rank 2", "size-1 axis", "one element", "negative", "positive")


def loss(x):
    return (x * x.sin()).sum()


def likely_mistake(produced, g, s):
    """The course's diagnosis of a wrong x.grad, or None (the grader's own then)."""
    half_right = {"unscaled": -g, "not_negated": s * g, "no_return": g}
    for name, wrong in half_right.items():
        if produced is not None and same(produced, wrong):
            return msg(f"diag.hooks.{name}", s=s)
    return None


@pytest.mark.grade(points=2, inputs=ANY_SHAPE)
def test_reversed_grad(submission, autograd, grade_rng, grade_device):
    """reversed_grad: the hook turns x's gradient into -s times it"""
    s = 1.5 + grade_rng.randint(0, 6) / 4  # never 1, so -g and -s*g always differ
    for shape in grade_rng.shapes(ranks=(1, 2)):
        x = grade_rng.randn(*shape, requires_grad=True, mixed=True)
        got = submission("hooks").reversed_grad(x, s)
        hooks = submission.trace.count("register_hook")
        (g,) = autograd.grad(loss, (x,))
        autograd.assert_grad(got, -s * g, msg("hooks.label.grad", s=s),
                             diagnose=lambda: likely_mistake(values(got), g, s))
        autograd.instruction(hooks >= 1, "hooks.req.hook")

"""The files of a new topic, as text: what ``new-topic`` writes.

They are the author's to edit, so they are in English whatever the
grader's language. The worked exercise is chosen so that the one check
catches the generated mutants of its solution on every seed: the divisor
d is never 1 (a dropped or inverted factor), x holds both signs and every
class of shape (sum and mean, sign flips, a changed power), and the loss
has no commutative product whose swapped operands would be the same.
"""

from __future__ import annotations

from dataclasses import dataclass

FUNCTION = "scaled_grad"  # the worked exercise's function
MISTAKE = "unscaled"  # the planted mistake's file and diagnosis


@dataclass(frozen=True)
class Topic:
    name: str  # the module's name: exercises/<name>.py
    concept: str  # the concept id its checks count towards
    title: str  # the concept's title (one line)

    @property
    def diagnosis(self) -> str:
        return f"diag.{self.name}.{MISTAKE}"

    @property
    def label(self) -> str:
        return f"{self.name}.label.grad"


def _fill(template: str, topic: Topic) -> str:
    return (
        template.replace("__NAME__", topic.name)
        .replace("__CONCEPT__", topic.concept)
        .replace("__TITLE__", _in_docstring(topic.title))
        .replace("__FUNCTION__", FUNCTION)
        .replace("__DIAGNOSIS__", topic.diagnosis)
        .replace("__LABEL__", topic.label)
        .replace("__MISTAKE__", MISTAKE)
    )


def _in_docstring(text: str) -> str:
    """``text`` safe inside a triple-quoted docstring."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def stub(topic: Topic) -> str:
    return _fill(STUB, topic)


def solution(topic: Topic) -> str:
    return _fill(SOLUTION, topic)


def mistake(topic: Topic) -> str:
    return _fill(PLANTED, topic)


def checks(topic: Topic) -> str:
    return _fill(CHECKS, topic)


STUB = '''"""__TITLE__.

TODO (author): this docstring is the first thing a student reads about the
topic. Teach its idea in a few lines, with a small example that runs (see
templates/course/exercises/hooks.py). The exercise below is a worked
placeholder: replace it with yours, and change solutions/__NAME__.py,
test___NAME__.py and mistakes/__NAME__/ with it.

`L.backward()` fills `x.grad` with dL/dx for every leaf x that L was
computed from; dividing L by a number d divides every gradient by d.
"""

import torch


def __FUNCTION__(x: torch.Tensor, d: float) -> torch.Tensor:
    """What to compute: the gradient of L = (x ** 3).sum() / d with respect
    to x, by autograd: build L, call L.backward(), return x.grad.

    Args:
        x: a float64 leaf with requires_grad=True, of any shape.
        d: a Python float greater than 1.

    Returns:
        x.grad: a tensor of x's shape, dtype and device.

    Example:
        >>> x = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
        >>> __FUNCTION__(x, 2.0)  # dL/dx = 3 * x ** 2 / d
        tensor([1.5000, 6.0000], dtype=torch.float64)
    """
    raise NotImplementedError("__FUNCTION__: build L, call L.backward(), return x.grad")
'''

SOLUTION = '''"""Reference solution of the topic "__TITLE__": the checks give it full marks."""

import torch


def __FUNCTION__(x: torch.Tensor, d: float) -> torch.Tensor:
    loss = (x ** 3).sum() / d
    loss.backward()
    return x.grad
'''

PLANTED = '''"""L is not divided by d, so x.grad is d times too large.

expected diagnosis: __DIAGNOSIS__
check: test___FUNCTION__
"""

import torch


def __FUNCTION__(x: torch.Tensor, d: float) -> torch.Tensor:
    loss = (x ** 3).sum()
    loss.backward()
    return x.grad
'''

CHECKS = '''"""The checks of the topic "__TITLE__": one worked check to copy from.

    pytest --grade exercises/                                # the stub: 0, "not implemented"
    pytest --grade exercises/ --grade-submission solutions/  # the solution: full marks
    autograd-grader audit exercises --solutions solutions    # the wrong answers the checks let through

mistakes/__NAME__/ holds wrong answers the checks must catch on every seed,
each named by its diagnosis; add one for every mistake you see students make.
"""

import pytest

from pytest_autograd_grader import msg, same, values

# Every check in this file counts towards the concept "__CONCEPT__", which
# conftest.py registers (pytest_grade_concepts) with its title.
pytestmark = pytest.mark.grade(concept="__CONCEPT__")

# The classes of input the check must reach; the report lists any it missed.
ANY_SHAPE = ("rank 1", "rank 2", "size-1 axis", "one element", "negative", "positive")


def loss(x, d):
    # The task's L, written once: the expected gradient is computed from it.
    return (x ** 3).sum() / d


def likely_mistake(produced, expected, d):
    """The course's name for a wrong x.grad, or None (the grader's generic
    diagnoses speak then): each entry is what a half-right answer returns.
    Its text is a message of conftest.py, in English and Chinese."""
    half_right = {"__MISTAKE__": d * expected}
    for name, wrong in half_right.items():
        if produced is not None and same(produced, wrong):
            return msg(f"diag.__NAME__.{name}", d=d)
    return None


# points=2: what the check is worth; inputs=: the classes it promises to reach.
@pytest.mark.grade(points=2, inputs=ANY_SHAPE)
def test___FUNCTION__(submission, autograd, grade_rng, grade_device):
    """__FUNCTION__: x.grad of L = (x ** 3).sum() / d"""
    # grade_rng draws afresh on every seed (--grade-seed). d is never 1, so an
    # answer that forgets the division (or multiplies) can never pass by luck.
    d = 1.5 + grade_rng.randint(0, 6) / 4
    # One shape of each rank, one with a size-1 axis, one single element.
    for shape in grade_rng.shapes(ranks=(1, 2)):
        # A float64 leaf on the check's device (grade_device: cpu, or cuda
        # where there is one), holding negative and positive values.
        x = grade_rng.randn(*shape, requires_grad=True, mixed=True)
        # The student's function, run in the sandbox; a crash costs this check only.
        got = submission("__NAME__").__FUNCTION__(x, d)
        # The expected gradient, from torch.autograd on a fresh copy of x.
        (expected,) = autograd.grad(lambda x: loss(x, d), (x,))
        # Compare: on a miss the student sees expected against produced, and
        # diagnose= names the mistake when it recognises one.
        autograd.assert_grad(got, expected, msg("__LABEL__", d=d),
                             diagnose=lambda: likely_mistake(values(got), expected, d))
'''

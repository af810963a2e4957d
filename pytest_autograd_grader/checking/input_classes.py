"""The classes of inputs a check can draw, named once: a check declares the
ones its exercise's docstring allows (``grade(inputs=...)``), ``grade_rng``
notes the ones each drawn tensor belongs to, and a check's report lists
what it drew and what it declared but never drew on this seed.

A wrong answer that is right only for some inputs (a loop that handles 1-D
only, a ``.squeeze()`` that collapses a size-1 axis, a ``mean`` that equals
the ``sum`` for one element, a derivative that loses the sign of negative
inputs, the wrong side of a kink) earns full marks on every seed that never
draws those inputs. Declared classes drawn on every seed close that door.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# rank r: a tensor with r dimensions; "size-1 axis": an axis of size 1 in a
# tensor of more than one element; "one element": a single element of any
# rank; "negative"/"positive": at least one element below/above 0; "zero":
# at least one element exactly 0 (where a kink or a branch is specified)
INPUT_CLASSES = (
    "rank 0",
    "rank 1",
    "rank 2",
    "rank 3",
    "rank 4",
    "size-1 axis",
    "one element",
    "negative",
    "positive",
    "zero",
)


def classes_of(tensor: Any) -> set[str]:
    """The input classes one tensor (or numpy array) belongs to."""
    shape = tuple(tensor.shape)
    numel = 1
    for size in shape:
        numel *= size
    found = {f"rank {len(shape)}"} if len(shape) <= 4 else set()
    if numel == 1:
        found.add("one element")
    elif numel > 1 and 1 in shape:
        found.add("size-1 axis")
    if numel:
        values = tensor.detach() if hasattr(tensor, "detach") else tensor
        if bool((values < 0).any()):
            found.add("negative")
        if bool((values > 0).any()):
            found.add("positive")
        if bool((values == 0).any()):
            found.add("zero")
    return found


def unknown_classes(declared: Iterable[Any]) -> list[Any]:
    """The names in ``declared`` that are not input classes."""
    return [name for name in declared if name not in INPUT_CLASSES]


def missing_classes(declared: Iterable[str], drawn: Iterable[str]) -> list[str]:
    """The declared classes not drawn, in the vocabulary's order."""
    seen = set(drawn)
    wanted = set(declared)
    return [name for name in INPUT_CLASSES if name in wanted and name not in seen]


def ordered(classes: Iterable[str]) -> list[str]:
    """Classes in the vocabulary's order, for reports that read the same on every run."""
    present = set(classes)
    return [name for name in INPUT_CLASSES if name in present]

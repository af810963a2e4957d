"""Per-check random inputs that depend on the run's seed and the check's id
only, so neither test order nor the xdist worker changes them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from .input_classes import classes_of

if TYPE_CHECKING:
    # aliased: the fields named torch and numpy hide the modules in the class body
    from numpy.random import Generator as NumpyGenerator
    from torch import Generator as TorchGenerator
    from torch import Tensor
    from torch import dtype as TorchDtype

T = TypeVar("T")


def check_id(nodeid: str) -> str:
    """The part of a check's node id that names it wherever pytest runs:
    the checks file's name and the test's name with its parameters
    (``test_leaf.py::test_which_are_leaves[cpu]``), without the directories,
    which depend on the rootdir and the invocation directory."""
    path, sep, rest = nodeid.partition("::")
    return f"{path.replace(chr(92), '/').rsplit('/', 1)[-1]}{sep}{rest}"


def check_seed(seed: int, nodeid: str) -> int:
    """The seed of one check: the run's seed and the check's ``check_id``."""
    digest = hashlib.sha256(f"{seed}\0{check_id(nodeid)}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


@dataclass
class GradeRng:
    """The ``grade_rng`` fixture: ``torch`` is a CPU ``torch.Generator`` and
    ``numpy`` a ``numpy.random.Generator``, both seeded for this check.

    Tensors are drawn on the CPU and then moved, so a seed gives the same
    values on every device. ``drawn`` holds the input classes
    (``input_classes.INPUT_CLASSES``) of every tensor drawn or ``note``d,
    which the check's report lists beside the ones ``grade(inputs=...)``
    declares.
    """

    seed: int
    torch: TorchGenerator
    numpy: NumpyGenerator
    device: str = "cpu"
    drawn: set[str] = field(default_factory=set)

    @classmethod
    def create(cls, seed: int, device: str = "cpu") -> GradeRng:
        import numpy
        import torch

        generator = torch.Generator()
        generator.manual_seed(seed)
        return cls(seed=seed, torch=generator, numpy=numpy.random.default_rng(seed), device=device)

    def randn(
        self,
        *shape: int,
        dtype: TorchDtype | None = None,
        requires_grad: bool = False,
        device: str | None = None,
        low: float | None = None,
        mixed: bool = False,
        zeros: int = 0,
    ) -> Tensor:
        """Normal samples (float64 unless ``dtype`` says otherwise) on the
        check's device; ``low`` shifts them away from zero, e.g. for log.
        ``mixed=True`` makes sure a tensor of two or more elements holds a
        negative and a positive value; ``zeros=k`` sets k elements (at
        random places) to exactly 0, for a kink or a branch at 0."""
        import torch

        t = torch.randn(tuple(shape), generator=self.torch, dtype=dtype or torch.float64)  # () gives 0-D
        if low is not None:
            t = t.abs() + low
        if mixed or zeros:
            self._place_signs(t.view(-1), mixed, zeros)
        self.drawn |= classes_of(t)
        t = t.to(device or self.device)
        return t.requires_grad_(requires_grad)

    def _place_signs(self, flat: Tensor, mixed: bool, zeros: int) -> None:
        import torch

        # only these draws take from the generator, so checks that ask for
        # neither see the values they always saw
        places = torch.randperm(flat.numel(), generator=self.torch)
        if mixed and flat.numel() >= 2:
            flat[places[0]] = -flat[places[0]].abs() - 0.25
            flat[places[1]] = flat[places[1]].abs() + 0.25
        if zeros:
            start = 2 if mixed and flat.numel() >= 2 + zeros else 0
            flat[places[start : start + zeros]] = 0.0

    def note(self, *tensors: Any) -> None:
        """Count tensors the check made itself (the tutorial's values, a
        tensor built from drawn ones) among the inputs it drew."""
        for tensor in tensors:
            self.drawn |= classes_of(tensor)

    def randint(self, low: int, high: int) -> int:
        """A whole number in [low, high], both ends included, as
        ``random.randint`` (``self.numpy.integers`` leaves ``high`` out)."""
        return int(self.numpy.integers(low, high + 1))

    def shape(self, ndim: int = 1, low: int = 1, high: int = 5) -> tuple[int, ...]:
        """A random shape with ``ndim`` dimensions of sizes in [low, high]."""
        return tuple(self.randint(low, high) for _ in range(ndim))

    def shapes(
        self,
        ranks: Iterable[int] = (1, 2),
        low: int = 2,
        high: int = 4,
        size_one: bool = True,
        one_element: bool = True,
    ) -> list[tuple[int, ...]]:
        """Shapes that cover every class of shape on every seed: one of each
        rank in ``ranks`` with sizes in [low, high] (``low`` of 2 or more),
        then, for the highest rank, the same shape with one axis (chosen at
        random) of size 1 (``size_one``, for ranks of 2 or more), and a single
        element of that rank (``one_element``)."""
        ranks = sorted(ranks)
        found = [self.shape(ndim=r, low=max(low, 2), high=max(high, low, 2)) for r in ranks]
        top = found[-1] if found else ()
        if size_one and len(top) >= 2:
            axis = self.randint(0, len(top) - 1)
            found.append(top[:axis] + (1,) + top[axis + 1 :])
        if one_element and ranks:
            found.append((1,) * ranks[-1])
        return found

    def choice(self, options: Iterable[T]) -> T:
        """One of ``options``, drawn from the check's seed."""
        options = list(options)
        return options[self.randint(0, len(options) - 1)]

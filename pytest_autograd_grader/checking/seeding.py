"""Per-check random inputs that depend on the run's seed and the check's id
only, so neither test order nor the xdist worker changes them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any


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
    values on every device.
    """

    seed: int
    torch: Any
    numpy: Any
    device: str = "cpu"

    @classmethod
    def create(cls, seed: int, device: str = "cpu") -> "GradeRng":
        import numpy
        import torch

        generator = torch.Generator()
        generator.manual_seed(seed)
        return cls(seed=seed, torch=generator, numpy=numpy.random.default_rng(seed), device=device)

    def randn(self, *shape: int, dtype=None, requires_grad: bool = False, device: str | None = None,
              low: float | None = None):
        """Normal samples (float64 unless ``dtype`` says otherwise) on the
        check's device; ``low`` shifts them away from zero, e.g. for log."""
        import torch

        t = torch.randn(*shape, generator=self.torch, dtype=dtype or torch.float64)
        if low is not None:
            t = t.abs() + low
        t = t.to(device or self.device)
        return t.requires_grad_(requires_grad)

    def integers(self, low: int, high: int) -> int:
        """A whole number in [low, high], both ends included."""
        return int(self.numpy.integers(low, high + 1))

    def shape(self, ndim: int = 1, low: int = 1, high: int = 5) -> tuple[int, ...]:
        """A random shape with ``ndim`` dimensions of sizes in [low, high]."""
        return tuple(self.integers(low, high) for _ in range(ndim))

    def choice(self, options):
        options = list(options)
        return options[self.integers(0, len(options) - 1)]

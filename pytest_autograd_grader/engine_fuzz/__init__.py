"""The engine track's differential fuzzing: random programs (their format
and builder ``builder``, the strategies that draw them ``programs``) run
on the student's numpy engine in the worker and in torch.autograd in the
grader (``interpret``), compared (``differences``) and shrunk to the
smallest program that disagrees (``fuzz``), told as Python with a
diagnosis (``render``, ``feedback``).

A course uses it through ``fuzz_engine`` (``from pytest_autograd_grader
import fuzz_engine``), the one name here that is public.

Nothing here imports torch or hypothesis at import time:
``interpret.run_engine`` runs in the student's worker, which may have no
torch at all, and hypothesis is the ``engine`` extra, which a course opts
into."""

from __future__ import annotations

from typing import Any

# the kinds of program fuzz_engine draws (programs.GENERATORS), one check each in the shipped course
KINDS = ("ops", "broadcasting", "traversal", "leaf", "accumulation", "retain_graph", "vector_backward")


def fuzz_engine(engine: Any, kind: str, grade_rng: Any, device: str = "cpu") -> None:
    """Fuzz a student's numpy autograd engine against torch.autograd; fail
    the check with the smallest program that disagrees, as Python the
    student can run, and the likely mistake.

    ``engine``: the student's engine module as the check loaded it,
    ``submission("engine", numpy_only=True)`` (any module name; it is the
    one the runnable program imports, and what it must define is what
    ``exercises/engine.py`` specifies: ``Tensor``, ``backward``,
    ``no_grad``). Programs run there in batches, one ``engine.run`` call
    each.

    ``kind``: which behaviours, one of ``KINDS``: ``"ops"`` (each op's
    local derivative and node name, before the student's backward pass is
    needed), ``"broadcasting"`` (gradients summed back to an input's
    shape), ``"traversal"`` (fan-out, diamonds, reused intermediates),
    ``"leaf"`` (is_leaf, requires_grad, .grad only on leaves),
    ``"accumulation"`` (.grad adds up, zero_grad, no_grad),
    ``"retain_graph"`` (a second backward through a freed graph raises),
    ``"vector_backward"`` (backward of a non-scalar with a gradient).

    ``grade_rng``: the check's ``grade_rng`` fixture; its seed decides
    every program drawn (the same programs for every student of a run).
    ``device``: the check's ``grade_device``, where torch computes the
    expected results.

    Without hypothesis (the grader's ``engine`` extra) the check is
    ``error`` with a message that names the extra: a course's missing
    dependency is never the student's failure."""
    from ..i18n import msg
    from ..outcomes import CheckError

    if kind not in KINDS:
        raise CheckError(msg("engine.unknown_kind", kind=kind, kinds=", ".join(KINDS)))
    try:
        import hypothesis  # noqa: F401  (the search and its shrinking)
    except ImportError:
        raise CheckError(msg("engine.needs_hypothesis")) from None
    from .fuzz import check

    check(engine, kind, grade_rng, device)

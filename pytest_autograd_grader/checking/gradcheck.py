"""What a failed ``torch.autograd.gradcheck`` of a student's function means:
the Jacobians it compared, computed again from the calls gradcheck already
made, told entry by entry (how many disagree, the worst one) with the
likely mistake behind them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..boundary.shortening import shorten
from ..i18n import msg
from ..outcomes import GradeFailure
from .gradcheck_calls import StudentCalls, asked_ahead, remote_function, tensors_key
from .misconceptions import Context, diagnose_values

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True)
class Jacobians:
    """What gradcheck compares, for each input (output elements x input
    elements): ``numerical``, central differences of the student's forward,
    and ``analytical``, the student's backward of each basis vector; plus
    ``twice``, the backward of twice the first basis vector (None for an
    empty output), which shows whether backward uses grad_output."""

    out: Tensor
    numerical: list[Tensor]
    analytical: list[Tensor]
    twice: list[Tensor] | None


Forward = Callable[[tuple["Tensor", ...]], "Tensor"]
Backward = Callable[[tuple["Tensor", ...], tuple["Tensor", ...]], tuple["Tensor | None", ...]]


def jacobians(forward: Forward, backward: Backward, leaves: Sequence[Tensor], eps: float) -> Jacobians | None:
    """The Jacobians gradcheck compares, computed here so that a failure
    can be told entry by entry, the numerical ones perturbed exactly as
    gradcheck perturbs the inputs. ``forward(xs)`` and
    ``backward(xs, grads)`` remember what gradcheck already asked, so
    this costs the student's code almost no new calls. None when the
    student's tensors do not have the shapes a Jacobian needs."""
    xs = tuple(x.detach() for x in leaves)
    out = forward(xs)
    numerical = _numerical(forward, xs, out, eps)
    if numerical is None:
        return None
    analytical = _analytical(backward, xs, out)
    if analytical is None:
        return None
    return Jacobians(out, numerical, analytical, _twice_first(backward, xs, out))


def _numerical(forward: Forward, xs: tuple[Tensor, ...], out: Tensor, eps: float) -> list[Tensor] | None:
    """Central differences of the forward, one column per input element."""
    import torch

    numerical = []
    for i, x in enumerate(xs):
        columns = []
        for j in range(x.numel()):
            ends = []
            for step in (eps, -eps):
                flat = x.clone().reshape(-1)
                flat[j] += step
                moved = forward(xs[:i] + (flat.reshape(x.shape),) + xs[i + 1 :])
                if moved.shape != out.shape:
                    return None
                ends.append(moved.to(out.dtype).reshape(-1))
            columns.append((ends[0] - ends[1]) / (2 * eps))
        numerical.append(torch.stack(columns, dim=1) if columns else out.new_zeros(out.numel(), 0))
    return numerical


def _backward_rows(backward: Backward, xs: tuple[Tensor, ...], grad_output: Tensor) -> list[Tensor] | None:
    """The student's backward of ``grad_output``, flattened per input (a
    None gradient as zeros); None when a gradient has the wrong shape."""
    import torch

    got = backward(xs, (grad_output,))
    result = []
    for g, x in zip(got, xs):
        g = torch.zeros_like(x) if g is None else g
        if g.shape != x.shape:
            return None
        result.append(g.to(x.dtype).reshape(-1))
    return result if len(result) == len(xs) else None


def _analytical(backward: Backward, xs: tuple[Tensor, ...], out: Tensor) -> list[Tensor] | None:
    """The student's backward of each basis vector of the output, one row each."""
    import torch

    analytical = [out.new_zeros(out.numel(), x.numel(), dtype=x.dtype) for x in xs]
    for k in range(out.numel()):
        basis = torch.zeros_like(out).reshape(-1)
        basis[k] = 1
        found = _backward_rows(backward, xs, basis.reshape(out.shape))
        if found is None:
            return None
        for jacobian, row in zip(analytical, found):
            jacobian[k] = row
    return analytical


def _twice_first(backward: Backward, xs: tuple[Tensor, ...], out: Tensor) -> list[Tensor] | None:
    import torch

    if not out.numel():
        return None
    basis = torch.zeros_like(out).reshape(-1)
    basis[0] = 2
    return _backward_rows(backward, xs, basis.reshape(out.shape))


def diagnosis(
    leaves: Sequence[Tensor], names: Sequence[str], found: Jacobians, bad: Sequence[bool], atol: float, rtol: float
) -> str | None:
    """The likely mistake behind a gradcheck failure, from the Jacobians
    (see ``jacobians``), or None when none fits. The rules go from what
    breaks every entry to what one input's entries show."""
    import torch

    if any(x.dtype != torch.float64 for x in leaves):
        return msg("diag.gradcheck_float32")
    if _ignores_grad_output(found, atol, rtol):
        return msg("diag.gradcheck_grad_output")
    if _mixes_entries(leaves, found, atol):
        return msg("diag.gradcheck_mixes")
    failing = [i for i in range(len(leaves)) if bad[i]]
    swapped = _swapped_inputs(failing, names, found, atol, rtol)
    if swapped:
        return swapped
    for i in failing:
        hint = _one_input(found, i, names[i], atol)
        if hint:
            return hint
    return None


def _close(a: Tensor, b: Tensor, atol: float, rtol: float) -> bool:
    return a.shape == b.shape and bool(((a - b).abs() <= atol + rtol * b.abs()).all())


def _ignores_grad_output(found: Jacobians, atol: float, rtol: float) -> bool:
    """Twice the first basis vector gives the same backward as the vector."""
    first = [a[0] for a in found.analytical]
    return (
        found.twice is not None
        and any(bool(f.abs().max() > atol) for f in first if f.numel())
        and all(_close(t, f, atol, rtol) for t, f in zip(found.twice, first))
    )


def _mixes_entries(leaves: Sequence[Tensor], found: Jacobians, atol: float) -> bool:
    """An elementwise function (diagonal Jacobian) whose backward mixes entries."""
    import torch

    out = found.out
    for x, n, a in zip(leaves, found.numerical, found.analytical):
        if tuple(x.shape) == tuple(out.shape) and n.shape[0] == n.shape[1] and n.shape[0] > 1:
            off = ~torch.eye(n.shape[0], dtype=torch.bool, device=n.device)
            if bool((n[off].abs() <= atol).all()) and bool(((a[off] - n[off]).abs() > atol).any()):
                return True
    return False


def _swapped_inputs(failing: list[int], names: Sequence[str], found: Jacobians, atol: float, rtol: float) -> str | None:
    """A failing input's backward that is another input's Jacobian."""
    analytical, numerical = found.analytical, found.numerical
    for i in failing:
        for j in range(len(numerical)):
            if j != i and _close(analytical[i], numerical[j], atol, rtol) and bool(numerical[j].abs().max() > atol):
                return msg("diag.gradcheck_swapped", got=names[i], belongs=names[j], order=", ".join(names))
    return None


def _one_input(found: Jacobians, i: int, name: str, atol: float) -> str | None:
    """What input ``i``'s own Jacobians show: a zero backward, a sign or
    constant factor, or a fraction of the right one."""
    import torch

    a, n = found.analytical[i].double().cpu(), found.numerical[i].double().cpu()
    if a.numel() and bool(a.abs().max() <= atol):
        return msg("diag.gradcheck_zero", input=name)
    hint = diagnose_values(a, n, Context(calls=1))  # one backward: sign or constant factor
    if hint:
        return hint
    mask = n.abs() > 10 * atol
    if int(mask.sum()):
        ratio = float((a[mask] / n[mask]).median())
        if ratio > 0 and torch.allclose(a, ratio * n, rtol=1e-3, atol=10 * atol):
            k = round(1 / ratio)
            if k >= 2 and abs(1 / ratio - k) <= 1e-2 * k:
                return msg("diag.gradcheck_fraction", k=k)
    return None


def summary(
    forward: Forward,
    backward: Backward,
    leaves: Sequence[Tensor],
    names: Sequence[str],
    eps: float,
    atol: float,
    rtol: float,
) -> list[str] | None:
    """Lines that tell a gradcheck failure: for each input whose Jacobian
    disagrees, how many entries do; the worst entry, finite differences
    against the student's backward; and a diagnosis. None when the
    Jacobians cannot be computed or agree (then gradcheck's own first
    line says what failed)."""
    import torch

    found = jacobians(forward, backward, leaves, eps)
    if found is None:
        return None
    lines: list[str] = []
    bad: list[bool] = []
    worst: tuple[float, int, int, int, float, float] | None = None
    for i, (n, a) in enumerate(zip(found.numerical, found.analytical)):
        gap = (a.double() - n.double()).abs()
        wrong = gap > atol + rtol * n.double().abs()
        bad.append(bool(wrong.any()))
        if not bad[-1]:
            continue
        lines.append(
            msg("gradcheck.count", input=names[i], bad=int(wrong.sum()), total=wrong.numel(), atol=atol, rtol=rtol)
        )
        flat = int(torch.where(wrong, gap, torch.zeros_like(gap)).flatten().argmax())
        k, j = divmod(flat, gap.shape[1])
        if worst is None or float(gap[k, j]) > worst[0]:
            worst = (float(gap[k, j]), i, k, j, float(n[k, j]), float(a[k, j]))
    if worst is None:
        return None
    _, i, k, j, expected, got = worst
    lines.append(
        msg(
            "gradcheck.worst",
            output=_index(k, found.out.shape),
            input=names[i] + _index(j, leaves[i].shape),
            expected=expected,
            got=got,
        )
    )
    hint = diagnosis(leaves, names, found, bad, atol, rtol)
    return lines + ([hint] if hint else [])


def _index(flat: int, shape: Sequence[int]) -> str:
    """``[i, j]`` of a flat position in ``shape``; empty for a scalar."""
    import torch

    if not tuple(shape):
        return ""
    at = [int(v) for v in torch.unravel_index(torch.tensor(flat), tuple(shape))]
    return "[" + ", ".join(map(str, at)) + "]"


def run_gradcheck(
    student_fn: Any,
    inputs: Sequence[Tensor],
    what: str,
    names: Sequence[str] | None,
    as_tensor: Callable[[Any, Tensor, str], Tensor],
    **kwargs: Any,
) -> None:
    """``torch.autograd.gradcheck`` of a student function through its proxy
    (``Autograd.gradcheck``): its forward and its ``vjp`` are called
    remotely, each answer read with ``as_tensor(produced, like, what)``, and
    a failure raised as ``GradeFailure`` told entry by entry."""
    import torch

    # torch.autograd.gradcheck is also a function that hides its module's names
    from torch.autograd.gradcheck import GradcheckError

    leaves = tuple(x.detach().requires_grad_(True) for x in inputs)
    calls = StudentCalls(student_fn, as_tensor, what, asked_ahead(student_fn, leaves, kwargs, tensors_key))
    names = list(names) if names else [msg("gradcheck.input_n", n=i + 1) for i in range(len(leaves))]
    try:
        torch.autograd.gradcheck(remote_function(calls), leaves, **kwargs)
    except GradcheckError as exc:
        raise _told(exc, calls, leaves, names, kwargs) from None
    except RuntimeError as exc:
        raise GradeFailure(msg("cmp.gradcheck", what=what, detail=shorten(str(exc).strip(), 1500))) from None


def _told(
    exc: Exception, calls: StudentCalls, leaves: tuple[Tensor, ...], names: Sequence[str], kwargs: dict[str, Any]
) -> GradeFailure:
    """A gradcheck failure as the student reads it: entry by entry, or
    gradcheck's own first line where the Jacobians do not show it."""
    import torch

    what = calls.what
    try:
        lines = summary(
            calls.forward,
            calls.backward,
            leaves,
            names,
            kwargs.get("eps", 1e-6),
            kwargs.get("atol", 1e-5),
            kwargs.get("rtol", 1e-3),
        )
    except GradeFailure:
        lines = None  # the student's code failed while the summary was computed
    if lines:
        return GradeFailure(msg("cmp.gradcheck", what=what, detail="\n".join(lines)))
    # the Jacobians agree (or could not be had): gradcheck's own first
    # line, without the matrices that follow it, e.g. "Backward is not reentrant"
    lines = ["  " + shorten(str(exc).strip().splitlines()[0].rstrip(","), 300)]
    if any(x.dtype != torch.float64 for x in leaves):
        lines.append(msg("diag.gradcheck_float32"))
    return GradeFailure(msg("gradcheck.other", what=what, detail="\n".join(lines)))

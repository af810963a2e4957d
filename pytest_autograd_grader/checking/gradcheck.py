"""What a failed ``torch.autograd.gradcheck`` of a student's function means:
the Jacobians it compared, computed again from the calls gradcheck already
made, told entry by entry (how many disagree, the worst one) with the
likely mistake behind them.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..boundary.shortening import shorten
from ..i18n import msg
from ..outcomes import GradeFailure
from .misconceptions import Context, diagnose_values


def jacobians(forward: Callable, backward: Callable, leaves: Sequence, eps: float):
    """The Jacobians gradcheck compares, computed here so that a failure
    can be told entry by entry: for each input, the numerical one
    (central differences of the student's forward, perturbed exactly as
    gradcheck perturbs it) and the analytical one (the student's
    backward of each basis vector), both (output elements x input
    elements); plus the backward of twice the first basis vector, which
    shows whether backward uses grad_output. ``forward(xs)`` and
    ``backward(xs, grads)`` remember what gradcheck already asked, so
    this costs the student's code almost no new calls. None when the
    student's tensors do not have the shapes a Jacobian needs."""
    import torch

    xs = tuple(x.detach() for x in leaves)
    out = forward(xs)
    numerical = []
    for i, x in enumerate(xs):
        columns = []
        for j in range(x.numel()):
            ends = []
            for step in (eps, -eps):
                flat = x.clone().reshape(-1)
                flat[j] += step
                moved = forward(xs[:i] + (flat.reshape(x.shape),) + xs[i + 1:])
                if moved.shape != out.shape:
                    return None
                ends.append(moved.to(out.dtype).reshape(-1))
            columns.append((ends[0] - ends[1]) / (2 * eps))
        numerical.append(torch.stack(columns, dim=1) if columns else out.new_zeros(out.numel(), 0))

    def rows(go) -> list | None:
        got = backward(xs, (go,))
        result = []
        for g, x in zip(got, xs):
            g = torch.zeros_like(x) if g is None else g
            if g.shape != x.shape:
                return None
            result.append(g.to(x.dtype).reshape(-1))
        return result if len(result) == len(xs) else None

    analytical = [out.new_zeros(out.numel(), x.numel(), dtype=x.dtype) for x in xs]
    for k in range(out.numel()):
        basis = torch.zeros_like(out).reshape(-1)
        basis[k] = 1
        found = rows(basis.reshape(out.shape))
        if found is None:
            return None
        for jacobian, row in zip(analytical, found):
            jacobian[k] = row
    twice = None
    if out.numel():
        basis = torch.zeros_like(out).reshape(-1)
        basis[0] = 2
        twice = rows(basis.reshape(out.shape))
    return out, numerical, analytical, twice

def diagnosis(leaves, names, out, numerical, analytical, twice, bad, atol, rtol) -> str | None:
    """The likely mistake behind a gradcheck failure, from the Jacobians
    (see ``jacobians``), or None when none fits."""
    import torch

    def close(a, b) -> bool:
        return a.shape == b.shape and bool(((a - b).abs() <= atol + rtol * b.abs()).all())

    if any(x.dtype != torch.float64 for x in leaves):
        return msg("diag.gradcheck_float32")
    first = [a[0] for a in analytical]
    if twice is not None and any(bool(f.abs().max() > atol) for f in first if f.numel()) and \
            all(close(t, f) for t, f in zip(twice, first)):
        return msg("diag.gradcheck_grad_output")
    for x, n, a in zip(leaves, numerical, analytical):
        if tuple(x.shape) == tuple(out.shape) and n.shape[0] == n.shape[1] and n.shape[0] > 1:
            off = ~torch.eye(n.shape[0], dtype=torch.bool, device=n.device)
            if bool((n[off].abs() <= atol).all()) and bool(((a[off] - n[off]).abs() > atol).any()):
                return msg("diag.gradcheck_mixes")
    failing = [i for i in range(len(leaves)) if bad[i]]
    for i in failing:
        for j in range(len(leaves)):
            if j != i and close(analytical[i], numerical[j]) and bool(numerical[j].abs().max() > atol):
                return msg("diag.gradcheck_swapped", got=names[i], belongs=names[j], order=", ".join(names))
    for i in failing:
        a, n = analytical[i].double().cpu(), numerical[i].double().cpu()
        if a.numel() and bool(a.abs().max() <= atol):
            return msg("diag.gradcheck_zero", input=names[i])
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

def summary(forward: Callable, backward: Callable, leaves: Sequence, names: Sequence[str],
                       eps: float, atol: float, rtol: float) -> list[str] | None:
    """Lines that tell a gradcheck failure: for each input whose Jacobian
    disagrees, how many entries do; the worst entry, finite differences
    against the student's backward; and a diagnosis. None when the
    Jacobians cannot be computed or agree (then gradcheck's own first
    line says what failed)."""
    import torch

    found = jacobians(forward, backward, leaves, eps)
    if found is None:
        return None
    out, numerical, analytical, twice = found
    lines, bad, worst = [], [], None
    for i, (n, a) in enumerate(zip(numerical, analytical)):
        gap = (a.double() - n.double()).abs()
        wrong = gap > atol + rtol * n.double().abs()
        bad.append(bool(wrong.any()))
        if not bad[-1]:
            continue
        lines.append(msg("gradcheck.count", input=names[i], bad=int(wrong.sum()), total=wrong.numel(),
                         atol=atol, rtol=rtol))
        flat = int(torch.where(wrong, gap, torch.zeros_like(gap)).flatten().argmax())
        k, j = divmod(flat, gap.shape[1])
        if worst is None or float(gap[k, j]) > worst[0]:
            worst = (float(gap[k, j]), i, k, j, float(n[k, j]), float(a[k, j]))
    if worst is None:
        return None

    def index(flat: int, shape) -> str:
        if not tuple(shape):
            return ""
        at = [int(v) for v in torch.unravel_index(torch.tensor(flat), tuple(shape))]
        return "[" + ", ".join(map(str, at)) + "]"

    _, i, k, j, expected, got = worst
    lines.append(msg("gradcheck.worst", output=index(k, out.shape), input=names[i] + index(j, leaves[i].shape),
                     expected=expected, got=got))
    hint = diagnosis(leaves, names, out, numerical, analytical, twice, bad, atol, rtol)
    return lines + ([hint] if hint else [])


AHEAD_LIMIT = 257  # forward calls asked in one request: inputs of up to 128 elements in all


def _asked_ahead(student_fn: Any, leaves: Sequence, kwargs: dict, key: Callable) -> dict:
    """The forward calls gradcheck's finite differences are about to make
    (the inputs as they are, then each element of each input moved by
    -eps and by +eps, in gradcheck's order and arithmetic), answered by
    the student's code in one request instead of one each: inputs -> the
    answer. Empty where they cannot be asked that way (complex, sparse or
    many inputs, gradcheck's fast mode) or any of them fails: gradcheck
    then makes each call itself."""
    import torch

    ask = getattr(student_fn, "answers_ahead", None)
    if not callable(ask) or kwargs.get("fast_mode") or not leaves or any(
            x.layout != torch.strided or not x.dtype.is_floating_point for x in leaves):
        return {}
    eps = kwargs.get("eps", 1e-6)
    xs = tuple(x.detach() for x in leaves)
    if 1 + 2 * sum(x.numel() for x in xs) > AHEAD_LIMIT:
        return {}
    calls = [xs]
    for i, x in enumerate(xs):
        for j in range(x.numel()):
            for step in (-eps, eps):  # x - eps and x + eps, the values gradcheck computes
                flat = x.clone().reshape(-1)
                flat[j] += step
                calls.append(xs[:i] + (flat.reshape(x.shape),) + xs[i + 1:])
    # as gradcheck hands them to the function: its leaves, which require grad
    answers = ask([tuple(t.clone().requires_grad_(True) for t in call) for call in calls])
    return {} if answers is None else {key(call): answer for call, answer in zip(calls, answers)}


def _rows_ahead(student_fn: Any, xs: tuple, grads: tuple, key: Callable) -> dict:
    """At gradcheck's first backward call, with the first basis vector of
    the output: the backward calls its analytical Jacobian makes (each
    basis vector, all of them twice, to see that backward is reentrant),
    answered in one request: (inputs, grad_outputs) -> the answers in
    order. Empty where the first call is not that, or any of them fails."""
    import torch

    ask = getattr(student_fn, "answers_ahead", None)
    if not callable(ask) or len(grads) != 1 or not isinstance(grads[0], torch.Tensor):
        return {}
    first = grads[0]
    basis = [torch.zeros_like(first, memory_format=torch.contiguous_format) for _ in range(first.numel())]
    for j, vector in enumerate(basis):
        vector.view(-1)[j] = 1.0
    if not basis or 2 * len(basis) > AHEAD_LIMIT or key((first,)) != key((basis[0],)):
        return {}
    calls = [(tuple(x.detach().clone().requires_grad_(True) for x in xs), (vector,)) for vector in basis * 2]
    answers = ask(calls, vjp=True)
    found: dict = {}
    for (_, grad_outputs), answer in zip(calls, answers or ()):
        found.setdefault((key(xs), key(grad_outputs)), []).append(answer)
    return found


def run_gradcheck(student_fn: Any, inputs: Sequence, what: str, names: Sequence[str] | None,
                  as_tensor: Callable, **kwargs: Any) -> None:
    """``torch.autograd.gradcheck`` of a student function through its proxy
    (``Autograd.gradcheck``): its forward and its ``vjp`` are called
    remotely, each answer read with ``as_tensor(produced, like, what)``, and
    a failure raised as ``GradeFailure`` told entry by entry."""
    import torch

    # torch.autograd.gradcheck is also a function that hides its module's names
    from torch.autograd.gradcheck import GradcheckError

    outputs: dict = {}  # inputs -> the student's forward of them
    gradients: dict = {}  # (inputs, grad_outputs) -> the student's backward

    def key(tensors) -> tuple:
        return tuple((str(t.dtype), tuple(t.shape),
                      t.detach().cpu().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
                     for t in tensors)

    def forward(xs) -> Any:
        k = key(xs)
        if k not in outputs:
            answer = ahead.pop(k) if k in ahead else student_fn(*xs)
            outputs[k] = as_tensor(answer, xs[0], what).detach()
        return outputs[k]

    def backward(xs, grads, fresh: bool = False) -> tuple:
        # gradcheck's own calls are always fresh: it checks that backward is
        # reentrant; an answer asked ahead is a call of its own, used once
        nonlocal rows
        k = (key(xs), key(grads))
        if fresh and rows is None:
            rows = _rows_ahead(student_fn, xs, grads, key)
        if fresh and rows.get(k):
            got = rows[k].pop(0)[1]
        elif fresh or k not in gradients:
            _, got = student_fn.vjp(tuple(x.detach().clone().requires_grad_(True) for x in xs), tuple(grads))
        else:
            return gradients[k]
        gradients[k] = tuple(None if g is None else as_tensor(g, x, what).detach().to(x.dtype)
                             for g, x in zip(got, xs))
        return gradients[k]

    class Remote(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *xs):
            ctx.save_for_backward(*xs)
            return forward(xs).clone()

        @staticmethod
        def backward(ctx, *grads):
            return backward(ctx.saved_tensors, grads, fresh=True)

    leaves = tuple(x.detach().requires_grad_(True) for x in inputs)
    ahead = _asked_ahead(student_fn, leaves, kwargs, key)  # inputs -> the student's answer, not read yet
    # (inputs, grad_outputs) -> the student's backward answers asked ahead, in
    # order; None until gradcheck's first backward asks them
    rows: dict | None = None
    names = list(names) if names else [msg("gradcheck.input_n", n=i + 1) for i in range(len(leaves))]
    try:
        torch.autograd.gradcheck(Remote.apply, leaves, **kwargs)
    except GradcheckError as exc:
        try:
            lines = summary(forward, backward, leaves, names, kwargs.get("eps", 1e-6),
                            kwargs.get("atol", 1e-5), kwargs.get("rtol", 1e-3))
        except GradeFailure:
            lines = None  # the student's code failed while the summary was computed
        if lines:
            raise GradeFailure(msg("cmp.gradcheck", what=what, detail="\n".join(lines))) from None
        # the Jacobians agree (or could not be had): gradcheck's own first
        # line, without the matrices that follow it, e.g. "Backward is not reentrant"
        lines = ["  " + shorten(str(exc).strip().splitlines()[0].rstrip(","), 300)]
        if any(x.dtype != torch.float64 for x in leaves):
            lines.append(msg("diag.gradcheck_float32"))
        raise GradeFailure(msg("gradcheck.other", what=what, detail="\n".join(lines))) from None
    except RuntimeError as exc:
        raise GradeFailure(msg("cmp.gradcheck", what=what, detail=shorten(str(exc).strip(), 1500))) from None

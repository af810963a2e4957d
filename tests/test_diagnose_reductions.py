"""Diagnoses that say which reduction, copy or optimizer a wrong answer used:
a factor of k names the counts the check passed (``Divisor``), a dropped
size-1 axis is named as such, a ``.grad`` kept through ``detach()`` or a
view is named as shared memory, and momentum or weight decay where plain
SGD was asked is named. Direct calls: each function is what a check uses."""

from __future__ import annotations

import torch

from pytest_autograd_grader import Context, Divisor, diagnose_values, sgd_variant, shared_memory
from pytest_autograd_grader.boundary.tracing import Op, Trace
from pytest_autograd_grader.i18n import msg


def rows_context(x):
    return Context(
        divisors=(
            Divisor(
                msg("label.divisor.elements", n=x.numel()),
                x.numel(),
                (
                    (msg("label.divisor.rows", n=x.shape[0]), x.shape[0]),
                    (msg("label.divisor.last_axis", n=x.shape[1]), x.shape[1]),
                ),
            ),
        ),
        calls=1,
    )


def test_a_mean_over_the_batch_rows_is_named_not_a_constant_factor():
    x = torch.randn(3, 4, dtype=torch.float64)
    expected = 2 * x / x.numel()  # d/dx of (x ** 2).mean()
    rows_mean = 2 * x / x.shape[0]  # ((x ** 2).sum(dim=1)).mean(): 4 times as large
    found = diagnose_values(rows_mean, expected, rows_context(x))
    assert found == msg(
        "diag.divided_by", ratio="4", got=msg("label.divisor.rows", n=3), want=msg("label.divisor.elements", n=12)
    )
    # a mean over the last axis (the rows summed) is the other reduction
    found = diagnose_values(2 * x / x.shape[1], expected, rows_context(x))
    assert msg("label.divisor.last_axis", n=4) in found
    # without the check's divisors, the old generic text
    assert diagnose_values(rows_mean, expected, Context(calls=1)) == msg("diag.factor", k=4)


def test_a_fraction_names_the_micro_batch_size_used_for_their_number():
    context = Context(
        divisors=(
            Divisor(msg("label.divisor.microbatches", k=2), 2, ((msg("label.divisor.microbatch_size", b=3), 3),)),
        )
    )
    expected = torch.tensor([0.3, -1.2], dtype=torch.float64)
    found = diagnose_values(expected * 2 / 3, expected, context)
    assert "you divided by the micro-batch size b=3 instead of the number of micro-batches k=2" in found
    assert "2/3" in found


def test_a_dropped_size_one_axis_is_named():
    expected = torch.randn(3, 1, dtype=torch.float64)
    assert diagnose_values(expected.squeeze(), expected, Context()) == msg("diag.squeezed", got=(3,), expected=(3, 1))
    # other values of the squeezed shape are not a squeeze
    assert diagnose_values(expected.squeeze() + 1, expected, Context()) is None


def trace(*names):
    return Trace(ops=tuple(Op(name, True) for name in names))


def test_detach_and_views_of_grad_are_not_copies():
    for op, spelled in (
        ("detach", ".detach()"),
        ("data", ".data"),
        ("__getitem__", "[:]"),
        ("numpy", ".numpy()"),
        ("view_as", ".view_as(...)"),
        ("reshape", ".reshape(...)"),
    ):
        found = shared_memory(trace("mul", "backward", "grad", op, "zero_", "backward"), "w")
        assert found == msg("diag.accumulation.shares_memory", name="w", op=spelled)
        assert "w.grad" + spelled + " is not a copy: it shares memory with w.grad" in found
    # a real copy after it, or no sharing op applied to .grad itself: no such diagnosis
    assert shared_memory(trace("backward", "grad", "detach", "clone", "zero_"), "w") is None
    assert shared_memory(trace("backward", "grad", "zero_", "__getitem__"), "w") is None


def regression(seed=0, n=5, d=3):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=gen, dtype=torch.float64)
    y = torch.randn(n, generator=gen, dtype=torch.float64)
    w = torch.randn(d, generator=gen, dtype=torch.float64)
    return w, x, y, (lambda i, v: 2 * x.T @ (x @ v - y) / n)


def optimizer_run(w, x, y, lr, steps, **options):
    w = w.clone().requires_grad_(True)
    opt = torch.optim.SGD([w], lr=lr, **options)
    for _ in range(steps):
        opt.zero_grad()
        ((x @ w - y) ** 2).mean().backward()
        opt.step()
    return w.detach()


def test_momentum_and_weight_decay_are_named_where_plain_sgd_is_asked():
    w, x, y, gradient = regression()
    momentum = sgd_variant(optimizer_run(w, x, y, 0.1, 3, momentum=0.9), w, gradient, 0.1, 3)
    assert momentum == msg("diag.inplace.momentum", name="w", value=0.9)
    decay = sgd_variant(optimizer_run(w, x, y, 0.1, 2, weight_decay=0.05), w, gradient, 0.1, 2)
    assert decay == msg("diag.inplace.weight_decay", name="w", value=0.05)
    assert "Nesterov" not in momentum and "momentum" in sgd_variant(
        optimizer_run(w, x, y, 0.1, 3, momentum=0.5, nesterov=True), w, gradient, 0.1, 3
    )
    # plain SGD, and a wrong answer no variant explains, are not named
    assert sgd_variant(optimizer_run(w, x, y, 0.1, 3), w, gradient, 0.1, 3) is None
    assert sgd_variant(optimizer_run(w, x, y, 0.1, 3) + 0.01, w, gradient, 0.1, 3) is None


def test_a_gradient_divided_by_the_tensors_size_is_named_a_mean_not_a_missed_accumulation():
    # a mean where the task sums: before, every 1/k gradient was told to "accumulate with +="
    x = torch.randn(3, 5, dtype=torch.float64)
    expected = 2 * x  # d/dx of (x ** 2).sum()
    context = Context()
    assert diagnose_values(expected / 15, expected, context) == msg(
        "diag.mean_not_sum", k=15, what=msg("label.mean.elements")
    )
    assert diagnose_values(expected / 5, expected, context) == msg(
        "diag.mean_not_sum", k=5, what=msg("label.mean.axis", axis=1)
    )
    # a factor that is no size of the tensor keeps the accumulation advice
    assert diagnose_values(expected / 2, expected, context) == msg("diag.too_small", k=2)

"""What grading costs beside the student's own work.

    python bench/bench_proxy.py [--calls N] [--pairs N] [--size N]

Prints, side by side: one proxy call with three small tensors (through the
InlineExecutor, and through the SandboxExecutor when sandbox.py has a real
one) against calling the function directly; and the time to compare 1,000
gradient pairs of 1,000 elements with ``autograd.assert_grad``, for matching
pairs and for mismatching pairs (expected against produced, plus diagnosis).
Figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from pytest_autograd_grader.boundary.submission import InlineExecutor, Submission
from pytest_autograd_grader.checking.autograd import Autograd
from pytest_autograd_grader.checking.misconceptions import Context
from pytest_autograd_grader.outcomes import GradeFailure

STUDENT = """
import torch


def combine(x, w, b):
    return (x * w + b).sum()
"""


def per_call(fn, calls: int, repeats: int = 5) -> float:
    """Median seconds per call over ``repeats`` rounds of ``calls`` calls."""
    fn()  # warm: imports, module load, worker start
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        rounds.append((time.perf_counter() - start) / calls)
    return statistics.median(rounds)


def sandbox_executor():
    """The executor a lone ``--grade`` run uses (``--grade-isolation auto``)."""
    from pytest_autograd_grader.sandbox import SandboxExecutor, isolation_for

    try:
        return SandboxExecutor(isolation_for("auto")), ""
    except Exception as exc:  # noqa: BLE001
        return None, f"no sandbox here ({type(exc).__name__}: {exc})"


def bench_calls(calls: int) -> list[tuple[str, float]]:
    directory = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    (directory / "bench_student.py").write_text(STUDENT)
    sys.path.insert(0, str(directory))
    import bench_student  # the same function, called directly

    x, w, b = (torch.randn(3, dtype=torch.float64) for _ in range(3))
    rows = [("direct call", per_call(lambda: bench_student.combine(x, w, b), calls))]

    inline = InlineExecutor()
    proxy = Submission(inline, directory, "bench_student", 10.0)
    rows.append(("proxy, InlineExecutor", per_call(lambda: proxy.combine(x, w, b), calls)))
    inline.close()

    executor, why = sandbox_executor()
    if executor is None:
        rows.append((f"proxy, SandboxExecutor: {why}", float("nan")))
    else:
        try:
            proxy = Submission(executor, directory, "bench_student", 10.0)
            started = time.perf_counter()
            proxy.combine(x, w, b)
            first = time.perf_counter() - started
            rows.append(("proxy, SandboxExecutor (first call, starts the worker)", first))
            rows.append(("proxy, SandboxExecutor", per_call(lambda: proxy.combine(x, w, b), max(1, calls // 10))))
        finally:
            executor.close()
    return rows


def bench_compare(pairs: int, size: int) -> list[tuple[str, float]]:
    autograd = Autograd(device="cpu")
    generator = torch.Generator().manual_seed(0)
    expected = [torch.randn(size, generator=generator, dtype=torch.float64) for _ in range(pairs)]
    same = [e.clone() for e in expected]
    # mismatches of the kinds the diagnoses name, and plain wrong values
    makers = [lambda e: 2 * e, lambda e: -e, lambda e: e / 3, lambda e: e + 0.5]
    wrong = [makers[i % len(makers)](e) for i, e in enumerate(expected)]

    def run(produced, context=None) -> tuple[float, int]:
        failures = 0
        start = time.perf_counter()
        for got, want in zip(produced, expected):
            try:
                autograd.assert_grad(got, want, "x.grad", context=context)
            except GradeFailure:
                failures += 1
        return time.perf_counter() - start, failures

    run(same[:10])
    run(wrong[:10])
    t_same, f_same = run(same)
    t_wrong, f_wrong = run(wrong, Context(calls=3))
    assert f_same == 0 and f_wrong == pairs, (f_same, f_wrong)
    return [
        (f"{pairs} matching pairs of {size} elements", t_same),
        (f"{pairs} mismatching pairs, with diagnosis", t_wrong),
    ]


def duration(seconds: float) -> str:
    if seconds != seconds:
        return "-"
    if seconds >= 0.1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--size", type=int, default=1000)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)

    print(f"torch {torch.__version__}, python {sys.version.split()[0]}, 1 intra-op thread")
    print()
    print(f"{'one call with three tensors of 3 elements':58s} {'per call':>12s} {'vs direct':>10s}")
    rows = bench_calls(args.calls)
    direct = rows[0][1]
    for name, seconds in rows:
        ratio = f"{seconds / direct:9.0f}x" if seconds == seconds else ""
        print(f"  {name:56s} {duration(seconds):>12s} {ratio:>10s}")
    print()
    print(f"{'autograd.assert_grad':58s} {'total':>12s} {'per pair':>10s}")
    for name, seconds in bench_compare(args.pairs, args.size):
        print(f"  {name:56s} {duration(seconds):>12s} {duration(seconds / args.pairs):>10s}")


if __name__ == "__main__":
    main()

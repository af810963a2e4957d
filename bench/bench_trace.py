"""What recording the autograd trace costs a student call.

    python bench/bench_trace.py [--calls N]

Runs the reference solutions' functions of several topics, side by side,
bare and inside the worker's trace recorder (``tracing.recorder``, a
TorchFunctionMode), and prints the time per call and the ratio. Figures are
printed, not asserted.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import torch

from pytest_autograd_grader.boundary import tracing
from pytest_autograd_grader.boundary.student import _traced

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"


def load(topic: str):
    spec = importlib.util.spec_from_file_location(f"bench_{topic}", SOLUTIONS / f"{topic}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases():
    graph, dynamic = load("graph"), load("dynamic_graph")

    def leaves(n=8):
        return torch.randn(n, dtype=torch.float64, requires_grad=True), torch.randn(
            n, dtype=torch.float64, requires_grad=True
        )

    yield "graph.autograd_gradients (5 ops, 1 backward)", lambda: graph.autograd_gradients(*leaves())
    yield (
        "dynamic_graph.rnn_grad (T=20: 60 ops, 1 backward)",
        lambda: dynamic.rnn_grad(torch.randn(20, 4, dtype=torch.float64), *leaves(4)),
    )
    yield "2,000 small ops", lambda: [t * 2 for t in [torch.ones(3)] * 2000]


def per_call(fn, calls: int, traced: bool, repeats: int = 5) -> float:
    def once():
        if traced:
            with _traced(tracing.recorder()):
                fn()
        else:
            fn()

    once()
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            once()
        rounds.append((time.perf_counter() - start) / calls)
    return statistics.median(rounds)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(f"{'student call':<52} {'bare':>10} {'traced':>10} {'ratio':>7}")
    for name, fn in cases():
        bare = per_call(fn, args.calls, False)
        traced = per_call(fn, args.calls, True)
        print(f"{name:<52} {bare * 1e3:8.3f}ms {traced * 1e3:8.3f}ms {traced / bare:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

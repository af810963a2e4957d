"""What grading the engine track costs.

    python bench/bench_engine.py [--seed N]

Grades the reference engine (solutions/engine.py) and the same engine with
one planted mistake (tanh's local derivative) with every check's fuzzer,
through the sandbox's numpy-only worker, and prints per check: programs
tried, worker calls, programs per second, and the wall time (for the
mistaken engine: finding and shrinking the smallest disagreeing program);
of that, the time in worker calls (the student's engine) and in torch;
then the totals for the whole topic. Figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from pytest_autograd_grader.boundary.submission import Submission
from pytest_autograd_grader.checking.seeding import check_seed
from pytest_autograd_grader.engine_fuzz.fuzz import Fuzzer
from pytest_autograd_grader.sandbox import SandboxExecutor, isolation_for

KINDS = ("ops", "broadcasting", "traversal", "leaf", "accumulation", "retain_graph", "vector_backward")
SOLUTION = Path(__file__).resolve().parent.parent / "solutions" / "engine.py"
MISTAKE = ("        return (grad * (1 - out * out),)", "        return (grad * (1 - out),)")


def grade(directory: Path, seed: int) -> list[tuple[str, int, int, float, bool]]:
    executor = SandboxExecutor(isolation_for("auto"))
    proxy = Submission(executor, directory, "engine", 60.0, numpy_only=True)
    rows = []
    try:
        for kind in KINDS:
            fuzzer = Fuzzer(proxy, kind, check_seed(seed, f"test_engine.py::{kind}"), "cpu")
            start = time.perf_counter()
            found = fuzzer.run()
            rows.append((kind, fuzzer.tried, fuzzer.calls, time.perf_counter() - start, found is not None,
                         fuzzer.worker_s, fuzzer.torch_s))
    finally:
        executor.close()
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    source = SOLUTION.read_text()
    assert MISTAKE[0] in source
    with tempfile.TemporaryDirectory() as tmp:
        engines = {"reference": source, "tanh mistake": source.replace(*MISTAKE)}
        for name, text in engines.items():
            directory = Path(tmp) / name.replace(" ", "_")
            directory.mkdir()
            (directory / "engine.py").write_text(text)
            grade(directory, args.seed)  # warm: worker start, imports
            rows = grade(directory, args.seed)
            print(f"{name}:")
            print(f"  {'check':<16} {'programs':>8} {'calls':>6} {'programs/s':>11} {'wall':>9} {'worker':>9} "
                  f"{'torch':>9}  disagrees")
            for kind, tried, calls, wall, found, worker, torch_s in rows:
                print(f"  {kind:<16} {tried:>8} {calls:>6} {tried / wall:>11.0f} {wall * 1e3:>7.0f}ms "
                      f"{worker * 1e3:>7.0f}ms {torch_s * 1e3:>7.0f}ms  {found}")
            total = sum(r[3] for r in rows)
            print(f"  {'topic':<16} {sum(r[1] for r in rows):>8} {sum(r[2] for r in rows):>6} "
                  f"{sum(r[1] for r in rows) / total:>11.0f} {total * 1e3:>7.0f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

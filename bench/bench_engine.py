"""What grading the engine track costs.

    python bench/bench_engine.py [--seed N] [--lone 7] [--busy]

Grades the reference engine (solutions/engine.py) and the same engine with
one planted mistake (tanh's local derivative) with every check's fuzzer,
through the sandbox's numpy-only worker, and prints per check: programs
tried, worker calls, programs per second, and the wall time (for the
mistaken engine: finding and shrinking the smallest disagreeing program);
of that, the time in worker calls (the student's engine) and in torch;
then the totals for the whole topic.

Then, side by side: a student's lone run of `pytest --grade
exercises/test_engine.py` against one of `exercises/test_leaf.py` (a torch
topic), both on the reference solutions, interleaved, medians and their
ratio (the goal: at most 1.1x). ``--busy`` keeps one of the machine's
cores busy meanwhile, as a student's editor and browser do. Figures are
printed, not asserted.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_autograd_grader.boundary.submission import Submission
from pytest_autograd_grader.checking.seeding import check_seed
from pytest_autograd_grader.engine_fuzz.fuzz import Fuzzer
from pytest_autograd_grader.sandbox import SandboxExecutor, isolation_for

KINDS = ("ops", "broadcasting", "traversal", "leaf", "accumulation", "retain_graph", "vector_backward")
REPO = Path(__file__).resolve().parent.parent
SOLUTION = REPO / "solutions" / "engine.py"
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
            rows.append(
                (
                    kind,
                    fuzzer.tried,
                    fuzzer.calls,
                    time.perf_counter() - start,
                    found is not None,
                    fuzzer.worker_s,
                    fuzzer.torch_s,
                )
            )
    finally:
        executor.close()
    return rows


def _spin(stop) -> None:
    while not stop.is_set():
        sum(range(10000))


def lone_runs(runs: int, busy: bool) -> dict[str, list[float]]:
    """Interleaved lone gradings of the engine topic and the leaf topic."""
    topics = {"engine": [], "leaf": []}
    stop = multiprocessing.Event()
    spinner = multiprocessing.Process(target=_spin, args=(stop,), daemon=True) if busy else None
    if spinner:
        spinner.start()
    try:
        for round_ in range(runs + 1):  # the first round warms the file cache and the bytecode
            for topic, times in topics.items():
                started = time.monotonic()
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pytest",
                        "-q",
                        "-p",
                        "no:cacheprovider",
                        "--grade",
                        f"exercises/test_{topic}.py",
                        "--grade-submission=solutions/",
                    ],
                    cwd=REPO,
                    capture_output=True,
                    check=False,
                )
                if round_:
                    times.append(time.monotonic() - started)
    finally:
        if spinner:
            stop.set()
            spinner.join()
    return topics


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lone", type=int, default=7, help="lone runs of each topic, side by side (0: none)")
    parser.add_argument("--busy", action="store_true", help="keep one core busy during the lone runs")
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
            print(
                f"  {'check':<16} {'programs':>8} {'calls':>6} {'programs/s':>11} {'wall':>9} {'worker':>9} "
                f"{'torch':>9}  disagrees"
            )
            for kind, tried, calls, wall, found, worker, torch_s in rows:
                print(
                    f"  {kind:<16} {tried:>8} {calls:>6} {tried / wall:>11.0f} {wall * 1e3:>7.0f}ms "
                    f"{worker * 1e3:>7.0f}ms {torch_s * 1e3:>7.0f}ms  {found}"
                )
            total = sum(r[3] for r in rows)
            print(
                f"  {'topic':<16} {sum(r[1] for r in rows):>8} {sum(r[2] for r in rows):>6} "
                f"{sum(r[1] for r in rows) / total:>11.0f} {total * 1e3:>7.0f}ms"
            )
    if args.lone:
        topics = lone_runs(args.lone, args.busy)
        medians = {topic: statistics.median(times) for topic, times in topics.items()}
        load = "one core kept busy" if args.busy else "an idle machine"
        print(f"lone `pytest --grade` of a topic on the reference solutions, median of {args.lone}, {load}:")
        for topic, median in medians.items():
            print(
                f"  test_{topic + '.py':<12} {median:6.2f} s   (min {min(topics[topic]):.2f}, "
                f"max {max(topics[topic]):.2f})"
            )
        print(f"  engine / leaf: {medians['engine'] / medians['leaf']:.2f}x (goal: at most 1.1x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

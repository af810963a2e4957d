"""What a numpy-only worker (the engine track) saves over a torch one.

    python bench/bench_numpy_worker.py [--workers N] [--isolation MODE]

Side by side: the first answer of a fresh zygote (start-up: the torch one
imports torch and warms autograd, the numpy one imports numpy only), then
the time to fork and stage a fresh worker and get one answer from it,
median over N workers. Figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pytest_autograd_grader.boundary.wire import dumps
from pytest_autograd_grader.sandbox import SandboxExecutor, isolation_for
from pytest_autograd_grader.sandbox.launch import sandbox_of

STUDENT = "import numpy as np\n\ndef double(x):\n    return np.asarray(x) * 2\n"


def measure(numpy_only: bool, isolation: str, workers: int) -> tuple[float, float]:
    iso = isolation_for(isolation)
    sandbox_of(iso, numpy_only).stop()
    payload = dumps({"args": {"$": "tuple", "items": [[1.0, 2.0]]}, "kwargs": {"$": "dict", "keys": [], "values": []}})
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(workers + 1):
            directory = Path(tmp) / str(i)
            directory.mkdir()
            (directory / "engine.py").write_text(STUDENT)
            executor = SandboxExecutor(isolation=iso)
            start = time.perf_counter()
            executor.run(str(directory), "engine", "double", payload, "call", 60.0, numpy_only=numpy_only)
            times.append(time.perf_counter() - start)
            executor.close()
    return times[0], statistics.median(times[1:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--isolation", default="auto")
    args = parser.parse_args(argv)
    print(f"isolation {isolation_for(args.isolation).mode}")
    print(f"{'zygote':<8} {'first answer (start-up)':>24} {'fresh worker + answer':>22}")
    results = {}
    for name, numpy_only in (("torch", False), ("numpy", True)):
        results[name] = measure(numpy_only, args.isolation, args.workers)
        first, each = results[name]
        print(f"{name:<8} {first * 1e3:21.0f} ms {each * 1e3:19.1f} ms")
    print(
        f"numpy / torch: start-up {results['numpy'][0] / results['torch'][0]:.2f}x, "
        f"per worker {results['numpy'][1] / results['torch'][1]:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

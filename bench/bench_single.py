"""A student's self-check against a bare torch import, side by side.

    python bench/bench_single.py [--repeat 5]

Interleaved runs of `python -c "import torch"`, `pytest --grade exercises/`
on the untouched stubs (a student's first run) and on the reference
solutions (a finished student's run); medians and ratios are printed, not
asserted.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNS = {
    "python -c 'import torch'": [sys.executable, "-c", "import torch"],
    "pytest --grade exercises/ (stubs)": [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--grade",
        "exercises/",
    ],
    "pytest --grade exercises/ (solutions)": [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--grade",
        "exercises/",
        "--grade-submission=solutions/",
    ],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in RUNS}
    for _ in range(args.repeat + 1):  # the first round warms the file cache and bytecode
        for name, command in RUNS.items():
            started = time.monotonic()
            subprocess.run(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append(time.monotonic() - started)
    base = statistics.median(times["python -c 'import torch'"][1:])
    for name, values in times.items():
        median = statistics.median(values[1:])
        print(f"{name:40s} median {median:5.2f} s  ({median / base:.2f}x the bare import)")


if __name__ == "__main__":
    main()

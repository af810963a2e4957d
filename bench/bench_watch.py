"""Watch mode against a lone run, side by side in one run: the wall time
from saving a topic's file to its table being printed by
`autograd-grader watch`, against `pytest --grade exercises/test_<topic>.py`
run from the shell for the same topic.

    python bench/bench_watch.py [--topic leaf] [--saves 10]

A copy of the exercises is graded with the topic's reference solution and
its stub written in turn, so every save changes the answer. The goal is a
re-grade under 0.5 s; figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXERCISES, SOLUTIONS = REPO / "exercises", REPO / "solutions"


def lone_runs(folder: Path, topic: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "--grade",
                "-p",
                "no:cacheprovider",
                "-q",
                str(folder / f"test_{topic}.py"),
            ],
            cwd=folder,
            capture_output=True,
            check=False,
        )
        times.append(time.monotonic() - started)
    return times


def watch_saves(folder: Path, topic: str, saves: int) -> tuple[float, list[float]]:
    """(seconds until the first table, seconds from each save to its table)."""
    lines: queue.Queue[str] = queue.Queue()
    started = time.monotonic()
    watch = subprocess.Popen(
        [sys.executable, "-m", "pytest_autograd_grader", "watch", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=folder,
        start_new_session=True,
    )
    threading.Thread(target=lambda: [lines.put(line) for line in watch.stdout], daemon=True).start()

    def until(text: str) -> float:
        while True:
            line = lines.get(timeout=300)
            if text in line:
                return time.monotonic()

    try:
        first = until("watch: waiting") - started
        times = []
        versions = [SOLUTIONS / f"{topic}.py", EXERCISES / f"{topic}.py"]
        for i in range(saves):
            source = versions[i % 2].read_text()
            saved = time.monotonic()
            (folder / f"{topic}.py").write_text(source)
            times.append(until("watch: graded in") - saved)
            until("watch: waiting")
        return first, times
    finally:
        os.killpg(watch.pid, signal.SIGINT)
        watch.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topic", default="leaf")
    parser.add_argument("--saves", type=int, default=10)
    parser.add_argument("--lone", type=int, default=3, help="lone pytest runs to time")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        folder = Path(tmp) / "exercises"
        shutil.copytree(EXERCISES, folder)
        lone = lone_runs(folder, args.topic, args.lone)
        first, saves = watch_saves(folder, args.topic, args.saves)
    lone_median, save_median = statistics.median(lone), statistics.median(saves)
    finished, stubs = saves[0::2], saves[1::2]  # the reference solution and the stub, saved in turn
    print(f"topic {args.topic}: lone `pytest --grade test_{args.topic}.py`, median of {len(lone)}: {lone_median:.2f} s")
    print(
        f"watch: first table after {first:.2f} s; save -> table, median of {len(saves)}: {save_median:.3f} s "
        f"(max {max(saves):.3f} s)"
    )
    print(
        f"  of which the finished file (every check graded): median {statistics.median(finished):.3f} s, "
        f"the stub: median {statistics.median(stubs):.3f} s"
        if stubs
        else ""
    )
    slowest = max(save_median, statistics.median(finished))
    print(
        f"ratio lone / watch: {lone_median / save_median:.1f}x; goal under 0.5 s: "
        f"{'met' if slowest < 0.5 else 'missed'}"
    )


if __name__ == "__main__":
    main()

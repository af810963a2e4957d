"""A class on one machine against the same class on a one-node Slurm
cluster with N shards, side by side in one run.

    python bench/bench_slurm.py [--students 200] [--shards 2]

Starts the one-node cluster of tests/slurm_cluster.py (root, slurm-wlm and
munge installed), builds bench_class.py's synthetic class, grades it once
with `autograd-grader class -j <cores>` and once with the ready files of
templates/cluster/slurm (a job array of --shards tasks, each -j cores/shards,
and its afterok merge), at the same salt. Printed: both wall times, each
shard's own grading time (from its log), and what Slurm adds per shard
(the job's wall time less its slowest shard's grading and the merge).
Figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "bench"), str(REPO / "tests")]

from bench_class import make_class  # noqa: E402
from slurm_cluster import one_node_cluster, wait_for_queue  # noqa: E402

GRADED = re.compile(r"graded (\d+) students in ([\d.]+) s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--shards", type=int, default=2)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="bench-slurm-") as tmp:
        root = Path(tmp)
        checks, subs = make_class(root, args.students)
        started = time.monotonic()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest_autograd_grader",
                "class",
                "--checks",
                str(checks),
                "--submissions",
                str(subs),
                "--out",
                str(root / "alone"),
                "--salt",
                "bench",
                "-j",
                str(cores),
                "--timeout",
                "3",
            ],
            check=True,
            capture_output=True,
        )
        alone = time.monotonic() - started
        with one_node_cluster(root / "slurm") as env:
            env = {**env, "CHECKS": str(checks), "SUBMISSIONS": str(subs), "OUT": str(root / "out"), "SALT": "bench"}
            started = time.monotonic()
            subprocess.run(
                [
                    "bash",
                    str(REPO / "templates" / "cluster" / "slurm" / "submit.sh"),
                    str(args.shards),
                    f"--cpus-per-task={max(cores // args.shards, 1)}",
                ],
                env=env,
                cwd=root,
                check=True,
                capture_output=True,
            )
            finished = wait_for_queue(env, 3600)
            slurm = time.monotonic() - started
        logs = {p.name: p.read_text() for p in root.glob("autograd-*.log")}
        shard_times = sorted(
            float(m.group(2)) for name, text in logs.items() if "grade" in name for m in [GRADED.search(text)] if m
        )
    print(f"class of {args.students} on {cores} cores")
    print(f"one machine, autograd-grader class -j {cores}: {alone:.1f} s")
    print(
        f"one-node Slurm, {args.shards} shards and a merge: {slurm:.1f} s"
        + ("" if finished else " (did not finish within an hour)")
    )
    if shard_times:
        print(f"  each shard's own grading: {', '.join(f'{t:.1f} s' for t in shard_times)}")
        print(
            f"  Slurm's part (scheduling, start-up, merge), per shard: {(slurm - max(shard_times)) / args.shards:.1f} s"
        )
    print(f"ratio Slurm / one machine: {slurm / alone:.2f}x")


if __name__ == "__main__":
    main()

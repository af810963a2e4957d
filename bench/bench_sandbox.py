"""What the sandbox costs in each isolation mode, side by side in one run
(figures printed, not asserted).

    python bench/bench_sandbox.py [--rounds 3] [--calls 300] [--modes bwrap,user,process]

For each mode that works on this machine (bwrap, user, process):

1. the median round trip of a small call into a worker, against the same
   call inline;
2. the cost of starting a worker (copy of the submission, a keeper and a
   worker forked from the warm zygote, in a PID namespace of their own), and
   of the sandbox itself (bubblewrap's start where used, a fresh interpreter
   importing torch; paid once per pytest process);
3. the whole curriculum (exercises/ against solutions/) graded in that mode
   against --grade-inline, as an instructor's CI runs it: a fresh pytest
   process each time, wall clock and the report's own duration_s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def micro(calls: int, mode: str) -> None:
    import torch

    from pytest_autograd_grader.boundary.arguments import encode_value as encode_argument
    from pytest_autograd_grader.boundary.submission import InlineExecutor
    from pytest_autograd_grader.boundary.wire import dumps
    from pytest_autograd_grader.sandbox import SandboxExecutor, isolation_for
    from pytest_autograd_grader.sandbox.launch import sandbox_of

    student = Path(tempfile.mkdtemp(prefix="bench-student-"))
    (student / "small.py").write_text("def double(x):\n    return x * 2\n")
    payload = dumps({"args": encode_argument((torch.randn(4, 4, requires_grad=True),)), "kwargs": encode_argument({})})

    isolation = isolation_for(mode)
    started = time.perf_counter()
    sandbox = SandboxExecutor(isolation=isolation)
    sandbox.run(str(student), "small", "double", payload, "call", 60)
    zygote_first = time.perf_counter() - started

    def rounds(executor) -> float:
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            executor.run(str(student), "small", "double", payload, "call", 10)
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    inline = InlineExecutor()
    inline.run(str(student), "small", "double", payload, "call", 10)
    sandboxed_rt, inline_rt = rounds(sandbox), rounds(inline)

    spawns = []
    for _ in range(20):
        directory = str(student.resolve())
        sandbox._retire(directory, sandbox.workers[directory])
        t = time.perf_counter()
        sandbox.workers[directory] = sandbox._spawn(directory)
        spawns.append(time.perf_counter() - t)
    sandbox.close()
    sandbox_of(isolation).stop()
    cold = []
    for _ in range(2):
        t = time.perf_counter()
        sandbox_of(isolation).start()
        worker = sandbox._spawn(str(student.resolve()))
        cold.append(time.perf_counter() - t)
        sandbox.workers["x"] = worker
        sandbox.closed = False
        sandbox.close()
        sandbox_of(isolation).stop()

    print(f"[{mode}] small call (a 4x4 tensor in, its double out), median of", calls)
    print(f"  inline     {_ms(inline_rt)}")
    print(f"  sandboxed  {_ms(sandboxed_rt)}   (+{_ms(sandboxed_rt - inline_rt).strip()} per call)")
    print("starting a worker")
    print(f"  fork of the warm zygote, median of 20   {_ms(statistics.median(spawns))}")
    print(
        f"  zygote start + first worker (cold)      {_ms(statistics.median(cold))}"
        f"   (first call of this process: {_ms(zygote_first).strip()})"
    )


def curriculum(rounds: int, isolations: list[str]) -> None:
    out = Path(tempfile.mkdtemp(prefix="bench-grade-"))
    base = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--grade",
        "exercises/",
        "--grade-submission",
        "solutions/",
        "--grade-seed",
        "1",
    ]
    modes = {"inline": ["--grade-inline"], **{m: [f"--grade-isolation={m}"] for m in isolations}}
    results: dict[str, list[tuple[float, float, float]]] = {mode: [] for mode in modes}
    for _ in range(rounds):
        for mode, extra in modes.items():
            report = out / f"{mode}.json"
            args = base + ["--grade-json", str(report)] + extra
            t = time.perf_counter()
            done = subprocess.run(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            wall = time.perf_counter() - t
            data = json.loads(report.read_text())
            if done.returncode not in (0, 1):
                print(done.stdout[-2000:])
            results[mode].append((wall, data["duration_s"], data["percent"]))
    checks = len(json.loads((out / "inline.json").read_text())["checks"])
    print(f"curriculum: exercises/ against solutions/, {checks} checks, median of {rounds} fresh pytest runs")
    print(f"  {'mode':<12} {'wall':>9} {'in-session':>11} {'percent':>8} {'wall vs inline':>15}")
    inline_wall = statistics.median(r[0] for r in results["inline"])
    inline_session = statistics.median(r[1] for r in results["inline"])
    for mode, rows in results.items():
        wall = statistics.median(r[0] for r in rows)
        session = statistics.median(r[1] for r in rows)
        print(
            f"  {mode:<12} {wall:8.2f}s {session:10.2f}s {rows[-1][2]:7.1f}% "
            f"{wall / inline_wall:9.2f}x wall, {session / inline_session:.2f}x in-session"
        )
    print("  (goal: bwrap and user within 1.2x of inline, wall clock)")


def main() -> None:
    from pytest_autograd_grader.sandbox import Unavailable, isolation_for

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--modes", default="bwrap,user,process")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, uid {os.getuid()}")
    modes = []
    for mode in args.modes.split(","):
        try:
            isolation_for(mode)
            modes.append(mode)
        except Unavailable as exc:
            print(f"[{mode}] skipped: {exc}")
    for mode in modes:
        micro(args.calls, mode)
    curriculum(args.rounds, modes)


if __name__ == "__main__":
    main()

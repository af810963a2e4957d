"""Grading a class: `autograd-grader class` against a shell loop of
`pytest --grade`, one student after another, side by side in one run.

    python bench/bench_class.py [--students 100] [--loop 10] [--jobs N] [--timeout 3] [--seed N] [--seed-per-student]
                                [--rounds N]

A synthetic class is built from the curriculum: reference solutions,
untouched stubs, partial submissions (some topics solved), one module that
hangs at import, one that kills its process, one empty folder. The loop
grades the first --loop students with the instructor's safe invocation,
one pytest process each, as a shell loop would; its mean per student is
extrapolated to the class. Half of the loop runs before the class and half
after, so that a machine whose speed drifts (a shared VM's does, by a third
within minutes) favours neither side; --rounds repeats the whole and
prints the median speed-up. The class is graded as ``autograd-grader
class`` grades by default (one seed for the class, drawn from a new salt),
with ``--seed N`` (the loop then uses the same ``--grade-seed``), or with
``--seed-per-student``; a lone run draws its own seed. Printed: total wall,
per-student median, the speed-up, and peak memory. Figures are printed,
not asserted. Each round also prints where the class run's wall time went:
start-up, the steady pace per student and the end.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXERCISES, SOLUTIONS = REPO / "exercises", REPO / "solutions"
TOPICS = sorted(p.stem.removeprefix("test_") for p in EXERCISES.glob("test_*.py"))


def make_class(root: Path, students: int) -> tuple[Path, Path]:
    """checks/ (the curriculum's checks and a pytest.ini) and subs/<student>/exercises/."""
    checks, subs = root / "checks", root / "subs"
    checks.mkdir()
    subs.mkdir()
    for topic in TOPICS:
        shutil.copy(EXERCISES / f"test_{topic}.py", checks)
    (checks / "pytest.ini").write_text("[pytest]\n")
    rng = random.Random(20261122)
    specials = {3: "hang", 7: "crash", 11: "empty"}
    for number in range(students):
        folder = subs / f"student{number:03d}"
        kind = specials.get(number) or rng.choice(["solution"] * 4 + ["stubs"] * 2 + ["partial"] * 3)
        if kind == "empty":
            folder.mkdir()
            continue
        modules = folder / "exercises"
        modules.mkdir(parents=True)
        solved = {"solution": set(TOPICS), "stubs": set(), "partial": set(rng.sample(TOPICS, len(TOPICS) // 2)),
                  "hang": set(TOPICS), "crash": set(TOPICS)}[kind]
        for topic in TOPICS:
            shutil.copy((SOLUTIONS if topic in solved else EXERCISES) / f"{topic}.py", modules)
        if kind == "hang":
            with open(modules / "graph.py", "a") as handle:
                handle.write("\nwhile True:\n    pass\n")
        if kind == "crash":
            with open(modules / "leaf.py", "a") as handle:
                handle.write("\nimport os\nos._exit(3)\n")
    return checks, subs


def shell_loop(checks: Path, subs: Path, students: list[str], timeout: float, out: Path,
               seed: int | None) -> list[float]:
    times = []
    for student in students:
        report = out / f"{student}.json"
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "pytest", "-c", str(checks / "pytest.ini"), "--rootdir", str(checks),
                        "-p", "no:cacheprovider", "-q", "--grade", str(checks),
                        f"--grade-submission={subs / student / 'exercises'}", f"--grade-timeout={timeout:g}",
                        *([f"--grade-seed={seed}"] if seed is not None else []), "--grade-json", str(report)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=out)
        times.append(time.monotonic() - started)
        if not report.is_file():
            # a loop that fails at once (the grader not importable from here) would look fast
            sys.exit(f"the lone run of {student} wrote no report: is pytest-autograd-grader installed?")
    return times


def phases(out: Path, started: float, ended: float) -> tuple[float, float, float]:
    """Where a class run's wall time went, read from when each student's
    report was written (the workers write it as the student ends): until
    the first report (start-up: the imports, the sandboxes, the first
    student), from the first to the last (per student, the steady pace),
    and after the last (the gradebook and the report)."""
    written = sorted(p.stat().st_mtime for p in out.glob("student*.json"))
    if len(written) < 2:
        return float("nan"), float("nan"), float("nan")
    return written[0] - started, (written[-1] - written[0]) / (len(written) - 1), ended - written[-1]


def class_run(checks: Path, subs: Path, out: Path, args) -> tuple[float, float]:
    command = [sys.executable, "-m", "pytest_autograd_grader", "class", "--checks", str(checks),
               "--submissions", str(subs), "--out", str(out), f"--timeout={args.timeout:g}"]
    if args.jobs:
        command.append(f"--jobs={args.jobs}")
    if args.seed is not None:
        command.append(f"--seed={args.seed}")
    if args.seed_per_student:
        command.append("--seed-per-student")
    started, wall_clock = time.monotonic(), time.time()
    subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
    return time.monotonic() - started, wall_clock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--loop", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=None, help="the class's seed (default: drawn from a new salt)")
    parser.add_argument("--seed-per-student", action="store_true", help="a seed of its own for each student")
    parser.add_argument("--rounds", type=int, default=1, help="loop and class measured again, side by side")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-class-") as tmp:
        root = Path(tmp)
        checks, subs = make_class(root, args.students)
        names = sorted(p.name for p in subs.iterdir())
        with_modules = [n for n in names if (subs / n / "exercises").is_dir()][: args.loop]
        half = len(with_modules) // 2
        speedups = []
        for number in range(1, args.rounds + 1):
            (root / "loop").mkdir(exist_ok=True)
            shutil.rmtree(root / "out", ignore_errors=True)
            # half the loop before the class, half after: a machine whose
            # speed drifts during the round (a shared VM's does) tilts neither side
            loop_times = shell_loop(checks, subs, with_modules[:half], args.timeout, root / "loop", args.seed)
            wall, began = class_run(checks, subs, root / "out", args)
            loop_times += shell_loop(checks, subs, with_modules[half:], args.timeout, root / "loop", args.seed)
            reports = [json.loads(p.read_text()) for p in (root / "out").glob("student*.json")]
            per_student = [r.get("grading_s", 0.0) for r in reports]
            statuses = {s: sum(r["status"] == s for r in reports)
                        for s in ("graded", "not attempted", "missing", "error")}
            loop_mean = statistics.mean(loop_times)
            speedups.append(loop_mean * args.students / wall)
            if args.rounds > 1:
                print(f"-- round {number} of {args.rounds}")
            print(f"class of {args.students}: {statuses}")
            print(f"autograd-grader class: {wall:.1f} s wall, {wall / args.students:.2f} s per student, "
                  f"median {statistics.median(per_student):.2f} s of grading per student")
            print(f"shell loop of pytest --grade (first {len(loop_times)}, half before the class, half after): "
                  f"mean {loop_mean:.2f} s, median {statistics.median(loop_times):.2f} s per student; "
                  f"extrapolated to {args.students}: {loop_mean * args.students:.0f} s")
            print(f"speed-up: {speedups[-1]:.1f}x")
            start_up, pace, end = phases(root / "out", began, began + wall)
            print(f"the class run's phases: {start_up:.1f} s to the first student's report, then {pace:.3f} s "
                  f"per student, {end:.1f} s after the last one (gradebook and report); at that pace alone "
                  f"the speed-up would be {loop_mean / pace:.1f}x")
        if args.rounds > 1:
            print(f"speed-up over {args.rounds} rounds: median {statistics.median(speedups):.1f}x "
                  f"(from {min(speedups):.1f}x to {max(speedups):.1f}x)")
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"peak memory of one process (a grading worker, a sandbox worker or a loop's pytest): {peak_mb:.0f} MB")
        for path in (root / "out").glob("*.csv"):
            print(f"wrote {path.name}: {len(path.read_text().splitlines())} lines")


if __name__ == "__main__":
    main()

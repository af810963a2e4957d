"""Grading a class: `autograd-grader class` against a shell loop of
`pytest --grade`, one student after another, side by side in one run.

    python bench/bench_class.py [--students 100] [--loop 10] [--jobs N] [--timeout 3] [--seed N] [--seed-per-student]
                                [--rounds N]

A synthetic class is built from the curriculum: reference solutions,
untouched stubs, partial submissions (some topics solved), one module that
hangs at import, one that kills its process, one empty folder. The loop
grades --loop students with the instructor's safe invocation, one pytest
process each, as a shell loop would. They are drawn kind by kind in
proportion to the class, with at least one of each kind (the hang, the
crash and the empty folder too), and the loop's time for the whole class
is each kind's mean times its number of students: a hang costs its lone
run the whole timeout, and a sample that held it once in ten would charge
the class ten hangs. Half of the loop runs before the class and half
after, so that a machine whose speed drifts (a shared VM's does, by a third
within minutes) favours neither side; --rounds repeats the whole and
prints the median speed-up. The class is graded as ``autograd-grader
class`` grades by default (one seed for the class, drawn from a new salt),
with ``--seed N`` (the loop then uses the same ``--grade-seed``), or with
``--seed-per-student``; a lone run draws its own seed. Printed: total wall,
per-student median, the speed-up with the number of CPUs the run may use
(``taskset -c 0 python bench/bench_class.py`` gives one CPU's), the
machine's busy CPU time during the class run and during a lone run (run it
on a quiet machine), and peak memory. Figures are printed, not asserted.
Each round also prints where the class run's wall time went: start-up, the
steady pace per student and the end.
"""

from __future__ import annotations

import argparse
import json
import os
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


def make_class(root: Path, students: int) -> tuple[Path, Path, dict[str, str]]:
    """checks/ (the curriculum's checks and a pytest.ini), subs/<student>/exercises/,
    and each student's kind (solution, stubs, partial, hang, crash, empty)."""
    checks, subs = root / "checks", root / "subs"
    checks.mkdir()
    subs.mkdir()
    for topic in TOPICS:
        shutil.copy(EXERCISES / f"test_{topic}.py", checks)
    (checks / "pytest.ini").write_text("[pytest]\n")
    rng = random.Random(20261122)
    specials = {3: "hang", 7: "crash", 11: "empty"}
    kinds = {}
    for number in range(students):
        folder = subs / f"student{number:03d}"
        kind = kinds[folder.name] = specials.get(number) or rng.choice(
            ["solution"] * 4 + ["stubs"] * 2 + ["partial"] * 3
        )
        if kind == "empty":
            folder.mkdir()
            continue
        modules = folder / "exercises"
        modules.mkdir(parents=True)
        solved = {
            "solution": set(TOPICS),
            "stubs": set(),
            "partial": set(rng.sample(TOPICS, len(TOPICS) // 2)),
            "hang": set(TOPICS),
            "crash": set(TOPICS),
        }[kind]
        for topic in TOPICS:
            shutil.copy((SOLUTIONS if topic in solved else EXERCISES) / f"{topic}.py", modules)
        if kind == "hang":
            with open(modules / "graph.py", "a") as handle:
                handle.write("\nwhile True:\n    pass\n")
        if kind == "crash":
            with open(modules / "leaf.py", "a") as handle:
                handle.write("\nimport os\nos._exit(3)\n")
    return checks, subs, kinds


def loop_sample(kinds: dict[str, str], size: int) -> tuple[list[str], list[str]]:
    """The students the loop grades, in two halves (before the class and
    after), each holding every kind about as often: ``size`` shared out in
    proportion to each kind's number of students, at least one each."""
    by_kind: dict[str, list[str]] = {}
    for student in sorted(kinds):
        by_kind.setdefault(kinds[student], []).append(student)
    share = {kind: max(1, round(size * len(names) / len(kinds))) for kind, names in by_kind.items()}
    picked = [names[:: max(1, len(names) // share[kind])][: share[kind]] for kind, names in sorted(by_kind.items())]
    order = [student for group in picked for student in group]
    return order[0::2], order[1::2]


def loop_estimate(kinds: dict[str, str], times: dict[str, float]) -> float:
    """The loop's seconds for the whole class: each kind's mean lone run
    times that kind's number of students."""
    means: dict[str, list[float]] = {}
    for student, seconds in times.items():
        means.setdefault(kinds[student], []).append(seconds)
    return sum(statistics.mean(means[kind]) for kind in kinds.values())


def busy_cpu() -> float:
    """Seconds the machine's CPUs have been busy since boot, from
    /proc/stat (0 elsewhere). Read around a run on an otherwise quiet
    machine, it counts every process of the run, also those (the sandbox's)
    that no parent waits for and so never reach RUSAGE_CHILDREN."""
    try:
        with open("/proc/stat") as handle:
            fields = [int(x) for x in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def shell_loop(
    checks: Path, subs: Path, students: list[str], timeout: float, out: Path, seed: int | None, cpu: list[float]
) -> dict[str, float]:
    """Each student's wall seconds; each lone run's CPU seconds go to ``cpu``."""
    times = {}
    for student in students:
        before = busy_cpu()
        report = out / f"{student}.json"
        modules = subs / student / "exercises"
        submission = modules if modules.is_dir() else subs / student  # the empty folder as it came
        started = time.monotonic()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-c",
                str(checks / "pytest.ini"),
                "--rootdir",
                str(checks),
                "-p",
                "no:cacheprovider",
                "-q",
                "--grade",
                str(checks),
                f"--grade-submission={submission}",
                f"--grade-timeout={timeout:g}",
                *([f"--grade-seed={seed}"] if seed is not None else []),
                "--grade-json",
                str(report),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=out,
        )
        times[student] = time.monotonic() - started
        cpu.append(busy_cpu() - before)
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


def class_run(checks: Path, subs: Path, out: Path, args) -> tuple[float, float, float]:
    """Wall seconds, when it started (time.time()) and its CPU seconds."""
    command = [
        sys.executable,
        "-m",
        "pytest_autograd_grader",
        "class",
        "--checks",
        str(checks),
        "--submissions",
        str(subs),
        "--out",
        str(out),
        f"--timeout={args.timeout:g}",
    ]
    if args.jobs:
        command.append(f"--jobs={args.jobs}")
    if args.seed is not None:
        command.append(f"--seed={args.seed}")
    if args.seed_per_student:
        command.append("--seed-per-student")
    started, wall_clock, cpu = time.monotonic(), time.time(), busy_cpu()
    subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
    return time.monotonic() - started, wall_clock, busy_cpu() - cpu


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
    # the speed-up depends on them: the class runner grades on every CPU it
    # may use (its default -j), where a lone run mostly waits for its imports
    from pytest_autograd_grader.classroom.pool import usable_cpus

    cpus = usable_cpus()
    on_cpus = f"on {cpus} CPU" + ("s" if cpus != 1 else "")
    with tempfile.TemporaryDirectory(prefix="bench-class-") as tmp:
        root = Path(tmp)
        checks, subs, kinds = make_class(root, args.students)
        before, after = loop_sample(kinds, args.loop)
        speedups = []
        for number in range(1, args.rounds + 1):
            (root / "loop").mkdir(exist_ok=True)
            shutil.rmtree(root / "out", ignore_errors=True)
            # half the loop before the class, half after: a machine whose
            # speed drifts during the round (a shared VM's does) tilts neither side
            loop_cpu: list[float] = []
            loop_times = shell_loop(checks, subs, before, args.timeout, root / "loop", args.seed, loop_cpu)
            wall, began, class_cpu = class_run(checks, subs, root / "out", args)
            loop_times |= shell_loop(checks, subs, after, args.timeout, root / "loop", args.seed, loop_cpu)
            reports = [json.loads(p.read_text()) for p in (root / "out").glob("student*.json")]
            per_student = [r.get("grading_s", 0.0) for r in reports]
            statuses = {
                s: sum(r["status"] == s for r in reports) for s in ("graded", "not attempted", "missing", "error")
            }
            loop_total = loop_estimate(kinds, loop_times)
            loop_mean = loop_total / args.students
            speedups.append(loop_total / wall)
            if args.rounds > 1:
                print(f"-- round {number} of {args.rounds}")
            print(f"class of {args.students}: {statuses}")
            print(
                f"autograd-grader class: {wall:.1f} s wall, {wall / args.students:.2f} s per student, "
                f"median {statistics.median(per_student):.2f} s of grading per student"
            )
            counts = {kind: list(kinds.values()).count(kind) for kind in sorted(set(kinds.values()))}
            sampled = {kind: [round(t, 2) for s, t in loop_times.items() if kinds[s] == kind] for kind in counts}
            print(
                f"shell loop of pytest --grade ({len(loop_times)} students, half before the class, half after), "
                f"seconds of each lone run by kind (students of that kind in the class): "
                + "; ".join(f"{kind} ({counts[kind]}) {sampled[kind]}" for kind in counts)
            )
            print(
                f"loop for the class, each kind's mean times its students: {loop_total:.0f} s, "
                f"{loop_mean:.2f} s per student"
            )
            print(f"speed-up: {speedups[-1]:.1f}x {on_cpus}")
            print(
                f"busy CPU time of the machine: the class run {class_cpu:.1f} s, "
                f"{class_cpu / args.students:.2f} s per student; a lone run {statistics.mean(loop_cpu):.2f} s "
                f"(mean of the loop's {len(loop_cpu)})"
            )
            start_up, pace, end = phases(root / "out", began, began + wall)
            print(
                f"the class run's phases: {start_up:.1f} s to the first student's report, then {pace:.3f} s "
                f"per student, {end:.1f} s after the last one (gradebook and report); at that pace alone "
                f"the speed-up would be {loop_mean / pace:.1f}x"
            )
        if args.rounds > 1:
            print(
                f"speed-up over {args.rounds} rounds {on_cpus}: median {statistics.median(speedups):.1f}x "
                f"(from {min(speedups):.1f}x to {max(speedups):.1f}x)"
            )
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"peak memory of one process (a grading worker, a sandbox worker or a loop's pytest): {peak_mb:.0f} MB")
        for path in (root / "out").glob("*.csv"):
            print(f"wrote {path.name}: {len(path.read_text().splitlines())} lines")


if __name__ == "__main__":
    main()

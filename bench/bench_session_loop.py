"""What the class runner's one session per worker buys, side by side in one
run: the same few students graded three ways, in this one process as a
class worker grades them, and by a shell loop.

    python bench/bench_session_loop.py [--students 6] [--rounds 3] [--timeout 3] [--seed N]

1. one session per worker (classroom/session_loop.py, what ``autograd-grader
   class`` does): the checks configured and collected once, then run again
   for each student. Running a collected item again needs pytest's private
   API, all of it in pytest_autograd_grader/pytest_internals.py
   (``forget_run``: item._report_sections, Function._initrequest;
   ``unstop``: session._shouldstop/_shouldfail; ``teardown_all``:
   session._setupstate);
2. a warm session per student (runner.grade_student, what a worker falls
   back to, public API only): pytest configured and the checks collected
   for each student, in the same warm process (torch and the sandbox's
   zygote already up);
3. a ``pytest --grade`` process per student, as a shell loop runs them.

Each student's seconds are the grading alone (1 and 2: the report's
grading_s, as the class runner counts it; 3: the process's wall time). The
students are reference solutions, untouched stubs and half-solved
submissions in turn; every round grades them all three ways, the order of
the ways turned each round so that a machine whose speed drifts favours
none. Printed: the median per student of each way, the ratios (1 against 2
is the trade of the private API; 1 against 3, the class runner's against a
shell loop on one CPU), and whether the three gave every student the same
scores. Figures are printed, not asserted; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
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
KINDS = ("solution", "stubs", "partial")


def make_class(root: Path, students: int) -> tuple[Path, Path]:
    """checks/ (the curriculum's checks and a pytest.ini) and subs/<student>/exercises/."""
    checks, subs = root / "checks", root / "subs"
    checks.mkdir()
    for topic in TOPICS:
        shutil.copy(EXERCISES / f"test_{topic}.py", checks)
    (checks / "pytest.ini").write_text("[pytest]\n")
    rng = random.Random(20261127)
    for number in range(students):
        kind = KINDS[number % len(KINDS)]
        solved = {"solution": set(TOPICS), "stubs": set(), "partial": set(rng.sample(TOPICS, len(TOPICS) // 2))}[kind]
        modules = subs / f"student{number:02d}-{kind}" / "exercises"
        modules.mkdir(parents=True)
        for topic in TOPICS:
            shutil.copy((SOLUTIONS if topic in solved else EXERCISES) / f"{topic}.py", modules)
    return checks, subs


def one_session(settings, students: list, seed: int) -> dict[str, tuple[float, float]]:
    """Way 1: {student: (seconds, percent)}."""
    from pytest_autograd_grader.classroom import runner

    tasks = [(student, seed) for student in reversed(students)]
    graded: dict[str, tuple[float, float]] = {}

    def sent(report: dict) -> None:
        graded[report["student"]] = (float(report["grading_s"]), float(report.get("percent") or 0.0))

    left = runner._grade_in_one_session(settings, seed, lambda: tasks.pop() if tasks else None, lambda: None, sent)
    if left is not None or len(graded) != len(students):
        sys.exit("the session loop broke: the figures would be a session each's (see tests/test_class_runner.py)")
    return graded


def session_each(settings, students: list, seed: int) -> dict[str, tuple[float, float]]:
    """Way 2: {student: (seconds, percent)}."""
    from pytest_autograd_grader.classroom import runner

    graded = {}
    for student in students:
        report = runner.grade_student(settings, student, seed)
        graded[student.id] = (float(report["grading_s"]), float(report.get("percent") or 0.0))
    return graded


def process_each(settings, students: list, seed: int, scratch: Path) -> dict[str, tuple[float, float]]:
    """Way 3: {student: (seconds, percent)}."""
    graded = {}
    for student in students:
        report = scratch / f"{student.id}.json"
        started = time.monotonic()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-c",
                str(settings.checks / "pytest.ini"),
                "--rootdir",
                str(settings.checks),
                "-p",
                "no:cacheprovider",
                "-q",
                "--grade",
                str(settings.checks),
                f"--grade-submission={student.modules}",
                f"--grade-timeout={settings.timeout:g}",
                f"--grade-seed={seed}",
                "--grade-json",
                str(report),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=scratch,
        )
        seconds = time.monotonic() - started
        if not report.is_file():
            sys.exit(f"the lone run of {student.id} wrote no report: is pytest-autograd-grader importable from here?")
        graded[student.id] = (seconds, float(json.loads(report.read_text()).get("percent") or 0.0))
    return graded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=20261127)
    args = parser.parse_args()

    import pytest

    from pytest_autograd_grader.classroom.runner import ClassSettings, grade_student
    from pytest_autograd_grader.classroom.students import checks_sha256, find_students
    from pytest_autograd_grader.in_process import warm_sandbox

    with tempfile.TemporaryDirectory(prefix="bench-session-loop-") as tmp:
        root = Path(tmp)
        checks, subs = make_class(root, args.students)
        out, scratch = root / "out", root / "loop"
        out.mkdir()
        scratch.mkdir()
        settings = ClassSettings(checks=checks, out=out, checks_sha256=checks_sha256(checks), timeout=args.timeout)
        students = sorted(find_students(subs), key=lambda s: s.id)
        print(
            f"{len(students)} students ({', '.join(KINDS)} in turn), {len(TOPICS)} topics' checks, seed {args.seed}, "
            f"pytest {pytest.__version__}, {args.rounds} rounds"
        )
        with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink):
            warm_sandbox(None)  # as a class worker does before its first student
        grade_student(settings, students[0], args.seed)  # torch, pytest and the plugin imported: warm as a worker
        ways = {
            "one session per worker": lambda: one_session(settings, students, args.seed),
            "a warm session per student": lambda: session_each(settings, students, args.seed),
            "a pytest --grade process per student": lambda: process_each(settings, students, args.seed, scratch),
        }
        seconds: dict[str, list[float]] = {way: [] for way in ways}
        scores: dict[str, dict[str, float]] = {}
        names = list(ways)
        for number in range(args.rounds):
            for way in names[number % 3 :] + names[: number % 3]:
                graded = ways[way]()
                seconds[way] += [s for s, _ in graded.values()]
                scores.setdefault(way, {k: p for k, (_, p) in graded.items()})
        median = {way: statistics.median(values) for way, values in seconds.items()}
        for way, label in zip(
            names,
            (
                "(classroom/session_loop.py: pytest's private API, pytest_internals.py)",
                "(runner.grade_student, the loop's fallback: public API only)",
                "(a shell loop)",
            ),
        ):
            print(f"{way}: median {median[way]:.3f} s per student over {len(seconds[way])} gradings {label}")
        loop, session, process = (median[way] for way in names)
        print(
            f"one session per worker against a warm session each: {session / loop:.2f}x faster per student "
            f"(what the private API buys: pytest configured and the checks collected once per worker)"
        )
        print(
            f"one session per worker against a process each: {process / loop:.2f}x faster per student "
            f"(one CPU; autograd-grader class also grades on every CPU)"
        )
        same = len({tuple(sorted(s.items())) for s in scores.values()}) == 1
        print(f"same score for every student all three ways: {'yes' if same else 'NO: ' + json.dumps(scores)}")


if __name__ == "__main__":
    main()

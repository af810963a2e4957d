"""The audit of the shipped course against a loop of lone runs, side by
side in one run.

    python bench/bench_audit.py [--seeds 2] [--topic NAME ...] [--jobs N] [--loop 12] [--full-mutants]

The audit (``autograd-grader audit exercises/ --solutions solutions/``,
with mistakes/ where it exists) grades every variant (solution, stub,
planted mistake, mutant) on every seed as a synthetic class on the class
runner's warm workers. The loop grades a sample of the same (variant,
seed) pairs, --loop of them drawn kind by kind in proportion, each with a
lone ``pytest --grade`` process (the instructor's safe invocation, ``-x``
for a mutant as the audit grades it); the loop's time for all of them is
each kind's mean times its count (a sample, scaled, and printed as such).
Half of the sample runs before the audit and half after, so a machine
whose speed drifts favours neither side. Printed: the audit's wall time,
mutants per second, the loop's scaled time and the ratio.
``--full-mutants`` grades the mutants again without stopping at their
first failing check and prints both walls: whether ``-x`` pays. Figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_autograd_grader.audit import audit_command  # noqa: E402
from pytest_autograd_grader.audit.grading import run_audit, topic_variants  # noqa: E402
from pytest_autograd_grader.audit.variants import build_checks, build_variant  # noqa: E402
from pytest_autograd_grader.classroom.runner import ClassSettings, pytest_args  # noqa: E402


def setup_for(options):
    args = argparse.Namespace(
        checks=str(REPO / "exercises"),
        solutions=str(REPO / "solutions"),
        mistakes=None,
        seeds=options.seeds,
        json=None,
        html=None,
        fail_under=None,
        accepted=None,
        no_mutants=False,
        topic=options.topic,
        jobs=options.jobs,
        timeout=None,
        lang=None,
    )
    return audit_command.prepare(args)


def sample(setup, size: int, rng: random.Random) -> tuple[list, dict[str, int]]:
    """``size`` (topic, variant, seed) drawn kind by kind in proportion
    (at least one of each kind), and each kind's count in the audit."""
    pairs = [(t, v, s) for t in setup.topics for v in topic_variants(setup, t) for s in setup.seeds]
    kinds: dict[str, list] = {}
    for pair in pairs:
        kinds.setdefault(pair[1].kind, []).append(pair)
    drawn = []
    for members in kinds.values():
        share = max(1, round(size * len(members) / len(pairs)))
        drawn += rng.sample(members, min(share, len(members)))
    rng.shuffle(drawn)
    return drawn, {kind: len(members) for kind, members in kinds.items()}


def lone_run(setup, topic: str, variant, seed: int, root: Path, number: int) -> tuple[str, float]:
    """One lone ``pytest --grade`` of a variant, as a loop of runs would make it."""
    work = root / f"lone{number}"
    checks = build_checks(setup.checks, setup.check_files[topic], work / "checks")
    folder = build_variant(setup.solutions, variant, work / "submission")
    settings = ClassSettings(
        checks=checks, out=work, checks_sha256="", extra_args=("-x",) if variant.kind == "mutant" else ()
    )
    command = [sys.executable, "-m", "pytest", *pytest_args(settings, folder, seed, work / "report.json")]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.monotonic()
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, env=env, timeout=1200)
    if not (work / "report.json").is_file():
        sys.exit(f"a lone run wrote no report (exit {done.returncode}): {done.stdout[-800:]}{done.stderr[-800:]}")
    return variant.kind, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--topic", nargs="+", default=None)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--loop", type=int, default=12)
    parser.add_argument("--full-mutants", action="store_true")
    options = parser.parse_args()
    setup = setup_for(options)
    drawn, counts = sample(setup, options.loop, random.Random(20261127))
    timings: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
        half = len(drawn) // 2
        for number, (topic, variant, seed) in enumerate(drawn[:half]):
            kind, seconds = lone_run(setup, topic, variant, seed, Path(tmp), number)
            timings.setdefault(kind, []).append(seconds)
        document = run_audit(setup, progress=None)
        for number, (topic, variant, seed) in enumerate(drawn[half:], half):
            kind, seconds = lone_run(setup, topic, variant, seed, Path(tmp), number)
            timings.setdefault(kind, []).append(seconds)
    runs = sum(counts.values())
    mutants = len(document["mutants"])
    print(
        f"audit: {len(setup.topics)} topics, seeds 1..{options.seeds}, {runs} graded runs "
        f"({', '.join(f'{k} {v}' for k, v in counts.items())}), jobs {setup.jobs or 'default'}"
    )
    print(
        f"audit wall: {document['seconds']:.1f} s; {mutants} mutants, "
        f"{document['mutants_per_second'] or 0:.3f} mutants/s (whole audit wall), "
        f"score {document['score']['percent']} %; passed={document['passed']}"
    )
    loop = sum(statistics.mean(timings[k]) * counts[k] for k in counts if k in timings)
    print(
        f"lone-run loop: {len(drawn)} sampled runs, mean per kind "
        f"{ {k: round(statistics.mean(v), 2) for k, v in timings.items()} } s; "
        f"scaled to {runs} runs: {loop:.1f} s (a sample, scaled)"
    )
    print(f"ratio loop / audit: {loop / document['seconds']:.2f}x")
    if options.full_mutants:
        # full, then stopped again: a machine that speeds up or slows down favours neither
        setup.stop_mutants_first = False
        full = run_audit(setup, progress=None)
        setup.stop_mutants_first = True
        again = run_audit(setup, progress=None)
        print(
            f"audit with mutants stopped at their first failing check: {document['seconds']:.1f} s and "
            f"{again['seconds']:.1f} s; graded in full (between them): {full['seconds']:.1f} s"
        )


if __name__ == "__main__":
    main()

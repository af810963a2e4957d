"""Every (variant, seed) of a topic graded as one student of a synthetic
class on the class runner's warm workers (classroom/pool.py): the checks
are collected once per worker and each variant costs only its own run.

Planted mistakes, the solution and the stub are graded in full (which
checks they fail and which diagnoses they get matter). A mutant's only
question is killed or not: its run stops at its first failing check
(``Student.stop_first``, -x for that student alone), in the same pool."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..classroom.runner import ClassSettings, Outcome
from ..classroom.students import Student, checks_sha256
from ..i18n import msg
from .planted import Planted
from .variants import Variant, build_checks, build_variant, stub_source

# seconds one variant's whole run may take (a mutant that hangs the grader
# costs itself only); each check's student code is bounded by --grade-timeout
STUDENT_TIMEOUT = 300.0


@dataclass
class GradeOptions:
    jobs: int = 1
    timeout: float | None = None  # --grade-timeout per check
    lang: str | None = None
    stop_mutants_first: bool = True  # grade mutants with -x
    student_timeout: float = STUDENT_TIMEOUT


Reports = dict[tuple[int, int], dict]  # (variant's index, seed) -> its report


def grade_topic(
    checks: Path,
    solutions: Path,
    check_files: list[Path],
    variants: list[Variant],
    seeds: list[int],
    options: GradeOptions,
    work: Path,
    on_done: Callable[[Outcome], None] = lambda outcome: None,
) -> Reports:
    """The report of each variant (by index in ``variants``) on each seed,
    all graded in one pool (its start, warming each worker's sandbox, is
    what a run costs most)."""
    from ..classroom.pool import grade_all

    topic_checks = build_checks(checks, check_files, work / "checks")
    out = work / "out"
    out.mkdir(parents=True)
    settings = ClassSettings(
        checks=topic_checks,
        out=out,
        checks_sha256=checks_sha256(topic_checks),
        timeout=options.timeout,
        lang=options.lang,
        student_timeout=options.student_timeout,
    )
    students = []
    for index, variant in enumerate(variants):
        folder = build_variant(solutions, variant, work / "variants" / f"v{index}")
        stop = variant.kind == "mutant" and options.stop_mutants_first
        students += [
            (Student(student_id(index, seed), folder.name, folder, True, stop_first=stop), seed) for seed in seeds
        ]
    grade_all(settings, students, max(1, options.jobs), on_done)
    return {
        (index, seed): read_report(out, student_id(index, seed)) for index in range(len(variants)) for seed in seeds
    }


def student_id(index: int, seed: int) -> str:
    """The synthetic student of variant ``index`` on ``seed``."""
    return f"v{index}-s{seed}"


def read_report(out: Path, student: str) -> dict:
    """What the class run wrote of one synthetic student (the private
    report: diagnoses included); a missing one reads as an error."""
    try:
        report = json.loads((out / f"{student}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {"status": "error", "error": f"no report: {exc}", "checks": [], "score": 0.0, "max_score": 0.0}
    return report if isinstance(report, dict) else {"status": "error", "error": "no report", "checks": []}


def work_folder() -> tempfile.TemporaryDirectory:
    """Where the synthetic class lives while it is graded: readable by
    this user only (mkdtemp's 0o700), so no sandbox uid reaches it."""
    return tempfile.TemporaryDirectory(prefix="autograd-audit-")


@dataclass
class Setup:
    """What an audit grades, checked by cli.prepare."""

    checks: Path
    solutions: Path
    mistakes_dir: Path | None
    topics: list[str]
    check_files: dict[str, list[Path]]  # topic -> its check files
    modules: dict[str, str]  # solution module -> source
    planted: list[Planted]
    mutants: dict[str, list]  # topic -> its Mutants
    accepted: dict[str, str]  # accepted survivor id -> reason
    seeds: list[int]
    jobs: int | None = None
    timeout: float | None = None
    lang: str | None = None
    fail_under: float | None = None
    stop_mutants_first: bool = True


def run_audit(setup: Setup, progress: TextIO | None = None) -> dict:
    """Grade every topic's variants on every seed (a pool per topic) and
    return the JSON document."""
    from ..classroom.pool import usable_cpus
    from .verdicts import Graded, build_document

    started = time.monotonic()
    options = GradeOptions(setup.jobs or usable_cpus(), setup.timeout, setup.lang, setup.stop_mutants_first)
    graded: dict[tuple[str, str, str], Graded] = {}  # (kind, topic, key) -> its reports
    with work_folder() as tmp:
        for topic in setup.topics:
            variants = topic_variants(setup, topic)
            done = _progress_of(topic, len(variants) * len(setup.seeds), progress)
            reports = grade_topic(
                setup.checks,
                setup.solutions,
                setup.check_files[topic],
                variants,
                setup.seeds,
                options,
                Path(tmp) / topic,
                done,
            )
            for index, variant in enumerate(variants):
                graded[(variant.kind, topic, variant.key)] = Graded({s: reports[(index, s)] for s in setup.seeds})
    return build_document(setup, graded, time.monotonic() - started)


def _progress_of(topic: str, total: int, progress: TextIO | None) -> Callable[[Outcome], None]:
    """What each graded variant calls: every 20th and the last says how far
    the topic is."""
    count = 0

    def done(outcome: Outcome) -> None:
        nonlocal count
        count += 1
        if progress is not None and (count == total or count % 20 == 0):
            print(msg("audit.progress", topic=topic, done=count, total=total), file=progress, flush=True)

    return done


def topic_variants(setup: Setup, topic: str) -> list[Variant]:
    """The solution, the stub (where CHECKS has one), the planted mistakes
    that parse and the mutants of one topic."""
    variants = [Variant("solution", topic, "", setup.modules[topic])]
    stub = stub_source(setup.checks, topic)
    if stub is not None:
        variants.append(Variant("stub", topic, "", stub))
    variants += [Variant("mistake", topic, p.name, p.source) for p in setup.planted if p.topic == topic and not p.error]
    variants += [Variant("mutant", topic, m.id, m.source) for m in setup.mutants.get(topic, [])]
    return variants

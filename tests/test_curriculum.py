"""The curriculum as a whole: the reference solutions earn every point for
any seed, the untouched stubs earn none without a single check in error, and
one topic left unsolved costs exactly that topic's concept."""

from __future__ import annotations

import re
import shutil

import pytest
from conftest import EXERCISES, SOLUTIONS

TOPICS = sorted(p.stem.removeprefix("test_") for p in EXERCISES.glob("test_*.py"))
SEEDS = list(range(1, 21))
# checks of the torch topics whose exercise takes no tensor from the check
# (a description of a graph to predict from): no input class to draw
NO_TENSOR_INPUTS: set[str] = {
    "test_predict_leaves",  # leaf: a list describing a graph, predicted in plain Python
    "test_predict_requires_grad",  # no_grad: a list describing a graph, predicted in plain Python
}


def test_every_topic_has_stub_checks_and_solution():
    assert TOPICS, "no topics found in exercises/"
    for topic in TOPICS:
        assert (EXERCISES / f"{topic}.py").is_file(), f"exercises/{topic}.py is missing"
        assert (SOLUTIONS / f"{topic}.py").is_file(), f"solutions/{topic}.py is missing"


def test_solutions_score_full_marks_on_every_seed(grade_seeds):
    graded = grade_seeds(TOPICS, seeds=SEEDS)
    wrong = {c["id"]: c["feedback"] for c in graded.report["checks"] if c["status"] != "passed"}
    assert wrong == {}
    assert graded.report["percent"] == 100.0
    assert {c["id"] for c in graded.report["concepts"]} == set(TOPICS)
    runs = {}
    for check in graded.report["checks"]:
        runs.setdefault(check["id"].split("[")[0], []).append(check)
    assert {len(r) for r in runs.values()} == {len(SEEDS)}
    # every input class a torch check declares (what its exercise's
    # docstring allows) is drawn on every seed, so no answer that is right
    # for some inputs only passes on a lucky seed
    for name, checks in runs.items():
        test = name.split("::")[-1]
        if checks[0]["topic"] == "engine" or test in NO_TENSOR_INPUTS:
            continue
        for check in checks:
            assert check["inputs_missing"] == [], (check["id"], check["inputs"], check["inputs_missing"])


def test_untouched_stubs_score_zero_with_only_not_implemented(grade_topics):
    graded = grade_topics(TOPICS, stubs=TOPICS)
    assert graded.report["score"] == 0
    for check in graded.report["checks"]:
        topic = check["id"].split("::")[0].removeprefix("checks/test_").removesuffix(".py")
        assert check["status"] == "failed", check
        assert f"not implemented yet: {topic}." in check["feedback"], check
        # the unwritten part named as a function or method, never as a bare line of code
        assert re.search(
            rf"not implemented yet: {topic}\.\w+(\.\w+)?( \({topic}\.py line \d+\))?$",
            check["feedback"].splitlines()[0],
        ), check


def test_curriculum_is_about_100_points_with_three_checks_per_concept(grade_topics):
    report = grade_topics(TOPICS).report
    for concept in report["concepts"]:
        assert concept["checks"] >= 3, concept
    pytorch_track = sum(c["max_score"] for c in report["checks"] if c["topic"] != "engine")
    assert 90 <= pytorch_track <= 110
    engine_track = sum(c["max_score"] for c in report["checks"] if c["topic"] == "engine")
    assert 10 <= engine_track <= 20


def _curriculum_copies(pytester, copies: dict[str, str]) -> None:
    """A directory per copy: every topic's checks beside its module, the
    stub for topics in ``copies[name]`` (a set), else the solution. One
    session grades them all (checks grade the modules beside them)."""
    for name, unsolved in copies.items():
        copy = pytester.mkdir(name)
        for topic in TOPICS:
            shutil.copy(EXERCISES / f"test_{topic}.py", copy / f"test_{topic}.py")
            shutil.copy((EXERCISES if topic in unsolved else SOLUTIONS) / f"{topic}.py", copy / f"{topic}.py")


def _checks_of(graded, copy: str) -> list[dict]:
    checks = [c for c in graded.report["checks"] if c["id"].startswith(f"{copy}/")]
    assert {c["topic"] for c in checks} == set(TOPICS)
    return checks


def test_one_unsolved_topic_costs_exactly_its_checks(pytester):
    # The engine track's checks count under leaf, accumulation, ... too, so
    # a topic costs its own checks, and a concept only through them.
    from conftest import run_grader

    _curriculum_copies(pytester, {f"unsolved_{topic}": {topic} for topic in TOPICS})
    graded = run_grader(pytester, "--import-mode=importlib", "--grade-seed", "20261122", "--tb=no", "-rN")
    assert graded.report["complete"] is True
    for unsolved in TOPICS:
        for check in _checks_of(graded, f"unsolved_{unsolved}"):
            expected = 0.0 if check["topic"] == unsolved else check["max_score"]
            assert check["score"] == expected, (unsolved, check)
            if check["topic"] == unsolved:
                assert f"not implemented yet: {unsolved}." in check["feedback"], check


@pytest.mark.parametrize("isolation", ["bwrap", "user", "process"])
def test_every_isolation_grades_solutions_full_and_stubs_zero(pytester, isolation):
    from conftest import run_grader
    from test_isolation import require_isolation

    require_isolation(isolation)
    _curriculum_copies(pytester, {"solved": set(), "stubs": set(TOPICS)})
    graded = run_grader(
        pytester,
        "--import-mode=importlib",
        "--grade-seed",
        "20261122",
        "--tb=no",
        "-rN",
        f"--grade-isolation={isolation}",
    )
    assert graded.report["isolation"] == isolation
    solved, stubs = _checks_of(graded, "solved"), _checks_of(graded, "stubs")
    assert [c["feedback"] for c in solved if c["status"] != "passed"] == []
    assert sum(c["score"] for c in stubs) == 0
    assert {c["status"] for c in stubs} == {"failed"}

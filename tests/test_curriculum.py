"""The curriculum as a whole: the reference solutions earn every point for
any seed, the untouched stubs earn none without a single check in error, and
one topic left unsolved costs exactly that topic's concept."""

from __future__ import annotations

import pytest
from conftest import EXERCISES, SOLUTIONS

TOPICS = sorted(p.stem.removeprefix("test_") for p in EXERCISES.glob("test_*.py"))
SEEDS = list(range(1, 21))


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


def test_untouched_stubs_score_zero_with_only_not_implemented(grade_topics):
    graded = grade_topics(TOPICS, stubs=TOPICS)
    assert graded.report["score"] == 0
    for check in graded.report["checks"]:
        topic = check["id"].split("::")[0].removeprefix("checks/test_").removesuffix(".py")
        assert check["status"] == "failed", check
        assert f"not implemented yet: {topic}." in check["feedback"], check


def test_curriculum_is_about_100_points_with_three_checks_per_concept(grade_topics):
    report = grade_topics(TOPICS).report
    for concept in report["concepts"]:
        assert concept["checks"] >= 3, concept
    pytorch_track = sum(c["max_score"] for c in report["checks"] if c["topic"] != "engine")
    assert 90 <= pytorch_track <= 110
    engine_track = sum(c["max_score"] for c in report["checks"] if c["topic"] == "engine")
    assert 10 <= engine_track <= 20


@pytest.mark.parametrize("topic", TOPICS)
def test_one_unsolved_topic_costs_exactly_its_checks(grade_topics, topic):
    # the engine track's checks count under leaf, accumulation, ... too, so
    # a topic costs its own checks, and a concept only through them
    graded = grade_topics(TOPICS, stubs=[topic])
    for check in graded.report["checks"]:
        expected = 0.0 if check["topic"] == topic else check["max_score"]
        assert check["score"] == expected, check
    lost = {c["concept"] for c in graded.report["checks"] if c["topic"] == topic}
    for concept in graded.report["concepts"]:
        assert (concept["score"] < concept["max_score"]) == (concept["id"] in lost), concept


@pytest.mark.parametrize("isolation", ["bwrap", "user", "process"])
def test_every_isolation_grades_solutions_full_and_stubs_zero(grade_topics, isolation):
    from test_isolation import require_isolation

    require_isolation(isolation)
    solved = grade_topics(TOPICS, f"--grade-isolation={isolation}")
    assert solved.report["isolation"] == isolation
    assert solved.report["percent"] == 100.0, [c["feedback"] for c in solved.report["checks"] if c["status"] != "passed"]
    stubs = grade_topics(TOPICS, f"--grade-isolation={isolation}", stubs=TOPICS)
    assert stubs.report["score"] == 0
    assert {c["status"] for c in stubs.report["checks"]} == {"failed"}

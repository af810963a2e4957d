"""What needs real processes: pytest-xdist workers and a clean interpreter."""

from __future__ import annotations

import json

import pytest

MIXED = """
import os
import pytest

pytestmark = pytest.mark.grade(concept="graph")

@pytest.mark.parametrize("i", range(8))
@pytest.mark.grade(points=2)
def test_values(grade_rng, autograd, i):
    x = grade_rng.randn(3)
    # about half pass, decided by the seeded inputs alone
    if float(x.sum()) < 0:
        autograd.credit(0.5, "half right")

@pytest.mark.grade(concept="leaf", points=3)
def test_worker_dies():
    os._exit(1)

@pytest.mark.grade(concept="leaf", points=1)
def test_after_the_crash():
    pass
"""


def _report(pytester, *args, subprocess: bool = True):
    """A graded run's result and JSON report; the run with ``-n 2`` needs a
    process of its own, the one it is compared with does not."""
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run("--grade", "--grade-json", "r.json", "--grade-seed", "99", "-p", "no:cacheprovider", *args)
    return result, json.loads((pytester.path / "r.json").read_text())


def test_totals_identical_with_xdist_and_a_dead_worker(pytester):
    pytester.makepyfile(test_mixed=MIXED)
    pytester.makepyfile(
        test_more="""
        import pytest

        @pytest.mark.grade(concept="leaf", points=2)
        def test_fine():
            pass
    """
    )
    single_result, single = _report(pytester, "-p", "no:xdist", "-k", "not worker_dies", subprocess=False)
    dist_result, dist = _report(pytester, "-n", "2")
    # the dying check is 0 of its 3 points, marked crashed; nothing else changes
    died = next(c for c in dist["checks"] if c["id"].endswith("test_worker_dies"))
    assert died["status"] == "crashed" and died["score"] == 0 and died["max_score"] == 3
    assert "crashed while running" in died["feedback"]
    others = {c["id"]: (c["score"], c["status"]) for c in dist["checks"] if c is not died}
    assert others == {c["id"]: (c["score"], c["status"]) for c in single["checks"]}
    assert dist["score"] == single["score"]
    assert dist["max_score"] == single["max_score"] + 3
    assert dist["seed"] == single["seed"] == 99
    assert dist["complete"] is True
    dist_result.stdout.fnmatch_lines(["grade: seed 99 *"])


def test_plain_pytest_run_imports_no_torch(pytester, monkeypatch):
    # only our plugin: others installed beside it (jaxtyping, say) may import numpy themselves
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest("""
        import sys

        def pytest_sessionfinish(session):
            heavy = sorted(m for m in ("torch", "numpy") if m in sys.modules)
            print("HEAVY MODULES:", heavy or "none")
            print("GRADER PLUGIN:", session.config.pluginmanager.has_plugin("pytest_autograd_grader.plugin"))
    """)
    pytester.makepyfile(test_plain="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", "-p", "pytest_autograd_grader.plugin")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*HEAVY MODULES: none*"])
    # the plugin was active all the same
    result.stdout.fnmatch_lines(["*GRADER PLUGIN: True*"])


@pytest.mark.parametrize("isolation", ["bwrap", "user"])
def test_curriculum_totals_identical_with_xdist_in_each_isolation(pytester, isolation):
    import shutil

    from conftest import EXERCISES, SOLUTIONS, copy_course_files
    from test_isolation import require_isolation

    require_isolation(isolation)
    checks, student = pytester.path / "checks", pytester.path / "student"
    checks.mkdir()
    student.mkdir()
    for test in EXERCISES.glob("test_*.py"):
        shutil.copy(test, checks / test.name)
        topic = test.name.removeprefix("test_")
        # half the topics solved, half left as stubs: a mixed score
        shutil.copy((SOLUTIONS if topic < "i" else EXERCISES) / topic, student / topic)
    copy_course_files(checks)
    args = ("checks", "--grade-submission=student", f"--grade-isolation={isolation}")
    _, single = _report(pytester, *args, "-p", "no:xdist", subprocess=False)
    _, dist = _report(pytester, *args, "-n", "2")
    per_check = {c["id"]: (c["score"], c["status"]) for c in single["checks"]}
    assert {c["id"]: (c["score"], c["status"]) for c in dist["checks"]} == per_check
    assert dist["score"] == single["score"] and 0 < single["score"] < single["max_score"]
    assert dist["isolation"] == single["isolation"] == isolation

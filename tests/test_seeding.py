"""A seed gives the same inputs wherever the grader runs: another rootdir,
another invocation directory, or the every-seed harness the topic tests use."""

import os

from conftest import QUIET_PLUGINS, SEEDS, run_grader

# Each check writes its inputs where the test can read them.
CHECKS = r"""
import os
import pytest

pytestmark = pytest.mark.grade(concept="graph")

@pytest.mark.parametrize("n", [1, 2])
def test_inputs(grade_rng, grade_device, n):
    x = grade_rng.randn(3)
    with open(os.environ["INPUTS_LOG"], "a") as f:
        f.write(f"{n} {x.tolist()} {grade_rng.randint(0, 10**9)}\n")
"""


def _inputs(log) -> dict[str, str]:
    return {line.split()[0]: line for line in log.read_text().splitlines()}


def test_same_seed_same_inputs_from_another_directory(pytester, monkeypatch):
    log = pytester.path / "inputs.txt"
    monkeypatch.setenv("INPUTS_LOG", str(log))
    first = pytester.mkdir("course")
    (first / "test_checks.py").write_text(CHECKS)
    second = pytester.mkdir("elsewhere") / "deeper" / "checks"
    second.mkdir(parents=True)
    (second / "test_checks.py").write_text(CHECKS)

    # a student grading from inside the course directory...
    monkeypatch.chdir(first)
    result = pytester.runpytest("--grade", "--grade-seed", "4242", *QUIET_PLUGINS, "test_checks.py")
    assert result.ret == 0
    student = _inputs(log)
    log.unlink()
    # ...and an instructor replaying the seed with another rootdir, from another directory
    monkeypatch.chdir(pytester.path)
    result = pytester.runpytest(
        "--grade",
        "--grade-seed",
        "4242",
        *QUIET_PLUGINS,
        "--rootdir",
        str(pytester.path),
        os.path.relpath(second / "test_checks.py", pytester.path),
    )
    assert result.ret == 0
    assert _inputs(log) == student and len(student) == 2
    log.unlink()
    pytester.runpytest("--grade", "--grade-seed", "4243", *QUIET_PLUGINS, str(second / "test_checks.py"))
    assert _inputs(log) != student


def test_every_seed_harness_gives_the_inputs_of_grade_seed(pytester, monkeypatch):
    """tests/conftest.py's grade_seeds stands for 20 runs with --grade-seed:
    its inputs must be exactly theirs, or the every-seed tests prove nothing."""
    log = pytester.path / "inputs.txt"
    monkeypatch.setenv("INPUTS_LOG", str(log))
    checks = pytester.mkdir("checks")
    (checks / "test_checks.py").write_text(CHECKS)
    from conftest import _SEEDS_CONFTEST

    for seed in SEEDS[:2]:
        run_grader(pytester, "--grade-seed", str(seed), "checks")
    alone = sorted(log.read_text().splitlines())
    log.unlink()
    (checks / "conftest.py").write_text(_SEEDS_CONFTEST.format(seeds=SEEDS[:2]))
    graded = run_grader(pytester, "--grade-seed", "1", "checks")
    assert graded.report["percent"] == 100.0 and len(graded.report["checks"]) == 4
    assert sorted(log.read_text().splitlines()) == alone

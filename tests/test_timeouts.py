"""Time limits: a check's own ``timeout=`` in the marker, and a student
module whose import never ends, which costs one timeout, not one per check."""

from __future__ import annotations

import pytest
from conftest import grade_checks

HANGS_AT_IMPORT = """
import torch

while True:
    pass

def f(x):
    return x
"""

CHECKS = """
import pytest
import torch

pytestmark = pytest.mark.grade(concept="graph")

@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_hangs(submission, n):
    submission("hangs").f(torch.ones(n))

def test_other_module_still_graded(submission, autograd):
    autograd.assert_close(submission("good").f(torch.ones(2)), torch.ones(2), "f")

@pytest.mark.grade(timeout=0.5)
def test_own_short_limit(submission):
    submission("good").sleepy(2.0)

@pytest.mark.grade(timeout=5)
def test_own_long_limit(submission):
    submission("good").sleepy(1.5)
"""

# an import that ends, but after the limit: as hung as one that never ends
SLOW_AT_IMPORT = """
import time

time.sleep(1.5)

def f(x):
    return x
"""

GOOD = """
import time

def f(x):
    return x

def sleepy(seconds):
    time.sleep(seconds)
"""


@pytest.mark.parametrize("module", [HANGS_AT_IMPORT, SLOW_AT_IMPORT], ids=["never-ends", "ends-late"])
def test_a_hung_import_fails_every_check_of_its_module_for_one_timeout(pytester, module):
    graded = grade_checks(pytester, CHECKS, "--grade-timeout", "1", hangs=module, good=GOOD)
    hung = [graded.check(f"test_hangs[{n}]") for n in (1, 2, 3, 4)]
    assert [c["status"] for c in hung] == ["timeout"] * 4
    assert hung[0]["feedback"].startswith("[Computational graphs] importing hangs.py did not finish within 1 s:")
    for check in hung[1:]:
        assert (
            "importing hangs.py did not finish within 1 s in an earlier check, so this check did not run"
            in check["feedback"]
        )
        assert check["duration_s"] < 0.5, check  # no second wait: one timeout of 1 s, not four
    # the feedback blames the module, not the function the check called
    assert all("hangs.f did not finish" not in c["feedback"] for c in hung)
    assert {(c["file"], c["line"]) for c in hung} == {("hangs.py", None)}
    assert graded.check("test_other_module_still_graded")["status"] == "passed"


def test_the_marker_s_timeout_replaces_grade_timeout_for_its_check(pytester):
    graded = grade_checks(pytester, CHECKS, "-k", "own", "--grade-timeout", "1", hangs=HANGS_AT_IMPORT, good=GOOD)
    short = graded.check("test_own_short_limit")
    assert short["status"] == "timeout"
    assert "good.sleepy did not finish within 0.5 s" in short["feedback"]
    assert (short["file"], short["line"]) == ("good.py", 7)
    assert graded.check("test_own_long_limit")["status"] == "passed"  # 1.5 s > --grade-timeout 1


@pytest.mark.parametrize("timeout", ["0", "-1", "'soon'", "True"])
def test_a_bad_marker_timeout_is_an_error_naming_the_check(pytester, timeout):
    pytester.makepyfile(
        test_checks=f"""
        import pytest

        @pytest.mark.grade(concept="leaf", timeout={timeout})
        def test_bad():
            pass
    """
    )
    from conftest import run_grader

    graded = run_grader(pytester, "--grade-inline")
    check = graded.check("test_bad")
    assert check["status"] == "error"
    assert (
        f"test_checks.py::test_bad: timeout must be a positive number of seconds or None, got {timeout}"
        in check["feedback"]
    )

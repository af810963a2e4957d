"""Plain ``pytest`` (no ``--grade``), as every Python user types it out of
habit: graded checks still run student code in the sandbox with its
timeouts, a failure is the same short feedback a graded run gives (never a
traceback into the grader), and the run ends with one line that says how to
get the scores."""

from __future__ import annotations

import os

import pytest
from conftest import QUIET_PLUGINS

CHECKS = """
import os
import pytest

@pytest.mark.grade(concept="leaf")
def test_stub(submission):
    assert submission("m", numpy_only=True).stub() == 1

@pytest.mark.grade(concept="leaf")
def test_where(submission):
    assert submission("m", numpy_only=True).pid() != os.getpid()
"""
STUDENT = """
import os

def stub():
    raise NotImplementedError

def pid():
    return os.getpid()
"""


def _checks(pytester: pytest.Pytester, student: str = STUDENT, checks: str = CHECKS) -> None:
    pytester.makepyfile(test_checks=checks)
    (pytester.path / "m.py").write_text(student)


def test_a_failing_check_says_its_feedback_and_how_to_get_scores(pytester):
    _checks(pytester)
    result = pytester.runpytest("test_checks.py", *QUIET_PLUGINS)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*[[]Leaf tensors[]] not implemented yet: m.stub*"])
    # student code ran in a worker, not in pytest: test_where passed
    result.assert_outcomes(passed=1, failed=1)
    for grader_internal in ("Traceback", "StudentFailure", "submission.py", "raise "):
        assert grader_internal not in out, out
    result.stdout.fnmatch_lines(
        ["2 graded check(s) ran without scores; for your score per concept, run: pytest --grade test_checks.py *"]
    )
    assert not (pytester.path / "report.json").exists()
    # it counts what ran: -k leaves one, --collect-only none
    pytester.runpytest("test_checks.py", "-k", "stub", *QUIET_PLUGINS).stdout.fnmatch_lines(
        ["1 graded check(s) ran without scores*"]
    )
    assert "graded check" not in pytester.runpytest("test_checks.py", "--co", *QUIET_PLUGINS).stdout.str()


def test_a_module_that_never_finishes_importing_is_stopped(pytester):
    _checks(pytester, student="while True:\n    pass\n")
    pytester.makeini("[pytest]\ngrade_timeout = 1\n")
    result = pytester.runpytest("test_checks.py", *QUIET_PLUGINS)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*importing m.py did not finish within 1 s*"])


def test_a_run_without_graded_checks_starts_nothing_and_says_nothing(pytester):
    from pytest_autograd_grader.process_state import PROCESS

    before = dict(PROCESS.sandboxes)
    pytester.makepyfile(test_plain="def test_ok():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest(*QUIET_PLUGINS)
    result.assert_outcomes(passed=1)
    assert "graded check" not in result.stdout.str()
    assert PROCESS.sandboxes.keys() == before.keys()


def test_hidden_checks_say_nothing_of_themselves(pytester):
    _checks(
        pytester,
        checks=CHECKS.replace(
            '@pytest.mark.grade(concept="leaf")\ndef test_stub',
            '@pytest.mark.grade(concept="leaf", hidden=True)\ndef test_stub',
        ),
    )
    result = pytester.runpytest("test_checks.py", *QUIET_PLUGINS)
    result.stdout.fnmatch_lines(["*A hidden check on 'Leaf tensors' failed.*"])
    assert "not implemented" not in result.stdout.str()


def test_inline_needs_to_be_typed(pytester):
    # the sandbox off for a check author with pdb: only from the command line
    _checks(pytester)
    pytester.makeini("[pytest]\naddopts = --grade-inline\n")
    result = pytester.runpytest("test_checks.py", *QUIET_PLUGINS)
    result.assert_outcomes(passed=1, failed=1)  # test_where passed: not inline
    inline = pytester.runpytest("test_checks.py", "--grade-inline", "-c", os.devnull, *QUIET_PLUGINS)
    inline.assert_outcomes(failed=2)  # test_where: the student's pid is pytest's own


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_line_that_says_how_to_get_scores_is_the_last(pytester, lang):
    # after pytest's list of failed checks and its closing "=== 1 failed, 1 passed in ... ===",
    # where a graded run puts its table (before: 38 FAILED lines came after it)
    from pytest_autograd_grader import i18n
    from pytest_autograd_grader.i18n import msg

    _checks(pytester)
    result = pytester.runpytest("test_checks.py", "-rf", "--grade-lang", lang, *QUIET_PLUGINS)
    lines = [line for line in result.stdout.str().splitlines() if line.strip()]
    restore = i18n.saved_language()
    i18n.use_language(lang)
    try:
        hint = msg("summary.plain", count=2, command=f"pytest --grade test_checks.py -rf --grade-lang {lang}")
    finally:
        restore()
    assert lines[-1].startswith(hint + " "), lines[-4:]  # then pytester's own options
    assert lines[-2].startswith("=") and " failed, 1 passed in " in lines[-2], lines[-4:]
    assert any(line.startswith("FAILED test_checks.py::test_stub") for line in lines[:-2])

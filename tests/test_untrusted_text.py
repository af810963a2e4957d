"""Text the student's code chose (exception messages, reprs, printed output)
reaches the terminal and every report with its control characters escaped:
it cannot redraw the score table, erase lines of it, reverse what a reader
sees or make printing fail."""

from __future__ import annotations

import json

from conftest import grade_checks

from pytest_autograd_grader.boundary.untrusted import shown

FAKE_TABLE = "\r\x1b[2K\x1b[1A\x1b[1ATOTAL   113/113   100.0%"


def test_control_characters_are_shown_as_escapes():
    assert shown("ok\tline\nnext") == "ok\tline\nnext"
    assert shown("a\rb\x1b[2Kc\x07") == "a\\x0db\\x1b[2Kc\\x07"
    assert shown("price \u202e1$ \u200bx\ufeff") == "price \\u202e1$ \\u200bx\\ufeff"
    assert shown("bad \ud800 half") == "bad \\ud800 half"
    assert shown("学生的代码") == "学生的代码"


def test_long_text_is_cut_with_a_note():
    text = shown("x" * 25_000)
    assert text.startswith("x" * 20_000) and "5000 more characters not shown" in text
    assert len(text) < 20_100


CHECKS = """
import pytest

pytestmark = pytest.mark.grade(concept="leaf")


def test_raises(submission):
    submission("sly").raises()


def test_prints_and_fails(submission, autograd):
    autograd.assert_equal(submission("sly").prints(), 1, "the answer")


def test_repr(submission, autograd):
    autograd.assert_equal(submission("sly").odd(), 1, "the answer")
"""

SLY = f"""
FAKE = {FAKE_TABLE!r}


def raises():
    raise RuntimeError(FAKE)


def prints():
    print(FAKE + "\\x1b]0;owned\\x07")
    raise ValueError("after printing")


class Odd:
    def __repr__(self):
        return FAKE


def odd():
    return Odd()
"""


def test_student_text_cannot_draw_on_the_terminal_or_the_reports(pytester):
    graded = grade_checks(pytester, CHECKS, "--grade-gradescope", "results.json", sly=SLY)
    assert [c["status"] for c in graded.report["checks"]] == ["failed"] * 3, graded.report
    text = graded.text
    assert "\x1b" not in text and "\r" not in text, repr(text[-3000:])
    for check in graded.report["checks"]:
        assert "\x1b" not in check["feedback"] and "\r" not in check["feedback"], check
    raised = graded.check("test_raises")["feedback"]
    assert "\\x0d\\x1b[2K\\x1b[1A\\x1b[1ATOTAL   113/113   100.0%" in raised, raised
    printed = graded.check("test_prints_and_fails")["feedback"]
    assert "\\x1b[2K" in printed and "\\x1b]0;owned\\x07" in printed, printed
    results = json.loads((pytester.path / "results.json").read_text())
    assert not any("\x1b" in test.get("output", "") for test in results["tests"])

"""Text the student's code chose (exception messages, reprs, printed output)
reaches the terminal and every report with its control characters escaped:
it cannot redraw the score table, erase lines of it, reverse what a reader
sees or make printing fail."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import grade_checks
from test_isolation import require_isolation

from pytest_autograd_grader.boundary.untrusted import guarded, quoted, shown

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


# What a student's code can make look like the grader's own lines: a row of
# the grade table, its TOTAL and workflow commands GitHub's runner would obey,
# each at the start of a line of its own.
FORGED = "x\nTOTAL   10/10   100.0%\n::error::pwned\n::add-mask::secret\n##[set-output name=a;]b"

TABLE_CHECKS = """
import pytest

pytestmark = pytest.mark.grade(concept="leaf")


def test_right():
    pass


def test_raises(submission):
    submission("sly").raises()


def test_prints(submission):
    submission("sly").prints()


def test_writes_to_its_descriptors(submission):
    submission("sly").writes()


def test_after_the_call(submission):
    submission("sly").raises_plainly()


def test_notebook(submission):
    submission("book").raises()
"""

SLY_LINES = f"""
import os
import threading
import time

FORGED = {FORGED!r}


def raises():
    raise RuntimeError(FORGED)


def prints():
    print(FORGED)
    raise ValueError("after printing")


def _later(tag):
    time.sleep(0.3)
    os.write(1, ("\\n" + FORGED + tag + "\\n").encode())


def writes():
    os.write(1, ("\\n" + FORGED + " fd1\\n").encode())
    os.write(2, ("\\n" + FORGED + " fd2\\n").encode())
    try:
        with open("/dev/tty", "w") as tty:
            tty.write("\\n" + FORGED + " tty\\n")
    except OSError:
        pass
    threading.Thread(target=_later, args=(" thread",), daemon=True).start()
    if os.fork() == 0:
        _later(" grandchild")
        os._exit(0)
    raise ValueError("after writing")


def raises_plainly():
    time.sleep(0.6)  # the thread and the grandchild of the call before have written by now
    raise ValueError("plain")
"""


def _notebook(path: Path, sources: list[str]) -> None:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=[new_code_cell(source) for source in sources]), path)


def _forged_lines(text: str, github: bool = True) -> list[str]:
    """Lines that pass for the grader's own table or that GitHub's runner
    would take for a workflow command (``::`` after spaces, ``##[`` anywhere)."""
    own = re.compile(r"::error (file=\S+,)?title=Leaf tensors")  # the grader's annotations, one line each
    return [
        line
        for line in text.splitlines()
        if not own.match(line)
        and (line.startswith(("x", "TOTAL   10/10")) or line.lstrip().startswith("::") or (github and "##[" in line))
    ]


@pytest.mark.parametrize("mode", ["bwrap", "user", "process"])
def test_student_text_over_several_lines_cannot_pass_for_the_graders_own(pytester, monkeypatch, mode):
    require_isolation(mode)
    # as on GitHub's runner: the job's log and the step summary
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(pytester.path / "output"))
    student = pytester.path / "student"
    _notebook(
        student / "book.ipynb",
        [
            "%%time\nx = 1",
            "!echo ::error::from-a-magic [x](https://evil.example) **b**",
            f"def raises():\n    raise RuntimeError({FORGED!r})",
        ],
    )
    graded = grade_checks(pytester, TABLE_CHECKS, f"--grade-isolation={mode}", sly=SLY_LINES)
    statuses = {c["id"].split("::")[1]: c["status"] for c in graded.report["checks"]}
    assert statuses == {"test_right": "passed", **{name: "failed" for name in statuses if name != "test_right"}}, (
        statuses
    )
    text = graded.text
    # the one TOTAL at the start of a line is the grader's, with the real score
    totals = [line for line in text.splitlines() if line.startswith("TOTAL")]
    assert len(totals) == 1 and re.match(r"TOTAL\s+1/6\s", totals[0]), totals
    assert _forged_lines(text) == [], _forged_lines(text)
    # every forged line is there, quoted behind the gutter, in the terminal and the report
    assert "  | TOTAL   10/10   100.0%" in text and "  | ::error::pwned" in text
    for name in ("test_raises", "test_prints", "test_writes_to_its_descriptors", "test_notebook"):
        feedback = graded.check(name)["feedback"]
        assert "\n  | ::error::pwned" in feedback and not _forged_lines(feedback.replace("##[", "")), feedback
    written = graded.check("test_writes_to_its_descriptors")["feedback"]
    assert "fd1" in written and "fd2" in written, written
    # what the thread and the grandchild wrote after the call is quoted where it shows, if at all
    assert not _forged_lines(graded.check("test_after_the_call")["feedback"].replace("##[", ""))
    # the notebook's magic line: in the header, never at the start of a line; in the summary, code
    assert "grade: note: in book.ipynb, IPython-only lines" in text
    markdown = summary.read_text()
    note = next(line for line in markdown.splitlines() if "IPython-only" in line)
    assert note.startswith("> `in book.ipynb,") and note.endswith("**b**`"), note


def test_captured_output_of_an_inline_run_is_quoted(pytester):
    # --grade-inline: the student's prints land in pytest's own "Captured stdout" sections
    checks = TABLE_CHECKS.split("def test_writes")[0]
    graded = grade_checks(pytester, checks, "--grade-inline", sly=SLY_LINES)
    assert graded.check("test_prints")["status"] == "failed"
    assert "  | TOTAL   10/10   100.0%" in graded.text
    assert _forged_lines(graded.text, github=False) == [], _forged_lines(graded.text, github=False)


def test_quoted_sets_every_line_but_the_first_behind_the_gutter():
    assert quoted("one") == "one"
    assert quoted("one\nTOTAL 1/1\n") == "one\n  | TOTAL 1/1\n"
    assert quoted("TOTAL\n::x", block=True) == "  | TOTAL\n  | ::x"
    assert quoted(quoted("a\nb")) == quoted("a\nb")  # quoting twice changes nothing
    # the net under it: lines a message took in unquoted that could pass for the grader's
    assert guarded(
        "[Leaf] wrong\n  ::error::x\nTOTAL 1/1\nrow  1/1  1/1 passed ##### 100.0%\nexpected 2"
    ) == "[Leaf] wrong\n    ::error::x\n  | TOTAL 1/1\n  | row  1/1  1/1 passed ##### 100.0%\nexpected 2".replace(
        "\n    ::", "\n  |   ::"
    )

"""What a course author sees after ``autograd-grader audit``: the terminal
report and the HTML page, both drawn from the audit's JSON document. The
documents here are written by hand after the schema (GUIDE/verdicts.py),
so these tests hold the renderers to the schema, not to the audit's run."""

from __future__ import annotations

import copy
import io
import json

import pytest

from pytest_autograd_grader import i18n
from pytest_autograd_grader.audit.html_report import render, write_html
from pytest_autograd_grader.audit.text_report import print_report
from pytest_autograd_grader.reporters.terminal import width_of

SEEDS = [1, 2, 3, 4, 5, 6]
CHECK = "exercises/test_hooks.py::test_reversed_grad"
CHECK_LEAF = "exercises/test_leaf.py::test_init_parameter"

DIFF = """--- solutions/hooks.py
+++ mutant
@@ -9,4 +9,4 @@
 def reversed_grad(x, s):
-    x.register_hook(lambda g: -s * g)
+    x.register_hook(lambda g: -g)
     (x * torch.sin(x)).sum().backward()
"""


def passing() -> dict:
    """An audit in which everything holds: what the template course gets."""
    return {
        "schema": "pytest-autograd-grader/audit-1",
        "checks_dir": "course/exercises",
        "solutions_dir": "course/solutions",
        "mistakes_dir": "course/mistakes",
        "seeds": SEEDS,
        "passed": True,
        "problems": [],
        "baseline": {
            "solutions": {"ok": True, "percent": {str(s): 100.0 for s in SEEDS}, "failed_checks": []},
            "stubs": {"ok": True, "percent": {str(s): 0.0 for s in SEEDS}, "unexpected": []},
        },
        "mistakes": [
            {
                "topic": "hooks",
                "name": "unscaled",
                "path": "mistakes/hooks/unscaled.py",
                "what": "The hook negates the gradient but forgets the factor s.",
                "expected": ["diag.hooks.unscaled"],
                "status": "killed",
                "seeds_passed": [],
                "seeds_unnamed": [],
                "checks_failed": [CHECK],
                "error": "",
            }
        ],
        "mutants": [
            {
                "id": f"hooks.reversed_grad:negate:{i:08x}",
                "topic": "hooks",
                "function": "reversed_grad",
                "operator": "negate",
                "description": "a sign flipped",
                "line": 10,
                "diff": DIFF,
                "status": "killed",
                "reason": "",
                "seeds_passed": [],
                "checks_passed": [],
                "error": "",
            }
            for i in range(4)
        ],
        "checks": [
            {"check": CHECK, "topic": "hooks", "mistakes_killed": 1, "mutants_killed": 4, "survivors_passed": 0},
            {"check": CHECK_LEAF, "topic": "leaf", "mistakes_killed": 0, "mutants_killed": 12, "survivors_passed": 0},
        ],
        "topics": [{"topic": "hooks", "mutants": 4, "killed": 4, "survived": 0, "accepted": 0, "score": 100.0}],
        "score": {"killed": 4, "survived": 0, "accepted": 0, "errors": 0, "percent": 100.0},
        "fail_under": 90.0,
        "seconds": 12.34,
        "mutants_per_second": 2.5,
    }


def with_surviving_mistake() -> dict:
    """The trial's hole: the unscaled hook passes where s is exactly 1."""
    doc = passing()
    doc["passed"] = False
    doc["problems"] = ["the planted mistake mistakes/hooks/unscaled.py got full marks on seeds 2, 5"]
    doc["mistakes"][0].update(status="survived", seeds_passed=[2, 5], seeds_unnamed=[2, 5])
    doc["checks"][0]["survivors_passed"] = 1
    return doc


def with_survivor() -> dict:
    """A surviving mutant whose diff and names are hostile or Chinese, an
    accepted one and one that crashed the grader."""
    doc = passing()
    doc["passed"] = False
    doc["problems"] = ["mutation score 60 % is under --fail-under 90 %"]
    survivor = doc["mutants"][0]
    survivor.update(
        id="梯度.反转:drop_factor:1a2b3c4d",
        topic="梯度",
        function="反转",
        description="the factor s dropped: <script>alert(1)</script>",
        diff=DIFF + "+    '<script>alert(\"x\")</script>'\n",
        status="survived",
        seeds_passed=[1, 3, 4],
        checks_passed=["exercises/test_梯度.py::test_反转"],
    )
    doc["mutants"][1].update(
        status="accepted",
        reason="w * x and x * w are the same product",
        id="hooks.reversed_grad:swap_operands:deadbeef",
    )
    doc["mutants"][2].update(
        status="error",
        error="Traceback (most recent call last):\nRecursionError: too deep",
        id="hooks.reversed_grad:off_by_one:cafebabe",
    )
    doc["checks"].append(
        {
            "check": "exercises/test_梯度.py::test_反转",
            "topic": "梯度",
            "mistakes_killed": 0,
            "mutants_killed": 0,
            "survivors_passed": 1,
        }
    )
    doc["topics"] = [
        {"topic": "hooks", "mutants": 3, "killed": 1, "survived": 0, "accepted": 1, "score": 100.0},
        {"topic": "梯度", "mutants": 1, "killed": 0, "survived": 1, "accepted": 0, "score": 0.0},
    ]
    doc["score"] = {"killed": 1, "survived": 1, "accepted": 1, "errors": 1, "percent": 50.0}
    return doc


def with_baseline_failure() -> dict:
    doc = passing()
    doc["passed"] = False
    doc["problems"] = ["the solutions do not score 100 % on every seed"]
    doc["baseline"]["solutions"].update(ok=False, percent={"1": 100.0, "2": 87.5, "10": 90.0}, failed_checks=[CHECK])
    doc["baseline"]["stubs"].update(
        ok=False, unexpected=[{"check": CHECK_LEAF, "feedback": "NameError: name 'torhc' is not defined\n  more"}]
    )
    return doc


def report(document: dict, verbose: bool = False) -> str:
    # through JSON, as the audit writes it and the renderers read it: seeds become strings
    stream = io.StringIO()
    print_report(json.loads(json.dumps(document)), stream, verbose=verbose)
    return stream.getvalue()


@pytest.fixture
def zh():
    restore = i18n.saved_language()
    i18n.use_language("zh")
    yield
    restore()


# -- the terminal ------------------------------------------------------------------------


def test_a_passing_audit_shows_the_baseline_table_scores_and_a_passed_verdict():
    text = report(passing())
    lines = text.splitlines()
    assert "solutions: 100 % on each of the 6 seeds" in lines
    assert 'stubs: 0 on each of the 6 seeds, every check failing only with "not implemented"' in lines
    assert "check" in lines[lines.index("solutions: 100 % on each of the 6 seeds") + 3]
    header = next(line for line in lines if line.startswith("check"))
    assert header.split() == ["check", "topic", "mistakes", "killed", "mutants", "killed", "survivors", "passed"]
    assert any(line.split() == [CHECK, "hooks", "1", "4", "0"] for line in lines)
    assert any(line.split() == [CHECK_LEAF, "leaf", "0", "12", "0"] for line in lines)
    assert "mutation score per topic: hooks 100 % (4/4)" in lines
    assert "planted mistakes: all 1 lose points and are named on every seed" in lines
    assert "surviving mutants: none" in lines
    assert "graded in 12.3 s (2.50 mutants per second)" in text
    assert lines[0].endswith("planted mistakes: course/mistakes; seeds: 1-6")
    assert lines[-1] == "audit passed: mutation score 100 %, --fail-under 90 % (4 killed, 0 survived, 0 accepted)"


def _columns(lines: list[str], first: str) -> list[tuple[int, int]]:
    """Where each cell of the table's row starts and ends, in display columns."""
    line = next(line for line in lines if line.startswith(first))
    spans, at = [], 0
    for cell in line.split():
        at = line.index(cell, at)
        spans.append((width_of(line[:at]), width_of(line[:at]) + width_of(cell)))
        at += len(cell)
    return spans


def test_the_columns_line_up_whatever_the_length_or_script_of_the_ids():
    lines = report(with_survivor()).splitlines()
    rows = [_columns(lines, first) for first in (CHECK, CHECK_LEAF, "exercises/test_梯度.py")]
    ends = [[end for _, end in row[-3:]] for row in rows]  # numbers are right-aligned
    assert ends[0] == ends[1] == ends[2], lines
    # the topics start in one column too, the Chinese id counted two columns a character
    assert len({row[1][0] for row in rows}) == 1


def test_a_surviving_planted_mistake_is_listed_with_its_seeds_and_fails_the_audit():
    lines = report(with_surviving_mistake()).splitlines()
    at = lines.index("planted mistakes that got through (1 of 1):")
    assert lines[at + 1] == (
        "  hooks/unscaled (mistakes/hooks/unscaled.py): The hook negates the gradient but forgets the factor s."
    )
    assert lines[at + 2] == "    full marks on seeds 2, 5"
    assert lines[at + 3] == "    not named on seeds 2, 5; expected diag.hooks.unscaled"
    assert lines[-1].startswith(
        "audit failed: the planted mistake mistakes/hooks/unscaled.py got full marks on seeds 2, 5; mutation score"
    )


def test_a_survivor_is_shown_as_its_diff_with_its_seeds_and_checks():
    lines = report(with_survivor()).splitlines()
    assert "surviving mutants (1), each with the change that no check noticed:" in lines
    at = lines.index("  梯度.反转:drop_factor:1a2b3c4d (line 10): the factor s dropped: <script>alert(1)</script>")
    assert lines[at + 1] == "    full marks on seeds 1, 3, 4; passed exercises/test_梯度.py::test_反转"
    assert lines[at + 2 : at + 5] == ["    --- solutions/hooks.py", "    +++ mutant", "    @@ -9,4 +9,4 @@"]
    assert "    -    x.register_hook(lambda g: -s * g)" in lines
    assert "    +    x.register_hook(lambda g: -g)" in lines
    assert "mutation score per topic: hooks 100 % (1/1), 梯度 0 % (0/1)" in lines
    assert lines[-1] == (
        "audit failed: mutation score 60 % is under --fail-under 90 %; "
        "mutation score 50 %, --fail-under 90 % (1 killed, 1 survived, 1 accepted)"
    )


def test_accepted_survivors_are_counted_and_their_reasons_shown_only_when_verbose():
    short, verbose = report(with_survivor()), report(with_survivor(), verbose=True)
    line = "accepted survivors: 1 (equivalent, with a reason in the accepted file)"
    assert line in short.splitlines() and line in verbose.splitlines()
    assert "w * x and x * w" not in short
    assert "  hooks.reversed_grad:swap_operands:deadbeef: w * x and x * w are the same product" in verbose.splitlines()


def test_what_could_not_be_graded_is_listed_with_its_error():
    lines = report(with_survivor()).splitlines()
    at = lines.index("could not be graded (1):")
    assert lines[at + 1] == "  hooks.reversed_grad:off_by_one:cafebabe: Traceback (most recent call last):"
    assert lines[at + 2] == "    RecursionError: too deep"


def test_a_baseline_failure_says_which_seeds_and_checks():
    lines = report(with_baseline_failure()).splitlines()
    assert "solutions: not 100 % on every seed (seed 2: 87.5 %, seed 10: 90 %)" in lines
    assert f"  failed: {CHECK}" in lines
    assert 'stubs: these checks fail with something other than "not implemented":' in lines
    assert f"  {CHECK_LEAF}: NameError: name 'torhc' is not defined" in lines
    assert lines[-1].startswith("audit failed: the solutions do not score 100 % on every seed;")


def test_control_characters_from_the_files_cannot_drive_the_terminal():
    doc = with_survivor()
    doc["mutants"][0]["diff"] += "+    x = 1  # \x1b[2J\rTOTAL 100%\u202e\n"
    text = report(doc)
    assert "\x1b" not in text and "\r" not in text and "\u202e" not in text
    assert "\\x1b[2J\\x0dTOTAL 100%\\u202e" in text


def test_no_mutants_and_no_mistakes_folder_still_give_a_verdict():
    doc = passing()
    doc.update(
        mistakes_dir=None,
        mistakes=[],
        mutants=[],
        topics=[],
        fail_under=None,
        mutants_per_second=None,
        score={"killed": 0, "survived": 0, "accepted": 0, "errors": 0, "percent": None},
    )
    lines = report(doc).splitlines()
    assert "planted mistakes: none (no mistakes folder)" in lines
    assert lines[-1] == "audit passed: no mutants graded"


def test_the_report_speaks_chinese(zh):
    lines = report(with_surviving_mistake()).splitlines()
    assert "参考答案：6 个种子上均为 100 %" in lines
    assert (
        "  hooks/unscaled（mistakes/hooks/unscaled.py）：The hook negates the gradient but forgets the factor s."
    ) in lines
    assert "    在这些种子上得满分：2, 5" in lines
    header = next(line for line in lines if line.startswith("检查"))
    assert header.split() == ["检查", "主题", "捕获的预置错误", "捕获的变异体", "漏过的幸存者"]
    # the header's Chinese cells are two columns a character: the numbers still end under them
    row = next(line for line in lines if line.startswith(CHECK))
    assert width_of(header) == width_of(row)
    assert lines[-1].startswith("审核未通过：")


# -- the page -------------------------------------------------------------------------------


def test_the_page_escapes_everything_from_the_files_and_colours_the_diff(tmp_path):
    page = render(json.loads(json.dumps(with_survivor())))
    assert "<script" not in page.lower()  # neither the diff's nor the description's, nor one of its own
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "script-src 'none'" in page  # the page runs no script of its own either
    assert '<span class="hunk">--- solutions/hooks.py</span>' in page  # the header is no removed line
    assert '<span class="del">-    x.register_hook(lambda g: -s * g)</span>' in page
    assert '<span class="add">+    x.register_hook(lambda g: -g)</span>' in page
    assert '<span class="add">+    &#x27;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#x27;</span>' in page
    assert "梯度.反转:drop_factor:1a2b3c4d" in page
    for section in ("run", "baseline", "checks", "topics", "mistakes", "survivors", "accepted", "errors", "verdict"):
        assert f'<h2 id="{section}">' in page, section
    assert "w * x and x * w are the same product" in page  # the accepted survivors' reasons
    assert "RecursionError: too deep" in page
    assert 'class="verdict failed"' in page


def test_the_page_shows_a_surviving_mistake_and_is_written_to_the_file(tmp_path):
    path = tmp_path / "audit.html"
    path.symlink_to(tmp_path / "elsewhere.html")  # replaced, never followed
    write_html(with_surviving_mistake(), path)
    page = path.read_text(encoding="utf-8")
    assert not path.is_symlink() and not (tmp_path / "elsewhere.html").exists()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    row = page[page.index('<tr class="survived">') :]
    row = row[: row.index("</tr>")]
    assert "hooks/unscaled" in row and "mistakes/hooks/unscaled.py" in row and "2, 5" in row
    assert "diag.hooks.unscaled" in row
    assert "audit failed: the planted mistake mistakes/hooks/unscaled.py got full marks on seeds 2, 5" in page
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_the_page_of_a_passing_audit_and_in_chinese(zh):
    page = render(copy.deepcopy(passing()))
    assert '<html lang="zh">' in page
    assert "course/exercises 中检查的审核" in page
    assert "审核通过：变异得分 100 %" in page
    assert 'class="verdict passed"' in page
    assert "幸存的变异体：无" in page


def test_every_report_text_has_its_chinese_twin_with_the_same_fields():
    from pytest_autograd_grader.i18n.en import EN
    from pytest_autograd_grader.i18n.zh import ZH

    ours = [k for k in EN if k.startswith(("audit.report.", "audit.html."))]
    assert ours and [k for k in ours if k not in ZH] == []
    assert [k for k in ours if i18n._fields(EN[k]) != i18n._fields(ZH[k])] == []  # noqa: SLF001


def test_a_page_that_cannot_be_written_says_why_in_words(tmp_path):
    from pytest_autograd_grader.reporters.files import ReportWriteError

    with pytest.raises(ReportWriteError, match="does not exist"):
        write_html(passing(), tmp_path / "missing" / "audit.html")

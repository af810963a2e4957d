"""GitHub Actions and GitHub Classroom: the files GitHub reads
($GITHUB_STEP_SUMMARY, $GITHUB_OUTPUT decoded) and the annotation lines in
the job's log, plus the workflow template for student repositories."""

from __future__ import annotations

import base64
import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import REPO, grade_checks, run_grader

from pytest_autograd_grader.concepts import Concept
from pytest_autograd_grader.i18n import msg
from pytest_autograd_grader.reporters.github import (
    annotation_lines,
    classroom_output,
    step_summary,
    write_github_outputs,
)
from pytest_autograd_grader.reporters.github_escaping import defuse_commands, escape_data, escape_property
from pytest_autograd_grader.scoring import CheckResult, Gradebook

# the one source of the workflow `autograd-grader github-classroom` writes
WORKFLOW = REPO / "pytest_autograd_grader" / "platforms" / "github_files" / "classroom.yml"

# DESIGN.md section 1, the instructor's safe invocation, without its
# platform's report option (--grade-gradescope results.json).
SAFE_INVOCATION = (
    "pytest -c checks/pytest.ini --rootdir checks -p no:cacheprovider "
    "--grade checks/ --grade-submission=student/exercises"
)

# What a student's code can make the feedback say: Markdown and HTML that
# would close the fold or the table, a workflow command on a line of its
# own, an escape that GitHub would decode, a carriage return, the old
# command syntax.
HOSTILE = "a | b </details> ``` <b>bold</b>\n::set-output name=result::Zm9yZ2Vk\n100%0A done\r\n##[error]fake"

CHECKS = '''
import pytest

@pytest.mark.grade(concept="leaf", points=2)
def test_right():
    """Leaves keep their gradient"""

@pytest.mark.grade(concept="graph", points=10)
def test_credit(autograd):
    autograd.credit(0.3, "3 of 10 cases right")

@pytest.mark.grade(concept="graph", points=2)
def test_hostile(submission):
    submission("leaf").explode()

@pytest.mark.grade(concept="graph", points=3, hidden=True)
def test_secret():
    assert 2 == 3, "expected 3 for the secret input 0.123"
'''
STUDENT = f"def explode():\n    raise ValueError({HOSTILE!r})\n"


def _github_env(monkeypatch, tmp_path: Path, workspace: Path) -> tuple[Path, Path]:
    summary, output = tmp_path / "step_summary.md", tmp_path / "github_output"
    # another step wrote before us, without a final newline: kept, not truncated
    output.write_text("earlier=1")
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    return summary, output


def _classroom(output: Path) -> dict:
    lines = output.read_text().splitlines()
    assert lines[0] == "earlier=1"
    results = [line for line in lines if line.startswith("result=")]
    assert len(results) == 1 and "\n" not in results[0]
    return json.loads(base64.b64decode(results[0].removeprefix("result="), validate=True).decode("utf-8"))


def _annotations(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("::")]


def test_graded_session_writes_summary_classroom_result_and_annotations(pytester, monkeypatch, tmp_path):
    summary, output = _github_env(monkeypatch, tmp_path, pytester.path)
    graded = grade_checks(pytester, CHECKS, "--grade-github", leaf=STUDENT)
    assert graded.report["score"] == 5.0, graded.text

    result = _classroom(output)
    assert (result["version"], result["status"], result["max_score"]) == (1, "fail", 17.0)
    tests = {test["name"]: test for test in result["tests"]}
    assert set(tests) == {
        "Leaf tensors \u203a Leaves keep their gradient",
        "Computational graphs \u203a credit",
        "Computational graphs \u203a hostile",
        "hidden check 1 of Computational graphs",
    }
    right = tests["Leaf tensors \u203a Leaves keep their gradient"]
    assert (right["status"], right["score"], right["message"]) == ("pass", 2.0, "")
    assert right["test_code"] == "test_checks.py::test_right"
    credit = tests["Computational graphs \u203a credit"]
    assert (credit["status"], credit["score"]) == ("fail", 3.0)  # partial credit: 3 of 10 points
    assert "3 of 10 cases right" in credit["message"]
    assert sum(test["score"] for test in result["tests"]) == graded.report["score"]
    # no line of the message the Classroom reporter prints is a workflow command
    hostile = tests["Computational graphs \u203a hostile"]
    assert hostile["status"] == "fail" and "set-output" in hostile["message"]
    for line in hostile["message"].splitlines():
        assert not line.lstrip().startswith("::") and "##[" not in line, line
    secret = tests["hidden check 1 of Computational graphs"]
    assert (secret["status"], secret["score"], secret["message"]) == (
        "fail",
        0.0,
        "A hidden check on 'Computational graphs' failed.",
    )
    assert (secret["filename"], secret["line_no"], secret["test_code"]) == ("", 0, "")

    markdown = summary.read_text()
    assert markdown.startswith("# earlier step\n\n## ")
    assert "| Leaf tensors | 2/2 | 1/1 passed | 100.0% |" in markdown
    assert "| Computational graphs | 3/15 | 0/3 passed | 20.0% |" in markdown
    assert "| **TOTAL** | **5/17** | | **29.4%** |" in markdown
    # one fold per check that did not pass, each closed on a line of its own
    assert markdown.count("<details><summary>") == markdown.splitlines().count("</details>") == 3
    # the student's text sits in a fence longer than any backtick run in it
    fence = re.search(r"^(`{4,})text$", markdown, re.M).group(1)
    block = markdown.split(fence + "text\n")[1].split("\n" + fence + "\n")[0]
    assert "a | b </details> ``` <b>bold</b>" in block and "::set-output" in block
    # the student's file relative to the repository root ($GITHUB_WORKSPACE)
    assert "<summary>Computational graphs \u203a hostile: 0/2 (failed) (student/leaf.py:2)</summary>" in markdown

    # one annotation per failed visible check, one line each, escaped
    annotations = _annotations(graded.text)
    assert len(annotations) == 2, annotations
    # and the feedback pytest prints (failures section, short summary) holds
    # no line GitHub's runner would take for a command
    commands = [line for line in graded.text.splitlines() if line.lstrip().startswith("::") or "##[" in line]
    assert commands == annotations, commands
    assert "set-output name=result" in graded.result.stdout.str()  # it was printed, defused
    hostile_line = next(line for line in annotations if "hostile" in line)
    assert hostile_line.startswith(
        "::error file=student/leaf.py,line=2,title=Computational graphs \u203a hostile%3A 0/2 (failed)::"
    )
    # the carriage return is shown as its escape (boundary/untrusted.py), the line feed encoded, each
    # line of the student's message after the first behind the gutter
    assert "</b>%0A  | ::set-output name=result::Zm9yZ2Vk%0A  | 100%250A done\\x0d%0A  | ##[error]fake" in hostile_line

    # a hidden check's reason is nowhere a student looks
    everywhere = markdown + graded.text + json.dumps(result)
    assert "0.123" not in everywhere and "assert 2 == 3" not in everywhere
    assert "hidden check 1 of Computational graphs" in markdown


def test_github_actions_alone_turns_it_on(pytester, monkeypatch, tmp_path):
    summary, output = _github_env(monkeypatch, tmp_path, pytester.path)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_right():
            pass
    """
    )
    graded = run_grader(pytester, "test_checks.py")
    assert _classroom(output)["status"] == "pass"
    assert "| **TOTAL** | **1/1** | | **100.0%** |" in summary.read_text()
    assert _annotations(graded.text) == []


def test_grade_github_outside_github_actions_grades_and_says_why(pytester):
    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_wrong():
            assert False, "expected True"
    """
    )
    graded = run_grader(pytester, "test_checks.py", "--grade-github")
    assert graded.report["complete"] and graded.report["score"] == 0.0
    assert graded.text.count(msg("github.no_environment")) == 1
    assert "Traceback" not in graded.text
    # annotations need no file: they go to the log
    assert len(_annotations(graded.text)) == 1


# -- unit tests on hand-made gradebooks ---------------------------------


def _gradebook(*checks: CheckResult, complete: bool = True) -> Gradebook:
    book = Gradebook(
        seed=1,
        devices=["cpu"],
        torch="2",
        concepts={"leaf": Concept("leaf", "Leaf tensors"), "graph": Concept("graph", "Graph")},
    )
    for check in checks:
        book.checks[check.id] = check
    book.complete = complete
    return book


def _check(name: str, status: str, score: float = 0.0, **fields) -> CheckResult:
    return CheckResult(
        id=f"checks/test_leaf.py::{name}",
        concept=fields.pop("concept", "leaf"),
        score=score,
        max_score=fields.pop("max_score", 2.0),
        status=status,
        title=name,
        **fields,
    )


def test_annotation_escaping_and_file_paths(monkeypatch, tmp_path):
    workspace = tmp_path / "repo"
    submission = workspace / "student" / "exercises"
    submission.mkdir(parents=True)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    book = _gradebook(
        _check("a,b:c", "failed", feedback="50% off\r\nline two\n::set-output name=x::y\n%0A", file="leaf.py", line=12),
        _check("timeout", "timeout", feedback="too slow", file="leaf.py"),
        _check("crashed", "crashed", feedback="died"),
        _check("broken", "error", feedback="check bug"),
        _check("passed", "passed", score=2.0, file="leaf.py", line=3),
        _check("skipped", "skipped", max_score=0.0),
        _check(
            "secret",
            "failed",
            hidden=True,
            feedback="A hidden check on 'Leaf tensors' failed.",
            private_feedback="secret 0.123",
            file="leaf.py",
            line=9,
        ),
    )
    lines = annotation_lines(book, submission)
    assert len(lines) == 4 and all("\n" not in line and "\r" not in line for line in lines)
    assert len("\n".join(lines).splitlines()) == 4
    first = lines[0]
    assert first == (
        "::error file=student/exercises/leaf.py,line=12,title=Leaf tensors \u203a a%2Cb%3Ac%3A 0/2 "
        "(failed)::50%25 off%0Aline two%0A::set-output name=x::y%0A%250A"
    )
    assert lines[1].startswith("::error file=student/exercises/leaf.py,title=")  # no line when unknown
    assert lines[2].startswith("::error title=Leaf tensors \u203a crashed%3A 0/2 (crashed)::died")
    assert "broken check" in lines[3]
    assert not any("secret" in line or "0.123" in line for line in lines)

    # the student's repository checked out into student/: paths from its root
    (workspace / "student" / ".git").mkdir()
    assert annotation_lines(book, submission)[0].startswith("::error file=exercises/leaf.py,line=12,")
    (workspace / "student" / ".git").rmdir()
    # a submission outside the workspace: the file as it is
    assert annotation_lines(book, tmp_path / "elsewhere")[0].startswith("::error file=leaf.py,line=12,")
    # no submission: the checks' directory, from the check's id, under the current directory
    monkeypatch.chdir(workspace)
    assert annotation_lines(book)[0].startswith("::error file=checks/leaf.py,line=12,")

    # long feedback: bounded, still one line
    long = _gradebook(_check("long", "failed", feedback="\n".join(f"row {i}" for i in range(500))))
    (line,) = annotation_lines(long)
    assert "row 19" in line and "row 20" not in line and len(line) < 4500

    assert escape_data("a%b\r\nc") == "a%25b%0Ac" and escape_property("x:y,z%") == "x%3Ay%2Cz%25"
    defused = defuse_commands("ok\n  ::set-output name=x::y\r::error::z\nsee ##[error]w a::b")
    assert [line.lstrip()[:2] for line in defused.splitlines()] == ["ok", ":\u200b", ":\u200b", "se"]
    assert "##[" not in defused and "a::b" in defused


def test_summary_and_result_for_hand_made_gradebook(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    book = _gradebook(
        _check("pipe|<b>", "failed", score=0.5, feedback="x", file="leaf.py", line=4, concept="graph"),
        _check("broken", "error", feedback="", concept="graph"),
        _check("secret", "passed", score=2.0, hidden=True),
        complete=False,
    )
    markdown = step_summary(book, tmp_path)
    assert "<summary>Graph \u203a pipe|&lt;b&gt;: 0.5/2 (failed) (leaf.py:4)</summary>" in markdown
    assert msg("github.no_feedback") in markdown and msg("github.incomplete") in markdown
    assert msg("github.hidden_note") in markdown
    concept_rows = [line for line in markdown.splitlines() if line.startswith("| Graph")]
    assert concept_rows == ["| Graph | 0.5/4 | 0/2 passed | 12.5% |"]
    encoded = classroom_output(book, tmp_path)
    result = json.loads(base64.b64decode(encoded.removeprefix("result=")))
    assert result["status"] == "error"  # incomplete, and a broken check
    first = result["tests"][0]
    assert (first["filename"], first["line_no"], first["score"]) == ("leaf.py", 4, 0.5)
    assert result["tests"][2]["name"] == "hidden check 1 of Leaf tensors"
    assert result["tests"][2]["score"] == 2.0  # hidden points count

    # a title with a table's pipe: escaped in a cell
    piped = _gradebook(_check("ok", "passed", score=2.0))
    piped.concepts["leaf"] = Concept("leaf", "Leaf | tensors")
    assert "| Leaf &#124; tensors | 2/2 |" in step_summary(piped)

    # problems in words, never an exception
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "missing" / "out"))
    problems = write_github_outputs(book, tmp_path)
    assert problems == [
        msg("github.no_summary"),
        msg(
            "github.output_failed",
            variable="GITHUB_OUTPUT",
            path=str(tmp_path / "missing" / "out"),
            reason=problems[1].split(": ", 2)[-1].split("; ")[0],
        ),
    ]


def test_huge_feedback_keeps_within_githubs_limits(monkeypatch, tmp_path):
    feedback = "x" * 10_000 + "\n" + "\n".join("y" * 100 for _ in range(1000))
    book = _gradebook(*[_check(f"c{i}", "failed", feedback=feedback) for i in range(200)])
    assert len(step_summary(book).encode()) < 1024 * 1024
    assert len(classroom_output(book)) < 128 * 1024


def test_workflow_template_runs_the_safe_invocation_and_feeds_the_reporter():
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load(WORKFLOW.read_text())
    (job,) = workflow["jobs"].values()
    assert job["name"] == "Autograding Tests"
    assert {"push", "workflow_dispatch"} <= set(workflow["on"])
    assert workflow["permissions"] == {"checks": "write", "actions": "read", "contents": "read"}
    steps = {step.get("id"): step for step in job["steps"]}
    grader = steps["grader"]
    command = " ".join(grader["run"].split())
    assert command == SAFE_INVOCATION + (
        " --grade-github --grade-json grade.json --grade-manifest checks/grade-manifest.json"
    )
    # the instructors' pages give the same safe invocation
    pages = "\n".join(page.read_text(encoding="utf-8") for page in sorted((REPO / "docs" / "instructors").glob("*.md")))
    blocks = re.findall(r"^```bash\n(.*?)^```", pages, re.M | re.S)
    lines = [line for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    commands = [" ".join(shlex.split(line)) for line in lines if "-c checks/pytest.ini" in line]
    assert any(c.startswith(SAFE_INVOCATION) for c in commands), commands
    reporter = next(
        step
        for step in job["steps"]
        if str(step.get("uses", "")).startswith("classroom-resources/autograding-grading-reporter@")
    )
    assert reporter["with"]["runners"] == "checks,earned,missed"  # test_github_points.py says why
    assert reporter["env"] == {
        f"{name.upper()}_RESULTS": f"${{{{ steps.grader.outputs.{name} }}}}" for name in ("checks", "earned", "missed")
    }
    assert reporter["if"] == "always()" and grader.get("continue-on-error") is True
    checkouts = [step["with"] for step in job["steps"] if str(step.get("uses", "")).startswith("actions/checkout@")]
    assert [c["path"] for c in checkouts] == ["student", "checks"] and "repository" in checkouts[1]

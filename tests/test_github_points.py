"""What a student and an instructor see on GitHub Classroom: the points
Classroom's own reporter shows in its table and in its notice, the order
of the error annotations (GitHub shows only 10 of a step), and the
template repository's .gitignore."""

from __future__ import annotations

import base64
import json
import subprocess
import textwrap

import pytest
from conftest import REPO, grade_checks

from pytest_autograd_grader import cli
from pytest_autograd_grader.concepts import Concept
from pytest_autograd_grader.i18n import msg
from pytest_autograd_grader.reporters.github import annotation_lines, classroom_output
from pytest_autograd_grader.scoring import CheckResult, Gradebook

WORKFLOW = REPO / "pytest_autograd_grader" / "platforms" / "github_files" / "classroom.yml"


# -- Classroom's reporter, as its source computes it -----------------------
#
# classroom-resources/autograding-grading-reporter, tag v1 (commit
# d13b5912daf5042ac1b71bc38bdb4a6bcd61d8ca, dist/main.js; the same code as
# src/ at 43c2d9f): src/main.js reads each runner's result from the
# environment variable <RUNNER>_RESULTS (upper-cased) and decodes base64 JSON;
# src/helpers/test-helpers.js getTestScore gives a runner
#     (tests with status "pass" / tests.length) * (max_score || 0)
# which src/aggregate-results.js puts in the table, one row per runner, and
# sums into its "Total:" row; src/notify-classroom.js sends Classroom
# "Points {totalPoints}/{maxPoints}", summing tests[].score and max_score
# over the runners whose max_score is not 0.


def _js(number: float) -> str:
    """A number as JavaScript's template string writes it (20, not 20.0)."""
    return str(int(number)) if float(number).is_integer() else repr(float(number))


def reporter(runners: str, env: dict[str, str]) -> tuple[list[tuple[str, str, str]], str]:
    """The table's rows (runner, score, max score; "Total: " last) and the
    notice, as autograding-grading-reporter v1 prints them."""
    results = [
        (name, json.loads(base64.b64decode(env[f"{name.strip().upper()}_RESULTS"]).decode("utf-8")))
        for name in runners.split(",")
    ]
    rows, scores, maxima = [], 0, 0
    for name, result in results:
        max_score = result["max_score"] or 0
        score = sum(1 for test in result["tests"] if test["status"] == "pass") / len(result["tests"]) * max_score
        rows.append((name.strip(), _js(score), _js(max_score)))
        scores, maxima = scores + score, maxima + max_score
    rows.append(("Total: ", _js(scores), _js(maxima)))
    total, most = 0, 0
    for _, result in results:
        if not result["max_score"]:
            continue
        most += result["max_score"]
        for test in result["tests"]:
            total += test["score"]
    return rows, f"Points {_js(total)}/{_js(most)}"


def _reporter_step() -> tuple[str, dict[str, str]]:
    """The runners and environment of the workflow's reporter step, the
    Grade step's outputs named as the workflow names them."""
    yaml = pytest.importorskip("yaml")
    (job,) = yaml.safe_load(WORKFLOW.read_text())["jobs"].values()
    step = next(
        step
        for step in job["steps"]
        if str(step.get("uses", "")).startswith("classroom-resources/autograding-grading-reporter@v1")
    )
    return step["with"]["runners"], step["env"]


def _outputs(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _as_the_workflow_passes_them(outputs: dict[str, str]) -> tuple[str, dict[str, str]]:
    runners, env = _reporter_step()
    passed = {}
    for variable, expression in env.items():
        name = expression.removeprefix("${{ steps.grader.outputs.").removesuffix(" }}")
        passed[variable] = outputs.get(name, "")
    return runners, passed


CHECKS = """
import pytest

@pytest.mark.grade(concept="leaf", points=2)
def test_right():
    pass

@pytest.mark.grade(concept="graph", points=10)
def test_most(autograd):
    autograd.credit(0.7, "7 of 10 cases right")

@pytest.mark.grade(concept="graph", points=3)
def test_a_third(autograd):
    autograd.credit(1 / 3, "1 of 3 cases right")

@pytest.mark.grade(concept="graph", points=4, hidden=True)
def test_secret():
    assert False
"""


def test_classroom_reporter_table_and_notice_show_the_partial_score(pytester, monkeypatch, tmp_path):
    output = tmp_path / "github_output"
    output.write_text("")
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(pytester.path))
    graded = grade_checks(pytester, CHECKS, "--grade-github")
    score, max_score = graded.report["score"], graded.report["max_score"]
    assert (score, max_score) == (10.0, 19.0), graded.text  # 2 + 7 + 1 of 19: partial credit

    outputs = _outputs(output.read_text())
    rows, notice = reporter(*_as_the_workflow_passes_them(outputs))
    assert notice == "Points 10/19"
    assert rows[-1] == ("Total: ", "10", "19")  # the table agrees with the notice and with our total
    assert rows == [("checks", "0", "0"), ("earned", "10", "10"), ("missed", "0", "9"), ("Total: ", "10", "19")]
    # the checks runner still lists every check, passed or not, for the reporter's log
    checks = json.loads(base64.b64decode(outputs["checks"]))
    assert [t["status"] for t in checks["tests"]] == ["pass", "fail", "fail", "fail"]

    # what workflows written before read (runners: grader): the notice right, the table counting passes
    rows, notice = reporter("grader", {"GRADER_RESULTS": outputs["result"]})
    assert notice == "Points 10/19" and rows[-1] == ("Total: ", "4.75", "19")


def _gradebook(*checks: CheckResult, concepts=("leaf", "retain_grad", "graph")) -> Gradebook:
    book = Gradebook(seed=1, devices=["cpu"], torch="2", concepts={c: Concept(c, c.title()) for c in concepts})
    for check in checks:
        book.checks[check.id] = check
    book.complete = True
    return book


def _check(topic: str, name: str, status: str, score: float = 0.0, max_score: float = 1.0, **fields) -> CheckResult:
    return CheckResult(
        id=f"test_{topic}.py::{name}",
        concept=fields.pop("concept", topic),
        score=score,
        max_score=max_score,
        status=status,
        topic=topic,
        title=name,
        file=f"{topic}.py",
        **fields,
    )


@pytest.mark.parametrize("score", [0.0, 0.1 + 0.2, 2.5, 6.0])
def test_reporter_agrees_at_every_score(score):
    # 0: nothing earned; 6: everything; 0.1 + 0.2: a sum JavaScript prints as 0.30000000000000004
    book = _gradebook(_check("leaf", "a", "passed" if score == 6 else "failed", score=score, max_score=6.0))
    runners, env = _as_the_workflow_passes_them(_outputs(classroom_output(book)))
    rows, notice = reporter(runners, env)
    assert notice == f"Points {_js(book.score)}/6" and rows[-1] == ("Total: ", _js(book.score), "6")


# -- annotations: the first 10 are the student's next steps ----------------

NOT_YET = msg("student.not_implemented", module="retain_grad", function="keep")


def test_annotations_follow_the_course_and_put_topics_not_begun_last():
    book = _gradebook(
        # in the order the checks files ran (alphabetical), not the course's
        _check("graph", "chain", "failed", feedback="wrong dy/dw", line=7),
        _check("graph", "broken", "error", feedback="check bug"),
        *[_check("retain_grad", f"r{i}", "failed", feedback=NOT_YET, line=3 + i) for i in range(8)],
        _check("leaf", "late", "failed", feedback="expected is_leaf True", line=40),
        _check("leaf", "early", "timeout", feedback="too slow", line=5),
        _check("leaf", "done", "passed", score=1.0, line=1),
        # a hidden check's generic failure says nothing of a topic being begun
        _check("retain_grad", "secret", "failed", hidden=True, feedback="A hidden check failed."),
    )
    titles = [line.split("title=")[1].split(" \u203a ")[1].split("%3A")[0] for line in annotation_lines(book)]
    # the course's order (leaf, retain_grad, graph), down each file; retain_grad not begun: after graph
    assert titles == ["early", "late", "chain", *[f"r{i}" for i in range(8)], "broken"]
    # GitHub shows 10: the 10th says how many more there are
    lines = annotation_lines(book)
    assert msg("github.more_annotations", count=2) in lines[9].replace("%0A", "\n")
    assert not any("more check(s)" in line for line in lines[:9] + lines[10:])


def test_a_topic_with_one_real_failure_is_begun():
    book = _gradebook(
        _check("leaf", "l1", "failed", feedback=msg("student.not_implemented", module="leaf", function="f"), line=2),
        _check("retain_grad", "r1", "failed", feedback="retain_grad() not called", line=9),
        _check("retain_grad", "r2", "failed", feedback=NOT_YET, line=20),
    )
    titles = [line.split(" \u203a ")[1].split("%3A")[0] for line in annotation_lines(book)]
    assert titles == ["r1", "r2", "l1"]


# -- the student template's .gitignore ---------------------------------------


def test_template_ignores_a_virtual_environment_and_caches(tmp_path, capsys):
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "test_m.py").write_text(
        textwrap.dedent("""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_f(submission):
            submission("m", numpy_only=True).f()
    """)
    )
    (checks / "m.py").write_text("def f():\n    raise NotImplementedError\n")
    assert cli.main(["github-classroom", str(checks), "-o", str(tmp_path / "course")]) == 0
    capsys.readouterr()
    template = tmp_path / "course" / "template"
    made = [
        ".venv/bin/python",
        "venv/lib/site.py",
        "exercises/__pycache__/m.cpython-311.pyc",
        "exercises/.ipynb_checkpoints/m-checkpoint.ipynb",
        ".pytest_cache/v/cache/nodeids",
        ".DS_Store",
    ]
    for name in made:
        (template / name).parent.mkdir(parents=True, exist_ok=True)
        (template / name).write_text("x")
    subprocess.run(["git", "init", "-q", str(template)], check=True)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=template,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    listed = {line[3:] for line in status.splitlines()}
    assert "exercises/m.py" in listed and ".gitignore" in listed
    assert not any(name in listed for name in made), listed

"""The course template (templates/course): a topic written from the course
authors' pages (docs/authors/) alone, with only the seams an instructor's
course has, graded, diagnosed, translated and counted in the class report
the way the shipped course is."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import class_command, run_grader

COURSE = Path(__file__).resolve().parent.parent / "templates" / "course"
SOLUTION = (COURSE / "solutions" / "hooks.py").read_text()
# the planted mistake the template keeps, and two more half-right hooks
WRONG = {
    "unscaled": (COURSE / "mistakes" / "hooks" / "unscaled.py").read_text(),
    "not_negated": SOLUTION.replace("lambda g: -s * g", "lambda g: s * g"),
    "no_return": SOLUTION.replace("lambda g: -s * g", "lambda g: None"),
}
SEEDS = ("1", "2", "3")


@pytest.fixture
def course(pytester: pytest.Pytester) -> Path:
    shutil.copytree(COURSE, pytester.path, dirs_exist_ok=True)
    return pytester.path


def grade(pytester: pytest.Pytester, submission: str, *args: str, report: str = "report.json"):
    return run_grader(pytester, "exercises", f"--grade-submission={submission}", *args, report=report)


def student(course: Path, name: str, source: str) -> str:
    folder = course / "students" / name
    folder.mkdir(parents=True)
    (folder / "hooks.py").write_text(source)
    return str(folder)


def grade_class(checks: Path, module: str, students: dict[str, str], seed: str) -> tuple[dict[str, dict], str]:
    """``autograd-grader class`` on one module per student (name -> source):
    each student's report, and the class report's page."""
    subs, out = checks.parent / "subs", checks.parent / "out"
    for name, source in students.items():
        (subs / name).mkdir(parents=True)
        (subs / name / f"{module}.py").write_text(source)
    done = subprocess.run(
        class_command(checks, subs, out, "--seed", seed),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    reports = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json") if p.name != "class-run.json"}
    return reports, (out / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("seed", SEEDS)
def test_the_solution_scores_full_marks_and_the_stub_nothing(pytester, course, seed):
    solved = grade(pytester, "solutions", f"--grade-seed={seed}")
    assert (solved.report["score"], solved.report["max_score"]) == (2.0, 2.0), solved.text
    assert solved.report["checks"][0]["inputs_missing"] == []
    stub = grade(pytester, "exercises", f"--grade-seed={seed}")
    (check,) = stub.report["checks"]
    assert (check["status"], check["score"]) == ("failed", 0.0)
    assert "not implemented" in check["feedback"]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mistake", sorted(WRONG))
def test_each_half_right_hook_gets_the_courses_diagnosis(pytester, course, mistake, seed):
    graded = grade(pytester, student(course, mistake, WRONG[mistake]), f"--grade-seed={seed}")
    (check,) = graded.report["checks"]
    assert check["status"] == "failed" and check["score"] == 0.0
    assert [d["id"] for d in check["diagnoses"]] == [f"diag.hooks.{mistake}"], check


def test_in_chinese_the_courses_title_and_diagnosis_are_chinese(pytester, course):
    graded = grade(pytester, student(course, "unscaled", WRONG["unscaled"]), "--grade-lang", "zh")
    (concept,) = graded.report["concepts"]
    assert concept["title"] == "梯度钩子"
    (check,) = graded.report["checks"]
    assert "你的钩子翻转了梯度的符号" in check["feedback"]
    assert [d["id"] for d in check["diagnoses"]] == ["diag.hooks.unscaled"]


def test_a_class_run_counts_the_courses_diagnoses(tmp_path):
    checks = tmp_path / "checks"
    shutil.copytree(COURSE / "exercises", checks)
    reports, page = grade_class(
        checks,
        "hooks",
        {"ann": WRONG["unscaled"], "ben": WRONG["unscaled"], "cy": SOLUTION, "dee": WRONG["no_return"]},
        "5",
    )
    assert {r["student"]: r["score"] for r in reports.values()} == {"ann": 0.0, "ben": 0.0, "cy": 2.0, "dee": 0.0}
    assert "Gradient hooks" in page
    assert "2 students: x.grad is -g: your hook flips the gradient" in page
    assert "1 student: x.grad is the plain gradient g" in page


def test_the_instructors_layout_grades_the_template_as_the_self_check_does(pytester, course):
    """Checks in a folder of their own, the student's files in another:
    the same score and the same diagnosis as beside the stub."""
    checks = course / "checks"
    shutil.copytree(course / "exercises", checks)
    (checks / "hooks.py").unlink()
    (checks / "pytest.ini").write_text("[pytest]\n")
    folder = student(course, "ann", WRONG["unscaled"])
    apart = run_grader(
        pytester,
        "-c",
        "checks/pytest.ini",
        "--rootdir",
        "checks",
        "checks",
        f"--grade-submission={folder}",
        "--grade-seed=4",
    )
    beside = grade(pytester, folder, "--grade-seed=4", report="beside.json")
    assert apart.report["score"] == beside.report["score"] == 0.0
    assert [d["id"] for c in apart.report["checks"] for d in c["diagnoses"]] == ["diag.hooks.unscaled"]
    assert apart.report["checks"][0]["feedback"] == beside.report["checks"][0]["feedback"]


def test_a_class_run_counts_the_shipped_courses_own_diagnoses(tmp_path, monkeypatch):
    """The shipped course's diag.<topic>.* ids live in exercises/, as a
    course's do, and the class report counts them like the grader's own."""
    monkeypatch.delenv("PYTEST_PLUGINS")  # only the checks folder's own conftest.py speaks for the course
    exercises = Path(__file__).resolve().parent.parent / "exercises"
    solution = (exercises.parent / "solutions" / "retain_graph.py").read_text()
    short = solution.replace("for _ in range(k - 1):", "for _ in range(k - 2):", 1)
    assert short != solution
    checks = tmp_path / "checks"
    checks.mkdir()
    for name in ("test_retain_graph.py", "conftest.py", "course_messages_en.py", "course_messages_zh.py"):
        shutil.copy(exercises / name, checks / name)
    reports, page = grade_class(checks, "retain_graph", {"ann": short, "ben": short, "cy": solution}, "3")
    ids = {d["id"] for c in reports["ann"]["checks"] for d in c["diagnoses"]}
    assert "diag.retain_graph.call_count" in ids, reports["ann"]["checks"]
    assert "2 students: Likely mistake: your code called backward" in page


def test_the_authors_page_shows_the_templates_check_as_it_is():
    # docs/authors/index.md walks through the template's check line by line:
    # the code it shows is the file the course grades with
    page = (Path(__file__).resolve().parent.parent / "docs" / "authors" / "index.md").read_text(encoding="utf-8")
    shown = re.findall(r"^```python\n(.*?)^```", page, re.M | re.S)
    assert (COURSE / "exercises" / "test_hooks.py").read_text() in shown

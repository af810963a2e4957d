"""``autograd-grader new-topic``: a topic scaffolded into a course grades as
written (the solution full marks, the stub nothing but "not implemented",
the planted mistake caught and named on every seed), refuses before
writing anything, and adds to an existing course without breaking it."""

from __future__ import annotations

import doctest
import shutil
from pathlib import Path

import pytest
from conftest import run_grader

from pytest_autograd_grader.cli import main
from pytest_autograd_grader.i18n.en import EN
from pytest_autograd_grader.i18n.zh import ZH

TEMPLATE = Path(__file__).resolve().parent.parent / "templates" / "course"
SEEDS = ("1", "2", "3", "4")


def new_topic(course: Path, name: str = "scaled", *more: str, concept: str = "scaling") -> int:
    return main(["new-topic", name, "--concept", concept, "--course", str(course), *more])


def files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` and its bytes: what a refusal must leave as it was."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def grade(pytester: pytest.Pytester, submission: str, seed: str, *args: str):
    return run_grader(pytester, "exercises", f"--grade-submission={submission}", f"--grade-seed={seed}", *args)


def planted_as_submission(course: Path, name: str = "scaled") -> tuple[str, str]:
    """A submission folder holding the planted mistake as the topic's module
    (and the other topics' solutions), and the diagnosis its docstring expects."""
    mistake = next((course / "mistakes" / name).glob("*.py"))
    folder = course / "wrong"
    shutil.copytree(course / "solutions", folder)
    shutil.copy(mistake, folder / f"{name}.py")
    fields = dict(line.split(": ", 1) for line in mistake.read_text().splitlines() if ": " in line)
    return str(folder), fields["expected diagnosis"]


@pytest.fixture
def empty_course(pytester: pytest.Pytester) -> Path:
    return pytester.path


@pytest.fixture
def template_course(pytester: pytest.Pytester) -> Path:
    shutil.copytree(TEMPLATE, pytester.path, dirs_exist_ok=True)
    return pytester.path


def test_an_empty_folder_becomes_a_course_whose_topic_grades_as_written(pytester, empty_course, capsys):
    assert new_topic(empty_course, "scaled", "--title", "Scaled losses") == 0
    out = capsys.readouterr().out
    for path in (
        "exercises/scaled.py",
        "exercises/test_scaled.py",
        "solutions/scaled.py",
        "mistakes/scaled/unscaled.py",
        "exercises/conftest.py",
    ):
        assert (empty_course / path).is_file(), path
    exercises, solutions = empty_course / "exercises", empty_course / "solutions"
    assert f"autograd-grader audit {exercises} --solutions {solutions}" in out
    for seed in SEEDS:
        solved = grade(pytester, "solutions", seed)
        assert (solved.report["score"], solved.report["max_score"]) == (2.0, 2.0), solved.text
        (check,) = solved.report["checks"]
        assert check["inputs_missing"] == [] and check["concept"] == "scaling"
        assert solved.report["concepts"][0]["title"] == "Scaled losses"
        stub = grade(pytester, "exercises", seed)
        (check,) = stub.report["checks"]
        assert (check["status"], check["score"]) == ("failed", 0.0)
        assert "not implemented" in check["feedback"]


def test_the_planted_mistake_loses_points_and_is_named_on_every_seed(pytester, empty_course):
    new_topic(empty_course)
    wrong, expected = planted_as_submission(empty_course)
    assert expected == "diag.scaled.unscaled"
    for seed in SEEDS:
        graded = grade(pytester, wrong, seed)
        (check,) = graded.report["checks"]
        assert check["score"] < check["max_score"], (seed, check)
        assert expected in [d["id"] for d in check["diagnoses"]], (seed, check)
        assert "divide L by d" in check["feedback"]


def test_the_diagnosis_speaks_chinese(pytester, empty_course):
    new_topic(empty_course)
    wrong, _ = planted_as_submission(empty_course)
    graded = grade(pytester, wrong, "1", "--grade-lang", "zh")
    assert "请先把 L 除以 d" in graded.report["checks"][0]["feedback"]


def test_the_stubs_example_is_what_the_solution_returns(empty_course):
    new_topic(empty_course)
    import torch

    solution, stub = {}, {}
    exec(compile((empty_course / "solutions" / "scaled.py").read_text(), "solution", "exec"), solution)
    exec(compile((empty_course / "exercises" / "scaled.py").read_text(), "stub", "exec"), stub)
    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(
        stub["scaled_grad"], "scaled_grad", globs={"torch": torch, "scaled_grad": solution["scaled_grad"]}
    ):
        runner.run(test)
    assert runner.summarize(verbose=False) == doctest.TestResults(failed=0, attempted=2)


def test_in_the_template_course_the_new_topic_and_the_hooks_topic_both_grade(pytester, template_course, capsys):
    before = (template_course / "exercises" / "conftest.py").read_text()
    assert new_topic(template_course) == 0
    assert "at the end of" in capsys.readouterr().out
    after = (template_course / "exercises" / "conftest.py").read_text()
    assert after.startswith(before.rstrip("\n")), "the course's own registrations are left as they were"
    solved = grade(pytester, "solutions", "1")
    assert (solved.report["score"], solved.report["max_score"]) == (4.0, 4.0), solved.text
    assert {c["id"] for c in solved.report["concepts"]} == {"hooks", "scaling"}
    hooks_wrong = template_course / "hooks_wrong"
    shutil.copytree(template_course / "solutions", hooks_wrong)
    shutil.copy(template_course / "mistakes" / "hooks" / "unscaled.py", hooks_wrong / "hooks.py")
    graded = grade(pytester, str(hooks_wrong), "2", "--grade-lang", "zh")
    hooks, scaled = graded.check("test_hooks"), graded.check("test_scaled")
    assert [d["id"] for d in hooks["diagnoses"]] == ["diag.hooks.unscaled"] and scaled["score"] == 2.0
    assert "没有乘以 s" in hooks["feedback"]


def test_a_second_topic_and_a_known_concept_add_to_the_course(pytester, template_course):
    assert new_topic(template_course) == 0
    assert new_topic(template_course, "more_hooks", concept="hooks") == 0
    conftest = (template_course / "exercises" / "conftest.py").read_text()
    assert conftest.count("pytest_grade_concepts_") == 1, "a concept the course has is not registered again"
    solved = grade(pytester, "solutions", "3")
    assert (solved.report["score"], solved.report["max_score"]) == (6.0, 6.0), solved.text
    assert graded_concept(solved, "test_more_hooks") == "hooks"
    wrong, expected = planted_as_submission(template_course, "more_hooks")
    graded = grade(pytester, wrong, "3")
    assert [d["id"] for d in graded.check("test_more_hooks")["diagnoses"]] == [expected]


def graded_concept(graded, check: str) -> str:
    return graded.check(check)["concept"]


@pytest.mark.parametrize(
    "name, says",
    [
        ("2x", "must be a Python identifier"),
        ("my-topic", "must be a Python identifier"),
        ("naïve", "must be a Python identifier"),
        ("class", "is a Python keyword"),
        ("test_scaled", "pytest would take"),
        ("scaled_test", "pytest would take"),
        ("os", "a module of Python's"),
        ("torch", "a module of Python's"),
        ("conftest", "a module of Python's"),
        ("hooks", "are there already"),
    ],
)
def test_a_name_that_cannot_be_a_topic_is_refused_and_nothing_is_written(template_course, capsys, name, says):
    before = files(template_course)
    assert new_topic(template_course, name) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert files(template_course) == before


def test_an_existing_file_of_the_topic_is_listed_and_never_overwritten(empty_course, capsys):
    (empty_course / "solutions").mkdir()
    (empty_course / "solutions" / "scaled.py").write_text("# the author's own\n")
    (empty_course / "mistakes" / "scaled").mkdir(parents=True)
    before = files(empty_course)
    assert new_topic(empty_course) == 2
    err = capsys.readouterr().err
    assert "nothing was written" in err
    assert str(Path("solutions") / "scaled.py") in err and str(Path("mistakes") / "scaled") in err
    assert files(empty_course) == before and not (empty_course / "exercises").exists()


@pytest.mark.parametrize("concept", ["Scaling", "scal.ing", "1scaling", "scal-ing", ""])
def test_a_concept_id_that_breaks_the_rule_is_refused(empty_course, capsys, concept):
    assert new_topic(empty_course, concept=concept) == 2
    assert "is not a concept id" in capsys.readouterr().err
    assert files(empty_course) == {}


def test_a_course_that_is_not_a_folder_and_a_title_of_two_lines_are_refused(empty_course, capsys):
    assert new_topic(empty_course / "nowhere") == 2
    assert "is not a folder" in capsys.readouterr().err
    assert new_topic(empty_course, "scaled", "--title", "two\nlines") == 2
    assert "--title must be one line" in capsys.readouterr().err
    assert files(empty_course) == {}


def test_a_conftest_that_cannot_be_edited_safely_is_left_alone_and_the_block_printed(empty_course, capsys):
    (empty_course / "exercises").mkdir()
    broken = "def pytest_grade_concepts(config:\n"
    (empty_course / "exercises" / "conftest.py").write_text(broken)
    assert new_topic(empty_course) == 1
    err = capsys.readouterr().err
    assert "is not valid Python" in err and "add this block at the end of" in err
    assert "def pytest_grade_messages_scaled(config):" in err
    assert (empty_course / "exercises" / "conftest.py").read_text() == broken
    assert (empty_course / "solutions" / "scaled.py").is_file()


def test_a_second_run_for_the_same_registration_does_not_add_it_twice(empty_course, capsys):
    assert new_topic(empty_course) == 0
    conftest = (empty_course / "exercises" / "conftest.py").read_text()
    for path in ("exercises/scaled.py", "exercises/test_scaled.py", "solutions/scaled.py"):
        (empty_course / path).unlink()
    shutil.rmtree(empty_course / "mistakes" / "scaled")
    capsys.readouterr()
    assert new_topic(empty_course) == 1
    assert "already defines" in capsys.readouterr().err
    assert (empty_course / "exercises" / "conftest.py").read_text() == conftest


def test_in_chinese_the_refusal_is_chinese(empty_course, capsys):
    assert new_topic(empty_course, "class", "--lang", "zh") == 2
    assert "是 Python 关键字" in capsys.readouterr().err
    assert new_topic(empty_course, "class") == 2
    assert "is a Python keyword" in capsys.readouterr().err, "the language is put back after the command"


def test_every_message_of_the_command_is_in_both_catalogues():
    ours = {key for key in EN if key.startswith("new_topic.")}
    assert ours and ours == {key for key in ZH if key.startswith("new_topic.")}


def test_the_audit_passes_on_the_scaffold_as_written(empty_course, capsys, tmp_path):
    """The promise new-topic makes: `autograd-grader audit` passes on what
    it wrote, the planted mistake killed and named, and every generated
    mutant of the solution killed."""
    import json

    assert new_topic(empty_course, "scaled") == 0
    report = tmp_path / "audit.json"
    code = main(
        [
            "audit",
            str(empty_course / "exercises"),
            "--solutions",
            str(empty_course / "solutions"),
            "--seeds",
            "3",
            "--jobs",
            "2",
            "--fail-under",
            "100",
            "--json",
            str(report),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    document = json.loads(report.read_text())
    assert [(m["name"], m["status"]) for m in document["mistakes"]] == [("unscaled", "killed")]
    assert document["mutants"] and {m["status"] for m in document["mutants"]} == {"killed"}
    assert document["score"]["percent"] == 100.0

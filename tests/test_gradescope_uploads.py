"""Gradescope as a student and an instructor meet it when something is
off: an upload whose file a browser renamed (``leaf (1).py``), and a check
of the course's own that cannot run."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import grade_checks, run_grader

from pytest_autograd_grader.boundary.upload_names import copies_of, original_name
from pytest_autograd_grader.i18n import msg
from pytest_autograd_grader.platforms.manifest import build_manifest

CHECKS = """
import pytest

@pytest.mark.grade(concept="leaf", points=2)
def test_f(submission, autograd):
    autograd.assert_equal(submission("m", numpy_only=True).f(3), 3, "f")
"""
RIGHT = "def f(x):\n    return x\n"


@pytest.mark.parametrize(
    "name",
    [
        "m (1).py",
        "m(2).py",
        "m-1.py",
        "m copy.py",
        "m - Copy.py",
        "m copy 2.py",
        "m (copy).py",
        "Copy of m.py",
        "M.py",
        "m.py.txt",
        "m (1) (1).py",
    ],
)
def test_copies_of_an_expected_file_are_recognised(name):
    assert original_name(name) == "m.py"


@pytest.mark.parametrize("name", ["m.py", "mm (1).py", "m (1).txt", "m_2.py", "m\n(1).py", "m (1)/x.py", "test_m.py"])
def test_other_names_are_not_copies(name):
    assert original_name(name) != "m.py"


def test_a_second_download_gets_a_rename_hint_and_is_not_graded(pytester):
    student = pytester.path / "student"
    student.mkdir()
    # a right answer under a browser's name, and names a student chose to fool the hint
    (student / "m (1).py").write_text(RIGHT)
    (student / "m (1)\x1b[2J.py").write_text(RIGHT)
    (student / "mm (1).py").write_text(RIGHT)
    graded = grade_checks(pytester, CHECKS, "--grade-gradescope", "results.json")
    (test,) = json.loads((pytester.path / "results.json").read_text())["tests"]
    assert (test["status"], test["score"]) == ("failed", 0.0)  # never graded as m.py
    hint = msg("student.rename_copy", found="'m (1).py'", expected="m.py", example="m (1).py")
    assert msg("student.module_missing", module="m") in test["output"] and hint in test["output"], test["output"]
    assert "\x1b" not in test["output"] and "mm (1)" not in test["output"]
    assert hint in graded.check("test_f")["feedback"]  # the same for a self-check and the JSON report


def test_a_copy_of_a_notebook_is_named_as_a_notebook(tmp_path):
    (tmp_path / "m (1).ipynb").write_text("{}")
    (tmp_path / "m (1)").mkdir()  # a folder is no upload of the file
    assert copies_of(tmp_path, "m") == ["m (1).ipynb"]


# -- a broken check: the instructor's, visible, and its points kept ------------

BROKEN = """
import pytest
import helper_here  # there when the manifest was written, missing where it runs

@pytest.mark.grade(concept="graph", points=3)
def test_g():
    pass

@pytest.mark.grade(concept="graph", points=4, hidden=True)
def test_secret():
    pass
"""


def test_a_check_file_that_cannot_load_keeps_its_points_and_shows_no_traceback(pytester):
    checks = pytester.path / "checks"
    checks.mkdir()
    (checks / "test_m.py").write_text(textwrap.dedent(CHECKS))
    (checks / "test_broken.py").write_text(textwrap.dedent(BROKEN))
    (checks / "helper_here.py").write_text("")
    (checks / "pytest.ini").write_text("[pytest]\n")
    (pytester.path / "manifest.json").write_text(json.dumps(build_manifest(checks)))
    (checks / "helper_here.py").unlink()
    (pytester.path / "student").mkdir()
    (pytester.path / "student" / "m.py").write_text(RIGHT)
    graded = run_grader(
        pytester,
        "checks",
        "--grade-submission=student",
        "--grade-manifest",
        "manifest.json",
        "--grade-gradescope",
        "results.json",
    )
    results = json.loads((pytester.path / "results.json").read_text())
    assert results["score"] == 2.0
    assert sum(t["max_score"] for t in results["tests"]) == 9.0  # 2 + the broken file's 3 + 4, scored 0
    broken = [t for t in results["tests"] if t["extra_data"]["grader_status"] == "error"]
    assert sorted((t["name"], t["max_score"], t["score"], t["visibility"]) for t in broken) == [
        ("Computational graphs › g", 3.0, 0.0, "visible"),
        ("Computational graphs › secret", 4.0, 0.0, "hidden"),
    ]
    for test in broken:
        assert "could not load the checks in test_broken.py" in test["output"]
        assert "No module named 'helper_here'" in test["output"] and "tell your instructor" in test["output"]
        assert "Traceback" not in test["output"] and "_pytest" not in test["output"], test["output"]
    assert graded.report["max_score"] == 9.0 and graded.report["percent"] == pytest.approx(22.2222, abs=1e-3)


def test_without_a_manifest_a_broken_file_says_so_without_a_traceback(pytester):
    pytester.makepyfile(
        test_broken="""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_x(:
            pass
    """
    )
    graded = run_grader(pytester, "--grade-gradescope", "results.json", "--grade-json-private", "private.json")
    (test,) = json.loads((pytester.path / "results.json").read_text())["tests"]
    assert "could not load the checks in test_broken.py (line 4: SyntaxError" in test["output"]
    assert "tell your instructor" in test["output"]
    assert "_pytest" not in test["output"] and "def test_x(:" not in test["output"], test["output"]
    assert "_pytest" not in graded.checks["test_broken.py"]["feedback"]
    # the instructor's report keeps pytest's account
    (private,) = json.loads((pytester.path / "private.json").read_text())["checks"]
    assert "def test_x(:" in private["private_feedback"]


def test_bundle_ships_the_checks_points_or_says_why_not(tmp_path, capsys):
    import zipfile

    from pytest_autograd_grader import cli

    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "test_m.py").write_text(textwrap.dedent(CHECKS))
    assert cli.main(["gradescope-bundle", str(checks), "-o", str(tmp_path / "a.zip")]) == 0
    archive = zipfile.ZipFile(tmp_path / "a.zip")
    manifest = json.loads(archive.read("grade-manifest.json"))
    assert [c["points"] for c in manifest["files"]["test_m.py"]["checks"]] == [2]
    assert json.loads(archive.read("bundle.json"))["grade_options"][-2:] == ["--grade-manifest", "grade-manifest.json"]
    capsys.readouterr()

    # checks that do not load here: the zip is written as before, with a warning saying what it lacks
    (checks / "test_b.py").write_text("import not_installed_anywhere\n")
    assert cli.main(["gradescope-bundle", str(checks), "-o", str(tmp_path / "b.zip")]) == 0
    err = capsys.readouterr().err
    assert "gradescope-bundle: warning: the zip holds no list of the checks" in err
    assert "not_installed_anywhere" in err
    archive = zipfile.ZipFile(tmp_path / "b.zip")
    assert "grade-manifest.json" not in archive.namelist()
    assert "--grade-manifest" not in json.loads(archive.read("bundle.json"))["grade_options"]

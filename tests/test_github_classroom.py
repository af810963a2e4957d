"""``autograd-grader github-classroom CHECKS -o DIR`` as an instructor meets
it: the private checks repository and the student template repository it
writes, hidden check files kept out of the template, the workflow that
installs the grader from the checks repository, and refusals in words."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, run_grader

from pytest_autograd_grader import __version__, cli
from pytest_autograd_grader.i18n import msg

yaml = pytest.importorskip("yaml")

WHEEL = f"pytest_autograd_grader-{__version__}-py3-none-any.whl"
VISIBLE = '''
import pytest

@pytest.mark.grade(concept="leaf", points=2)
def test_f(submission, autograd):
    """f returns its input"""
    autograd.assert_equal(submission("m", numpy_only=True).f(3), 3, "f")

@pytest.mark.grade(concept="leaf", points=1, hidden=False)
def test_f_again(submission, autograd):
    autograd.assert_equal(submission("m", numpy_only=True).f(5), 5, "f")
'''
HIDDEN = """
import pytest

@pytest.mark.grade(concept="graph", points=3, hidden=True)
def test_secret(submission, autograd):
    autograd.assert_equal(submission("m", numpy_only=True).f(4), 4, "f")
"""
# hidden through a module-level mark whose value pytest reads from a name
HIDDEN_BY_NAME = """
import pytest

WHEN = "after_due_date"
pytestmark = pytest.mark.grade(concept="graph", hidden=WHEN)

def test_later(submission, autograd):
    autograd.assert_equal(submission("m", numpy_only=True).f(6), 6, "f")
"""
# hidden by the course's conftest: only what pytest collects shows it
HOOKED = """
import pytest

@pytest.mark.grade(concept="graph")
def test_hooked(submission, autograd):
    autograd.assert_equal(submission("m", numpy_only=True).f(7), 7, "f")
"""
CONFTEST = """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if item.name == "test_hooked":
            item.add_marker(pytest.mark.grade(hidden=True))
"""
STUB = 'def f(x):\n    """Return x."""\n    raise NotImplementedError("f")\n'
SOLUTION = "def f(x):\n    return x\n"


def make_checks(path: Path) -> Path:
    checks = path / "checks"
    files = {
        "test_visible.py": VISIBLE,
        "test_hidden.py": HIDDEN,
        "more/test_later.py": HIDDEN_BY_NAME,
        "test_hooked.py": HOOKED,
        "conftest.py": CONFTEST,
        "m.py": STUB,
        "data/table.txt": "1 2 3\n",
    }
    for name, source in files.items():
        (checks / name).parent.mkdir(parents=True, exist_ok=True)
        (checks / name).write_text(textwrap.dedent(source))
    (checks / "__pycache__").mkdir()
    (checks / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"junk")
    return checks


def classroom(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(["github-classroom", *args])
    out, err = capsys.readouterr()
    return code, out, err


def files_under(path: Path) -> set[str]:
    return {p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()}


@pytest.fixture
def course(tmp_path, capsys):
    checks = make_checks(tmp_path)
    code, out, err = classroom(capsys, str(checks), "-o", str(tmp_path / "course"))
    assert code == 0, err
    return tmp_path / "course", checks, out, err


def test_writes_the_checks_repository_and_the_student_template(course, capsys, tmp_path):
    out_dir, checks, out, err = course
    assert files_under(out_dir / "checks") == {
        "test_visible.py",
        "test_hidden.py",
        "more/test_later.py",
        "test_hooked.py",
        "conftest.py",
        "m.py",
        "data/table.txt",
        "pytest.ini",
        "grade-manifest.json",
        f"wheels/{WHEEL}",
        "README.md",
    }
    assert files_under(out_dir / "template") == {
        "exercises/test_visible.py",
        "exercises/conftest.py",
        "exercises/m.py",
        "exercises/data/table.txt",
        ".github/workflows/classroom.yml",
        f"grader/{WHEEL}",
        "README.md",
        ".gitignore",
    }
    for name in ("test_visible.py", "conftest.py", "m.py"):
        assert (out_dir / "template" / "exercises" / name).read_bytes() == (checks / name).read_bytes()
    assert (out_dir / "checks" / "pytest.ini").read_text() == "[pytest]\n"
    # one wheel, the same in both: the workflow installs the checks repository's
    assert (out_dir / "checks" / "wheels" / WHEEL).read_bytes() == (
        out_dir / "template" / "grader" / WHEEL
    ).read_bytes()
    # the manifest is the one `autograd-grader manifest` writes for the checks repository
    assert cli.main(["manifest", str(out_dir / "checks"), "-o", str(tmp_path / "m.json")]) == 0
    capsys.readouterr()
    assert (out_dir / "checks" / "grade-manifest.json").read_text() == (tmp_path / "m.json").read_text()
    # what was written, every hidden file by name, and what to do next
    for name in ("test_hidden.py", "more/test_later.py", "test_hooked.py"):
        assert msg("github_classroom.hidden", file=checks / name) in out
    assert "test_visible.py holds hidden" not in out
    assert f"wrote {out_dir / 'checks'}, the private checks repository:" in out
    assert f"grader/{WHEEL}" in out and ".github/workflows/classroom.yml" in out
    assert "GRADER_CHECKS_TOKEN" in out and "GRADER_CHECKS_REPO" in out and "template repository" in out
    assert f"{checks} has no pytest.ini; the checks repository gets a minimal one" in err
    # the READMEs: how students self-check, how the instructor sets up and regrades
    student = (out_dir / "template" / "README.md").read_text()
    assert f"pip install torch==2.13.0 ./grader/{WHEEL}" in student and "pytest --grade exercises/" in student
    instructor = (out_dir / "checks" / "README.md").read_text()
    assert "private" in instructor and "GRADER_CHECKS_TOKEN" in instructor and f"wheels/{WHEEL}" in instructor
    assert "autograd-grader manifest . -o grade-manifest.json" in instructor


def _steps(workflow: dict) -> dict[str, dict]:
    (job,) = workflow["jobs"].values()
    return {step.get("name", step.get("uses")): step for step in job["steps"]}


def test_the_workflow_installs_the_grader_from_the_checks_repository(course, tmp_path):
    out_dir = course[0]
    written = (out_dir / "template" / ".github" / "workflows" / "classroom.yml").read_bytes()
    # one workflow: the command writes the package's file, the one source (no copy in templates/)
    assert written == (REPO / "pytest_autograd_grader" / "platforms" / "github_files" / "classroom.yml").read_bytes()
    assert not (REPO / "templates" / "github-classroom" / ".github").exists()
    steps = _steps(yaml.safe_load(written))
    torch_step, grader_step = (
        steps["Install PyTorch (CPU build)"],
        steps["Install the grader from the checks repository"],
    )
    names = list(steps)
    assert (
        names.index("Install PyTorch (CPU build)")
        < names.index("Install the grader from the checks repository")
        < names.index("Grade")
    )
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in torch_step["run"]
    assert "checks/wheels/*.whl" in grader_step["run"] and "student" not in grader_step["run"]
    grade = " ".join(steps["Grade"]["run"].split())
    assert grade == (
        "pytest -c checks/pytest.ini --rootdir checks -p no:cacheprovider --grade checks/ "
        "--grade-submission=student/exercises --grade-github --grade-json grade.json "
        "--grade-manifest checks/grade-manifest.json"
    )
    # every pip install installs torch, pip itself or the wheel: never a package by name
    installs = [
        line.split("install", 1)[1].split()
        for step in steps.values()
        for line in str(step.get("run", "")).splitlines()
        if "pip install" in line
    ]
    assert installs == [
        ["--upgrade", "pip"],
        ["torch==2.13.0", "--index-url", "https://download.pytorch.org/whl/cpu"],
        ['"${wheels[0]}[notebook,engine]"'],
    ]

    # the install step's script, with a pip that only says what it was asked
    work = tmp_path / "runner"
    (work / "bin").mkdir(parents=True)
    (work / "bin" / "pip").write_text('#!/bin/sh\necho "pip $*"\n')
    (work / "bin" / "pip").chmod(0o755)
    env = {**os.environ, "PATH": f"{work / 'bin'}:{os.environ['PATH']}"}

    def install() -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", "-e", "-c", grader_step["run"]], cwd=work, env=env, capture_output=True, text=True
        )

    wheels = work / "checks" / "wheels"
    wheels.mkdir(parents=True)
    for count in (0, 2):
        for i in range(count):
            (wheels / f"g{i}-py3-none-any.whl").write_bytes(b"PK")
        done = install()
        assert done.returncode == 1 and "pip " not in done.stdout, done.stdout
        assert done.stdout.startswith(
            f"::error title=Grader not installed::checks/wheels/ of the checks repository "
            f"holds {count} .whl files instead of one"
        )
    (wheels / "g0-py3-none-any.whl").unlink()
    done = install()
    assert (done.returncode, done.stdout) == (0, "pip install checks/wheels/g1-py3-none-any.whl[notebook,engine]\n")


def test_the_manifest_keeps_the_copied_checks_honest(course, pytester):
    out_dir = course[0]
    checks = out_dir / "checks"
    student = pytester.path / "student"
    student.mkdir()
    (student / "m.py").write_text(SOLUTION)

    def grade():
        return run_grader(
            pytester,
            "-c",
            str(checks / "pytest.ini"),
            "--rootdir",
            str(checks),
            str(checks),
            f"--grade-submission={student}",
            "--grade-inline",
            "--grade-manifest",
            str(checks / "grade-manifest.json"),
        )

    graded = grade()
    assert (graded.report["score"], graded.report["max_score"]) == (8.0, 8.0), graded.text
    (checks / "test_visible.py").write_text((checks / "test_visible.py").read_text() + "\n# edited\n")
    graded = grade()
    edited = [c for c in graded.report["checks"] if c["id"].startswith("test_visible.py::")]
    assert len(edited) == 2 and all(c["status"] == "failed" and c["score"] == 0 for c in edited)
    assert all("this check file differs from the course's" in c["feedback"] for c in edited)
    assert graded.report["score"] == 5.0


def test_bad_input_is_refused_in_words(tmp_path, capsys):
    checks = make_checks(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "helper.py").write_text("")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    (tmp_path / "a-file").write_text("")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "test_broken.py").write_text("def test_x(:\n")
    refusals = [
        ((str(tmp_path / "nowhere"), "-o", str(tmp_path / "c1")), "is not a directory; pass the directory"),
        ((str(tmp_path / "empty"), "-o", str(tmp_path / "c2")), "holds no test_*.py or *_test.py file"),
        ((str(checks), "-o", str(checks / "course")), "lies inside the checks directory"),
        ((str(checks), "-o", str(tmp_path)), "would be written over the checks directory"),
        ((str(checks), "-o", str(tmp_path / "full")), "is not empty; choose a new folder, or add --force"),
        ((str(checks), "-o", str(tmp_path / "a-file")), "is a file, not a directory"),
        ((str(broken), "-o", str(tmp_path / "c3")), "could not list the checks, so nothing was written"),
    ]
    for args, message in refusals:
        code, out, err = classroom(capsys, *args)
        assert (code, out) == (2, ""), (args, out, err)
        assert message in err and "Traceback" not in err, (args, err)
    assert not [p for p in ("c1", "c2", "c3") if (tmp_path / p).exists()]
    assert not (checks / "course").exists() and (tmp_path / "full" / "notes.txt").read_text() == "mine"
    # -o is required: argparse says so (exit 2)
    with pytest.raises(SystemExit) as exited:
        cli.main(["github-classroom", str(checks)])
    assert exited.value.code == 2 and "-o/--output" in capsys.readouterr().err


def test_force_writes_the_course_again_and_keeps_the_repositories_git(course, capsys):
    out_dir, checks, _, _ = course
    for part in ("checks", "template"):
        (out_dir / part / ".git").mkdir()
        (out_dir / part / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out_dir / "checks" / "stale.py").write_text("")
    (checks / "test_hidden.py").unlink()
    code, out, err = classroom(capsys, str(checks), "-o", str(out_dir), "--force")
    assert code == 0, err
    for part in ("checks", "template"):
        assert (out_dir / part / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert not (out_dir / "checks" / "stale.py").exists() and not (out_dir / "checks" / "test_hidden.py").exists()
    assert "test_hidden" not in (out_dir / "checks" / "grade-manifest.json").read_text()
    manifest = json.loads((out_dir / "checks" / "grade-manifest.json").read_text())
    assert "test_visible.py" in manifest["files"]


def test_a_checks_repository_as_checks_gets_one_wheel_and_a_fresh_manifest(course, capsys, tmp_path):
    # the instructor writes a new course from the checks repository itself
    out_dir = course[0]
    (out_dir / "checks" / "wheels" / "pytest_autograd_grader-0.0.1-py3-none-any.whl").write_bytes(b"PK")
    code, out, err = classroom(capsys, str(out_dir / "checks"), "-o", str(tmp_path / "again"))
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "again" / "checks" / "wheels").iterdir()) == [WHEEL]
    for name in ("grade-manifest.json", "README.md", f"wheels/{WHEEL}"):
        assert msg("github_classroom.own_file", file=out_dir / "checks" / name) in err
    assert not (tmp_path / "again" / "template" / "exercises" / "README.md").exists()
    assert not (tmp_path / "again" / "template" / "exercises" / "wheels").exists()


def test_a_grader_that_is_not_installed_is_said_in_words(tmp_path, capsys, monkeypatch):
    from importlib import metadata

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    checks = make_checks(tmp_path)
    for command in (
        ["github-classroom", str(checks), "-o", str(tmp_path / "course")],
        ["gradescope-bundle", str(checks), "-o", str(tmp_path / "autograder.zip")],
    ):
        assert cli.main(command) == 2
        out, err = capsys.readouterr()
        assert out == "" and "Traceback" not in err
        assert "cannot build the grader's wheel: pytest-autograd-grader is not installed in this Python" in err
    assert not (tmp_path / "course").exists() and not (tmp_path / "autograder.zip").exists()

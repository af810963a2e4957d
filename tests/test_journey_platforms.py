"""Journeys: an instructor's platform set-up installed as shipped on a fresh
environment, with no published package. Gradescope: the autograder zip
unpacked into a fake root, its grader installed from the zip into a new
venv, run_autograder grading uploads. GitHub Classroom: the course the
command writes, the workflow's own install and grade steps run in a
runner's shell.

Both install torch into the new venv with a plain ``pip install
torch==2.13.0``: the platforms fetch the CPU build from
download.pytorch.org, which this machine cannot reach, while its pip
configuration finds that same CPU build on disk. Every other install line
is the set-up's own, run verbatim.
"""

from __future__ import annotations

import base64
import json
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
from journeys import REPO, base_env, explain, shared_dir, shell, skip_if_nested, system_python

from pytest_autograd_grader.i18n import msg

pytestmark = pytest.mark.journey

SOLUTIONS = REPO / "solutions"


def fresh_venv(where: Path, label: str) -> dict[str, str]:
    """A new venv with torch in it; the environment of a shell that has it
    first on PATH (as an activated venv, or the runner's setup-python)."""
    done = shell(
        f"{system_python()} -m venv {where}", cwd=where.parent, env=base_env(), label=f"{label}: python -m venv"
    )
    assert done.returncode == 0, explain(done)
    done = shell(
        f"{where}/bin/pip install --quiet torch==2.13.0",
        cwd=where.parent,
        env=base_env(),
        label=f"{label}: pip install torch==2.13.0 (the CPU build on disk)",
    )
    assert done.returncode == 0, explain(done)
    return base_env(PATH=f"{where}/bin:{base_env()['PATH']}", VIRTUAL_ENV=str(where))


def unzip(archive: Path, dest: Path) -> None:
    """As Gradescope unpacks the bundle: the files with their modes."""
    with zipfile.ZipFile(archive) as opened:
        opened.extractall(dest)
        for info in opened.infolist():
            (dest / info.filename).chmod((info.external_attr >> 16) & 0o777)


# -- Gradescope ----------------------------------------------------------------------------


def test_gradescope_bundle_installs_from_the_zip_and_grades_uploads():
    skip_if_nested()
    work = shared_dir("journey-gradescope-")
    try:
        root = work / "autograder"
        source, upload, results = root / "source", root / "submission", root / "results" / "results.json"
        done = shell(
            f"{sys.executable} -m pytest_autograd_grader gradescope-bundle exercises -o {work}/autograder.zip",
            cwd=REPO,
            env=base_env(),
            label="gradescope: gradescope-bundle exercises",
        )
        assert done.returncode == 0, explain(done)
        unzip(work / "autograder.zip", source)
        assert (source / "requirements.txt").read_text().startswith("./wheels/pytest_autograd_grader-")
        env = fresh_venv(work / "venv", "gradescope")
        # setup.sh's own line for the grader, from the zip's folder as setup.sh runs it
        (line,) = [line for line in (source / "setup.sh").read_text().splitlines() if "-r requirements.txt" in line]
        done = shell(line, cwd=source, env=env, label=f"gradescope: {line}")
        assert done.returncode == 0, explain(done)
        env["AUTOGRADER_ROOT"] = str(root)

        def run_autograder(label: str) -> dict:
            results.unlink(missing_ok=True)
            done = shell(
                str(source / "run_autograder"), cwd=work, env=env, label=f"gradescope: run_autograder, {label}"
            )
            assert done.returncode == 0, explain(done)
            return json.loads(results.read_text())

        shutil.copytree(SOLUTIONS, upload)
        graded = run_autograder("the solutions")
        assert graded["extra_data"]["complete"] is True, graded["output"]
        assert graded["tests"] and all(t["status"] == "passed" for t in graded["tests"]), graded["output"]
        assert graded["score"] == sum(t["max_score"] for t in graded["tests"]) > 0

        # a broken upload still gets a valid results.json that says why
        shutil.rmtree(upload)
        upload.mkdir()
        empty = run_autograder("an empty upload")
        assert empty["score"] == 0 and empty["tests"], empty["output"]
        assert all(t["status"] == "failed" for t in empty["tests"])
        leaf = next(t for t in empty["tests"] if t["extra_data"]["id"].startswith("test_leaf.py::"))
        assert "there is no leaf.py in the submission" in leaf["output"], leaf["output"]

        (upload / "leaf.py").write_text("def find_leaves(:\n    pass\n")
        broken = run_autograder("an upload with a syntax error")
        assert broken["score"] == 0 and broken["tests"], broken["output"]
        leaf = next(t for t in broken["tests"] if t["extra_data"]["id"].startswith("test_leaf.py::"))
        assert "leaf.py has a syntax error at line 1" in leaf["output"], leaf["output"]
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- GitHub Classroom ----------------------------------------------------------------------


def _step(workflow: dict, name: str) -> str:
    (job,) = workflow["jobs"].values()
    return next(step["run"] for step in job["steps"] if step.get("name") == name)


def _classroom_result(output: Path) -> dict:
    (line,) = [line for line in output.read_text().splitlines() if line.startswith("result=")]
    return json.loads(base64.b64decode(line.removeprefix("result=")))


def test_github_classroom_course_installs_from_the_checks_repository_and_grades_a_push():
    yaml = pytest.importorskip("yaml")
    skip_if_nested()
    work = shared_dir("journey-github-")
    try:
        course, runner = work / "course", work / "runner"
        script = Path(sys.executable).parent / "autograd-grader"
        command = str(script) if script.exists() else f"{sys.executable} -m pytest_autograd_grader"
        done = shell(
            f"{command} github-classroom exercises -o {course}",
            cwd=REPO,
            env=base_env(),
            label="github: autograd-grader github-classroom exercises",
        )
        assert done.returncode == 0, explain(done)
        # the runner's workspace: the student's push and the checks repository, checked out
        shutil.copytree(course / "template", runner / "student")
        shutil.copytree(course / "checks", runner / "checks")
        student = runner / "student" / "exercises"
        shutil.copytree(SOLUTIONS, student, dirs_exist_ok=True)
        workflow = yaml.safe_load((runner / "student" / ".github" / "workflows" / "classroom.yml").read_text())
        env = fresh_venv(work / "venv", "github")
        done = shell(
            _step(workflow, "Install the grader from the checks repository"),
            cwd=runner,
            env=env,
            label="github: the workflow's 'Install the grader from the checks repository'",
        )
        assert done.returncode == 0, explain(done)
        summary, output = work / "step_summary.md", work / "github_output"
        env.update(
            GITHUB_ACTIONS="true",
            GITHUB_STEP_SUMMARY=str(summary),
            GITHUB_OUTPUT=str(output),
            GITHUB_WORKSPACE=str(runner),
        )

        def grade(label: str):
            summary.write_text("")
            output.write_text("")
            done = shell(
                _step(workflow, "Grade"), cwd=runner, env=env, label=f"github: the workflow's 'Grade', {label}"
            )
            return done, _classroom_result(output)

        done, result = grade("the solutions")
        assert done.returncode == 0, explain(done)
        assert result["status"] == "pass" and result["tests"], result
        assert sum(t["score"] for t in result["tests"]) == result["max_score"] > 0
        table = summary.read_text()
        assert "| **TOTAL** |" in table and "**100.0%**" in table, table

        # the untouched stubs: no points, a failed step, and still a result
        shutil.rmtree(student)
        shutil.copytree(course / "template" / "exercises", student)
        done, result = grade("the stubs")
        assert done.returncode != 0
        assert result["status"] == "fail" and sum(t["score"] for t in result["tests"]) == 0 < result["max_score"]

        # a check file in the checks repository edited after the manifest: its checks fail, saying so
        shutil.copytree(SOLUTIONS, student, dirs_exist_ok=True)
        edited = runner / "checks" / "test_leaf.py"
        edited.write_text(edited.read_text() + "\n# edited\n")
        done, result = grade("an edited check file")
        assert done.returncode != 0
        leaf = [t for t in result["tests"] if t["test_code"].startswith("test_leaf.py::")]
        others = [t for t in result["tests"] if not t["test_code"].startswith("test_leaf.py::")]
        assert leaf and all(t["status"] == "fail" and t["score"] == 0 for t in leaf), leaf
        expected = msg("manifest.edited", file="checks/test_leaf.py")
        assert all(expected in t["message"] for t in leaf), (expected, leaf[0]["message"])
        assert others and all(t["status"] == "pass" for t in others)
    finally:
        shutil.rmtree(work, ignore_errors=True)

"""What a plain self-check of .py files does not need is an extra: the
engine track's fuzzer (hypothesis, the ``engine`` extra) and watch mode
(watchdog, the ``watch`` extra). Without them, the checks and the command
that need them say which extra to install, and a missing one is never the
student's failure. A student installs them all at once with the
``student`` extra, which holds nothing else."""

from __future__ import annotations

import shutil
import sys

import tomllib
from conftest import EXERCISES, REPO, grade_checks

from pytest_autograd_grader.cli import main

ENGINE_INSTALL = "pip install 'pytest-autograd-grader[engine]'"
WATCH_INSTALL = "pip install 'pytest-autograd-grader[watch]'"


# A machine without ``package``: its imports fail. Installed from a
# conftest, after pytest's own import hook, which would otherwise find the
# package first (pytest marks a plugin's distribution for rewriting).
BLOCK_IMPORT = """
import importlib.abc
import sys


class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == {package!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, Missing())
"""


def _uninstall(monkeypatch, package: str) -> None:
    # taken out of sys.modules for the run (pytest reads its entries, so a
    # None entry would break pytest itself); the conftest refuses its import
    for name in [m for m in sys.modules if m == package or m.startswith(f"{package}.")]:
        monkeypatch.delitem(sys.modules, name)


def _requirement_names(requirements: list[str]) -> set[str]:
    return {r.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip().lower() for r in requirements}


def test_the_fuzzer_and_watch_mode_are_extras_every_test_install_still_has():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert not {"hypothesis", "watchdog"} & _requirement_names(project["dependencies"])
    assert _requirement_names(extras["engine"]) == {"hypothesis"}
    assert _requirement_names(extras["watch"]) == {"watchdog"}
    # the quick start and CI install [test]: they keep the engine track and watch mode
    assert {"hypothesis", "watchdog"} <= _requirement_names(extras["test"])
    assert (
        "-e '.[test]'" in (REPO / "README.md").read_text() and '-e ".[test,docs]"' in (REPO / ".ci" / "run").read_text()
    )


def test_a_student_installs_what_grading_the_shipped_course_needs_and_no_more():
    """One short install for a student: the engine track's fuzzer, watch
    mode and notebooks (what the shipped course's self-check can ask for),
    nothing of the class runner's, the tests' or the docs'."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    student = _requirement_names(extras["student"])
    assert student == {"hypothesis", "watchdog", "nbformat", "cloudpickle"}
    for needed in ("engine", "watch", "notebook"):
        assert _requirement_names(extras[needed]) <= student, needed
    assert not student & {"matplotlib", "selenium", "tqdm", "pyyaml", "kubernetes-validate", "mkdocs", "libcst"}
    # the README and the student guides give it, in both languages
    install = "pip install torch==2.13.0 -e '.[student]'"
    for page in ("README.md", "README.zh-CN.md", "docs/students/index.md", "docs/zh/students/index.md"):
        assert install in (REPO / page).read_text(encoding="utf-8"), page


def test_plain_pytest_in_the_root_is_the_course_and_the_suite_runs_with_its_path():
    """A student's plain `pytest` in the clone's root runs the exercises'
    checks; the contributors' command (README, CI) names tests/; the
    suite's markers still come from the root's configuration."""
    ini = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["testpaths"] == ["exercises"]
    assert any(marker.startswith("journey:") for marker in ini["markers"])
    command = "python -m pytest tests -n 2"
    assert command in (REPO / "README.md").read_text() and f"\n{command}\n" in (REPO / ".ci" / "run").read_text()
    assert "NO_MKDOCS_2_WARNING=1 python -m mkdocs build --strict" in (REPO / ".ci" / "run").read_text()


def test_without_hypothesis_the_engine_checks_are_errors_that_name_the_extra(pytester, monkeypatch):
    # the course's missing dependency: every engine check is `error` with what to install,
    # never the student's failure and never a traceback of the grader's
    _uninstall(monkeypatch, "hypothesis")
    pytester.makeconftest(BLOCK_IMPORT.format(package="hypothesis"))
    checks, student = pytester.path / "checks", pytester.path / "student"
    checks.mkdir()
    student.mkdir()
    shutil.copy(EXERCISES / "test_engine.py", checks)
    shutil.copy(REPO / "solutions" / "engine.py", student)
    from conftest import run_grader

    graded = run_grader(pytester, "checks", "--grade-submission=student", "--grade-seed", "7")
    engine = [c for c in graded.report["checks"] if "test_engine.py" in c["id"]]
    assert len(engine) == 7, graded.text[-2000:]
    for check in engine:
        assert check["status"] == "error" and check["score"] == 0, check
        assert "this check needs the grader's engine extra" in check["feedback"], check
        assert ENGINE_INSTALL in check["feedback"] and "Traceback" not in check["feedback"], check
    assert "Traceback" not in graded.text and ENGINE_INSTALL in graded.text


def test_an_unknown_kind_of_program_is_the_checks_error(pytester):
    checks = """
import pytest
from pytest_autograd_grader import fuzz_engine

pytestmark = pytest.mark.grade(concept="engine")


def test_fuzz(submission, grade_rng, grade_device):
    fuzz_engine(submission("engine", numpy_only=True), "opps", grade_rng, grade_device)
"""
    graded = grade_checks(pytester, checks, engine=(REPO / "solutions" / "engine.py").read_text())
    check = graded.check("test_fuzz")
    assert check["status"] == "error", check
    assert "'opps' is not a kind of program" in check["feedback"] and "vector_backward" in check["feedback"], check


def test_watch_without_watchdog_stops_and_names_the_extra(tmp_path, capsys, monkeypatch):
    shutil.copy(EXERCISES / "test_leaf.py", tmp_path)
    _uninstall(monkeypatch, "watchdog")
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))  # the finder goes with this copy
    exec(BLOCK_IMPORT.format(package="watchdog"), {})
    assert main(["watch", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("autograd-grader watch: ") and WATCH_INSTALL in err and "Traceback" not in err

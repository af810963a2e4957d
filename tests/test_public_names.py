"""What course files import: the names the package itself offers."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import grade_checks

import pytest_autograd_grader


def test_course_files_import_everything_from_the_package_without_torch():
    # the sandbox's worker imports the package before student code runs: a
    # numpy-only worker must not get torch with it
    code = textwrap.dedent("""
        import sys
        import pytest_autograd_grader as package
        from pytest_autograd_grader import ErrorRecord, TensorRecord, msg
        print("torch" in sys.modules, "numpy" in sys.modules)
        from pytest_autograd_grader import *
        imported = dir()
        print(sorted(n for n in package.__all__ if n not in imported))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["False False", "[]"], done.stdout


def test_an_unknown_name_says_so():
    try:
        _ = pytest_autograd_grader.no_such_name
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_importing_the_package_installs_no_import_finder():
    # the package answers only its own names: no finder on sys.meta_path
    # serves module names that were never released
    code = "import sys; before = list(sys.meta_path); import pytest_autograd_grader; print(sys.meta_path == before)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True", done.stdout


CHECKS_FROM_THE_PACKAGE = """
import pytest
import torch

from pytest_autograd_grader import Context, GradeFailure, TensorRecord, msg, same, values

pytestmark = pytest.mark.grade(concept="leaf")


def test_grad(submission, autograd):
    x = torch.tensor([1.0, 2.0])
    got = submission("leaf").grad_of_square(x)
    assert isinstance(got, TensorRecord)
    with autograd.hints(order=1):
        autograd.assert_grad(got, autograd.grad(lambda t: (t * t).sum(), [x])[0], "x.grad")
    if not same(values(got), torch.tensor([2.0, 4.0])):
        raise GradeFailure(msg("cmp.mismatch", what="x.grad"))
"""


def test_checks_importing_from_the_package_grade(pytester):
    right = (
        "import torch\ndef grad_of_square(x):\n    x = x.clone().requires_grad_(True)\n"
        "    (x * x).sum().backward()\n    return x.grad\n"
    )
    graded = grade_checks(pytester, CHECKS_FROM_THE_PACKAGE, leaf=right)
    assert graded.check("test_grad")["status"] == "passed", graded.report
    wrong = right.replace("(x * x)", "(x * x * 2)")
    graded = grade_checks(pytester, CHECKS_FROM_THE_PACKAGE, leaf=wrong)
    check = graded.check("test_grad")
    assert check["status"] == "failed" and "x.grad" in check["feedback"], check


def test_every_module_a_public_name_comes_from_is_type_checked_strictly():
    # "strict on the public API": a public name added from a module mypy
    # checks loosely would leave course authors' editors guessing its types
    from pathlib import Path

    import tomllib

    config = tomllib.loads((Path(pytest_autograd_grader.__file__).parent.parent / "pyproject.toml").read_text())
    strict = {
        module
        for override in config["tool"]["mypy"]["overrides"]
        if override.get("disallow_untyped_defs")
        for module in override["module"]
    }
    package = pytest_autograd_grader.__name__
    public = {f"{package}.{module}" for module in pytest_autograd_grader._PUBLIC.values()}
    # the fixtures and hooks a course uses are public too
    public |= {package, f"{package}.fixtures", f"{package}.hookspecs"}
    assert sorted(public - strict) == []

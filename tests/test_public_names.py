"""What course files import: the names the package itself offers, and the
module names of release 0.1 that checks already written still use."""

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
        pytest_autograd_grader.no_such_name
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_former_module_names_are_the_modules_that_hold_them_now():
    from pytest_autograd_grader import compare, diagnose, messages, records  # noqa: F401  (0.1 names)
    from pytest_autograd_grader.checking import compare as checking_compare
    from pytest_autograd_grader.checking import diagnose as checking_diagnose
    from pytest_autograd_grader.compare import same
    from pytest_autograd_grader.messages import msg

    assert compare is checking_compare and diagnose is checking_diagnose
    assert same is pytest_autograd_grader.same and msg is pytest_autograd_grader.msg
    assert records.TensorRecord is pytest_autograd_grader.TensorRecord
    assert messages.__name__ == "pytest_autograd_grader.i18n"


CHECKS_0_1 = """
import pytest
import torch

from pytest_autograd_grader import TensorRecord
from pytest_autograd_grader.compare import same, values
from pytest_autograd_grader.diagnose import Context
from pytest_autograd_grader.messages import msg
from pytest_autograd_grader.outcomes import GradeFailure

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


def test_checks_written_for_0_1_still_grade(pytester):
    right = "import torch\ndef grad_of_square(x):\n    x = x.clone().requires_grad_(True)\n" \
            "    (x * x).sum().backward()\n    return x.grad\n"
    graded = grade_checks(pytester, CHECKS_0_1, leaf=right)
    assert graded.check("test_grad")["status"] == "passed", graded.report
    wrong = right.replace("(x * x)", "(x * x * 2)")
    graded = grade_checks(pytester, CHECKS_0_1, leaf=wrong)
    check = graded.check("test_grad")
    assert check["status"] == "failed" and "x.grad" in check["feedback"], check

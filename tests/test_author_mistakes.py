"""An instructor's own numpy-only exercise, its checks-file helpers and its
expected values: what docs/authors/checks.md promises works in every
layout, and a mistake of the check's own (an argument that cannot be sent,
a helper the sandbox cannot rebuild, an expected value that is no number)
is the check's ``error`` with words for its author, never the student's
failure."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import QUIET_PLUGINS, grade_checks, run_grader

from pytest_autograd_grader.checking.compare import kind_of
from pytest_autograd_grader.i18n import msg

LAYERS = """
import sys

import numpy as np


def affine(x, w, b):
    return x @ w + b


def describe(values, *, scale=None):
    torch_importable = True
    try:
        import torch  # noqa: F401
    except ImportError:
        torch_importable = False
    seen = [[type(v).__name__, v.dtype.name, list(np.shape(v)), float(np.abs(v).sum()), v.dtype.isnative]
            for v in values]
    return {"seen": seen, "torch_loaded": "torch" in sys.modules, "torch_importable": torch_importable,
            "scale": [type(scale).__name__, float(scale)] if scale is not None else None}


def total(values):
    return float(np.sum(values))


def loss(x):
    return 1.5


def count(x):
    return 3


def label(x):
    return "not a number"
"""

ARRAYS = """
import numpy as np

ARRAYS = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array(2.5), np.zeros((0, 3)),
          np.array([True, False, True]), np.arange(-2, 2, dtype=np.int8), np.arange(3, dtype=np.uint16),
          np.array([1 + 2j, 3j]), np.arange(3, dtype=">f8"), np.complex64(1j)]


def described(values):
    return [[type(v).__name__, v.dtype.newbyteorder("=").name, list(np.shape(v)), float(np.abs(v).sum()), True]
            for v in values]
"""

NUMPY_CHECKS = (
    ARRAYS
    + """
import pytest

pytestmark = pytest.mark.grade(concept="engine")


def test_arrays_arrive_as_arrays(submission, autograd):
    layers = submission("layers", numpy_only=True)
    got = layers.describe(ARRAYS, scale=np.float32(0.5))
    autograd.assert_equal(got["seen"], described(ARRAYS), "what arrived")
    autograd.assert_equal(got["scale"], ["float", 0.5], "a numpy scalar arrives as a number")
    # numpy_only still means it: the student's code cannot reach torch
    autograd.assert_equal([got["torch_loaded"], got["torch_importable"]], [False, False], "torch")
    # a torch exercise is handed the same arrays
    autograd.assert_equal(submission("layers").describe(ARRAYS)["seen"], described(ARRAYS), "in a torch worker")


def test_affine(submission, autograd):
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), rng.normal(size=2)
    got = submission("layers", numpy_only=True).affine(x, w=w, b={"bias": b}["bias"])
    autograd.assert_close(got, x @ w + b, "affine")


def test_a_tensor_to_a_numpy_only_exercise(submission):
    import torch

    submission("layers", numpy_only=True).affine(np.ones((1, 1)), torch.ones(1, 1), np.zeros(1))
"""
)


def test_numpy_arrays_are_arguments_of_a_numpy_only_exercise(pytester):
    graded = grade_checks(pytester, NUMPY_CHECKS, layers=LAYERS)
    for name in ("test_arrays_arrive_as_arrays", "test_affine"):
        check = graded.check(name)
        assert check["status"] == "passed", check["feedback"]
    tensor = graded.check("test_a_tensor_to_a_numpy_only_exercise")
    assert tensor["status"] == "error" and tensor["score"] == 0
    assert tensor["feedback"] == msg(
        "check.argument",
        where=msg("check.where.positional", n=2),
        function="layers.affine",
        why=msg("check.argument.numpy_only"),
    )
    assert "--grade-memory" not in graded.text


HELPER_CHECKS = '''
import math

import numpy as np
import pytest

pytestmark = pytest.mark.grade(concept="engine")

SCALE = 2
NAMES = ("a", "b")


def doubled(module, values, factor=SCALE):
    return module.total(np.asarray(values)) * factor


def drive(module, values):
    """Uses its module's constants, a sibling helper, np and math."""
    return {name: round(math.sqrt(doubled(module, values)), 6) for name in NAMES}


def test_helper(submission, autograd):
    got = submission("layers", numpy_only=True).run(drive, [1.0, 3.0])
    autograd.assert_equal(got, {"a": round(math.sqrt(8.0), 6), "b": round(math.sqrt(8.0), 6)}, "drive")


def test_helper_with_an_array(submission, autograd):
    got = submission("layers", numpy_only=True).run(doubled, np.arange(4.0), 3)
    autograd.assert_equal(got, 18.0, "doubled")
'''


def _report(pytester, name: str) -> dict:
    return json.loads((pytester.path / name).read_text())


def test_a_checks_file_helper_works_the_same_in_every_layout(pytester):
    # checks kept apart from the student's folder (instructor CI, class runs)
    apart = grade_checks(pytester, HELPER_CHECKS, layers=LAYERS)
    # checks beside the student's file (a student's self-check)
    beside = pytester.mkdir("beside")
    (beside / "layers.py").write_text(textwrap.dedent(LAYERS))
    (beside / "test_beside.py").write_text(HELPER_CHECKS)
    result = pytester.runpytest("--grade", "--grade-json", "beside.json", *QUIET_PLUGINS, "--grade-seed", "7", "beside")
    beside_report = _report(pytester, "beside.json")
    for graded in (apart.report, beside_report):
        statuses = {check["id"].split("::")[-1]: (check["status"], check["feedback"]) for check in graded["checks"]}
        assert statuses == {"test_helper": ("passed", ""), "test_helper_with_an_array": ("passed", "")}, (
            result.stdout.str()
        )
    assert apart.report["score"] == beside_report["score"] == 2


BROKEN_HELPERS = """
import numpy as np
import pytest
import torch

pytestmark = pytest.mark.grade(concept="engine")


def uses_torch(module, values):
    return module.total(torch.tensor(values).numpy())


def imports_torch(module, values):
    import torch
    return module.total(values)


def misspelt(module, values):
    return module.total(np.asarray(valeus))


def test_torch_helper(submission):
    submission("layers", numpy_only=True).run(uses_torch, [1.0])


def test_torch_import_in_helper(submission):
    submission("layers", numpy_only=True).run(imports_torch, [1.0])


def test_undefined_name(submission):
    submission("layers", numpy_only=True).run(misspelt, [1.0])


def test_lambda(submission):
    submission("layers", numpy_only=True).run(lambda module: module.total([1.0]))


def test_torch_in_a_torch_exercise(submission, autograd):
    autograd.assert_equal(submission("layers").run(uses_torch, [1.0, 2.0]), 3.0, "total")
"""


def test_a_helper_the_sandbox_cannot_rebuild_is_the_checks_error(pytester):
    graded = grade_checks(pytester, BROKEN_HELPERS, layers=LAYERS)
    helper = msg("check.where.helper")
    expected = {
        "test_torch_helper": msg("check.helper.torch", name="uses_torch", what="torch"),
        "test_torch_import_in_helper": msg("check.helper.torch", name="imports_torch", what="torch"),
        "test_undefined_name": msg("check.helper.undefined", name="misspelt", used="valeus"),
        "test_lambda": msg("check.helper.top_level", name="test_lambda.<locals>.<lambda>"),
    }
    for name, why in expected.items():
        check = graded.check(name)
        assert check["status"] == "error", check
        assert check["feedback"] == msg("check.argument", where=helper, function="layers.run()", why=why), check
    assert graded.check("test_torch_in_a_torch_exercise")["status"] == "passed"
    assert "could not hand it" not in graded.text


EXPECTED_CHECKS = """
import numpy as np
import pytest

pytestmark = pytest.mark.grade(concept="engine")


@pytest.mark.parametrize("function, expected", [
    ("loss", 1.5), ("count", 3), ("loss", [1.5]), ("loss", np.float64(1.5)), ("loss", np.array(1.5)),
    ("loss", np.array([2.0])), ("loss", 2)], ids=["float", "int", "list", "npscalar", "0d", "wrong_array", "wrong_int"])
def test_expected(submission, autograd, function, expected):
    got = getattr(submission("layers", numpy_only=True), function)([1.0])
    autograd.assert_close(got, expected, "loss")


def test_expected_text(submission, autograd):
    autograd.assert_close(submission("layers", numpy_only=True).loss([1.0]), "1.5", "loss")


def test_expected_is_the_students_answer(submission, autograd):
    layers = submission("layers", numpy_only=True)
    autograd.assert_close(layers.loss([1.0]), layers.label([1.0]), "loss")


def test_expected_for_a_tensor_answer(submission, autograd):
    import torch

    got = submission("layers").affine(torch.ones(1, 2, dtype=torch.float32), torch.ones(2, 1), torch.zeros(1))
    autograd.assert_close(got, [[2.0]], "affine")
"""


def test_numbers_and_arrays_as_expected_and_an_unusable_one_is_the_checks_error(pytester):
    graded = grade_checks(pytester, EXPECTED_CHECKS, layers=LAYERS)
    for name in ("float", "int", "list", "npscalar", "0d"):
        assert graded.check(f"test_expected[{name}]")["status"] == "passed", graded.check(f"test_expected[{name}]")
    for name in ("wrong_array", "wrong_int"):  # a right form, a wrong value: the student's failure, told as one
        check = graded.check(f"test_expected[{name}]")
        assert check["status"] == "failed", check
        assert "numel" not in check["feedback"] and msg("cmp.mismatch", what="loss") in check["feedback"], check
    text = graded.check("test_expected_text")
    assert text["status"] == "error", text
    assert text["feedback"] == msg("check.expected", what="loss", type=kind_of("1.5")), text
    students = graded.check("test_expected_is_the_students_answer")
    assert students["status"] == "failed", students
    assert "does not have the form this check expects" in students["feedback"], students
    assert graded.check("test_expected_for_a_tensor_answer")["status"] == "passed"


PASSED_BACK = """
import numpy as np
import pytest

pytestmark = pytest.mark.grade(concept="engine")


def test_passes_back_a_students_object(submission, autograd):
    layers = submission("layers", numpy_only=True)
    layers.total(layers.label([1.0]))


def test_passes_a_set(submission, autograd):
    submission("layers", numpy_only=True).total({1.0, 2.0})


def test_passes_an_object_array(submission, autograd):
    submission("layers", numpy_only=True).total(np.array([object()]))
"""


def test_arguments_that_cannot_be_sent_are_named_and_blamed_on_whoever_made_them(pytester):
    graded = grade_checks(
        pytester, PASSED_BACK, layers=LAYERS.replace('return "not a number"', 'return {"label": object()}')
    )
    # the student's malformed answer, handed back: the student's failure
    back = graded.check("test_passes_back_a_students_object")
    assert back["status"] == "failed", back
    assert "does not have the form this check expects" in back["feedback"], back
    one = msg("check.where.positional", n=1)
    a_set = graded.check("test_passes_a_set")
    assert a_set["status"] == "error", a_set
    assert a_set["feedback"] == msg(
        "check.argument", where=one, function="layers.total", why=msg("check.argument.type", type="set")
    )
    objects = graded.check("test_passes_an_object_array")
    assert objects["status"] == "error", objects
    assert objects["feedback"] == msg(
        "check.argument", where=one, function="layers.total", why=msg("check.argument.dtype", dtype="object")
    )


@pytest.mark.parametrize("how", [(), ("-c", "exercises/pytest.ini")], ids=["found", "named"])
def test_the_courses_own_pytest_ini_beside_its_checks_is_not_refused(pytester, how):
    exercises = pytester.mkdir("exercises")
    (exercises / "pytest.ini").write_text("[pytest]\n")
    (exercises / "layers.py").write_text(textwrap.dedent(LAYERS))
    (exercises / "test_layers.py").write_text(HELPER_CHECKS)
    graded = run_grader(
        pytester, *how, "exercises", "--grade-submission=exercises", report=str(pytester.path / "report.json")
    )
    assert graded.result.ret == 0, graded.result.stderr.str()
    assert graded.report["score"] == 2


def test_blame_of_a_value_the_check_cannot_use_goes_to_whoever_made_it():
    from pytest_autograd_grader.boundary.blame import StudentValues, blame_student
    from pytest_autograd_grader.boundary.records import ObjectRecord
    from pytest_autograd_grader.outcomes import CheckValueError

    answer = ObjectRecord(type="Weird", repr="<Weird>")
    values = StudentValues()
    values.add([answer, 1.5])
    students = CheckValueError("for the author", answer, "loss: expected a tensor, got Weird")
    # the student's own text is never repeated
    assert blame_student(students, values) == msg(
        "blame.malformed", error="loss: expected a tensor, got " + msg("blame.redacted")
    )
    assert blame_student(CheckValueError("for the author", "1.5", "x"), values) is None
    assert blame_student(CheckValueError("for the author"), values) is None

"""The diagnoses a check gives are recorded in its report, whatever their
source (the grader's diag.* messages, a course's own ids, an author's plain
text), counted by id in the class report, and an author's ``diagnose=``
names every kind of wrong answer."""

from __future__ import annotations

import json
import subprocess
import textwrap

from conftest import class_command, grade_checks
from test_class_outputs import Page

from pytest_autograd_grader.checking.misconceptions import Context, diagnose_none

# A course's own catalogue, installed by its conftest: not the package's.
COURSE_CONFTEST = """
import pytest
from pytest_autograd_grader import i18n

COURSE = {
    "diag.hooks.scaled": "Likely mistake: the hook scales the gradient by {k}; return it unchanged.",
    "diag.hooks.inner": "the gradient the hook was given",
    "diag.hooks.outer": "Likely mistake: {inner} is dropped and a new one made.",
}


@pytest.fixture(autouse=True)
def course_messages():
    i18n.set_language(COURSE)
"""
SCALED = "Likely mistake: the hook scales the gradient by {k}; return it unchanged."
PLAIN = "Return the gradient from the hook: a hook that returns None keeps it."

CHECKS = f"""
import pytest
import torch
from pytest_autograd_grader import GradeFailure, msg, values

pytestmark = pytest.mark.grade(concept="leaf", points=1)
X = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)


def scaled(got):
    return msg("diag.hooks.scaled", k=round(float(values(got)[0]), 3))


def test_course_id(submission, autograd):
    got = submission("hooks").scale(X)
    autograd.assert_close(got, X, "scale(x)", diagnose=lambda: scaled(got))


def test_plain_hint(submission, autograd):
    autograd.assert_equal(submission("hooks").returns(), True, "returns()", hint={PLAIN!r})


def test_discarded(submission, autograd):
    got = submission("hooks").scale(X)
    try:
        autograd.assert_close(got, X, "scale(x)", diagnose=lambda: scaled(got))
    except GradeFailure:
        pass  # looked at, then judged on something else
    autograd.assert_equal(submission("hooks").returns(), True, "returns()")


def test_fragment(submission, autograd):
    got = submission("hooks").scale(X)
    autograd.fail_with("scale(x)", got, X, msg("diag.hooks.outer", inner=msg("diag.hooks.inner")))


@pytest.mark.grade(hidden=True)
def test_hidden(submission, autograd):
    got = submission("hooks").scale(X)
    autograd.assert_close(got, X, "scale(x)", diagnose=lambda: scaled(got))


def test_broken(submission, autograd):
    msg("diag.hooks.scaled", k=9)
    raise ValueError("the check's own bug")
"""

STUDENT = """
def scale(x):
    return x * 2

def returns():
    return None
"""


def test_each_check_records_the_diagnoses_its_feedback_gives(pytester):
    pytester.makeconftest(COURSE_CONFTEST)
    graded = grade_checks(pytester, CHECKS, "--grade-inline", "--grade-json-private=private.json", hooks=STUDENT)
    private = {
        c["id"].rpartition("::")[2]: c for c in json.loads((pytester.path / "private.json").read_text())["checks"]
    }
    scaled = SCALED.format(k=2.0)
    # a course's own diag.* id, recorded under its id
    assert graded.check("test_course_id")["diagnoses"] == [{"id": "diag.hooks.scaled", "text": scaled}]
    assert scaled in graded.check("test_course_id")["feedback"]
    # an author's plain text: its id is its text
    assert graded.check("test_plain_hint")["diagnoses"] == [{"id": PLAIN, "text": PLAIN}]
    # computed, then not in the feedback: not the student's
    assert graded.check("test_discarded")["diagnoses"] == []
    assert scaled not in graded.check("test_discarded")["feedback"]
    # a diagnosis formatted as a field of another is part of that one
    assert [d["id"] for d in graded.check("test_fragment")["diagnoses"]] == ["diag.hooks.outer"]
    # a hidden check's diagnoses are where its real feedback is: for instructors only
    assert graded.check("test_hidden")["diagnoses"] == [] and scaled not in graded.check("test_hidden")["feedback"]
    assert private["test_hidden"]["diagnoses"] == [{"id": "diag.hooks.scaled", "text": scaled}]
    # a broken check's text is no diagnosis of the student's
    assert graded.check("test_broken")["status"] == "error" and graded.check("test_broken")["diagnoses"] == []


AUTHOR = "Likely mistake: the forward-mode tangent is missing; return jvp's second value."

DIAGNOSE_CHECKS = f"""
import pytest
import torch

pytestmark = pytest.mark.grade(concept="leaf", points=1)
WANT = torch.ones(3, dtype=torch.float64)


@pytest.mark.parametrize("kind", ["none", "nan", "inf", "shape", "form", "dtype", "values"])
def test_answer(submission, autograd, kind):
    autograd.assert_grad(submission("tangents").answer(kind), WANT, "the tangent", diagnose=lambda: {AUTHOR!r})


def broken_diagnosis():
    return 1 / 0


def test_raising_diagnose(submission, autograd):
    autograd.assert_grad(submission("tangents").answer("none"), WANT, "the tangent", diagnose=broken_diagnosis)


def test_diagnose_that_gives_no_text(submission, autograd):
    autograd.assert_grad(submission("tangents").answer("values"), WANT, "the tangent", diagnose=lambda: 3)
"""

TANGENTS = """
import torch

def answer(kind):
    x = torch.ones(3, dtype=torch.float64)
    return {"none": None, "nan": x * float("nan"), "inf": x * float("inf"), "shape": torch.ones(2, dtype=torch.float64),
            "form": "ones", "dtype": x.float(), "values": x * 2}[kind]
"""


def test_the_authors_diagnosis_wins_for_every_kind_of_wrong_answer(pytester):
    graded = grade_checks(pytester, DIAGNOSE_CHECKS, "--grade-inline", tangents=TANGENTS)
    generic = diagnose_none(Context())
    for kind in ("none", "nan", "inf", "shape", "form", "dtype", "values"):
        check = graded.check(f"test_answer[{kind}]")
        assert check["status"] == "failed", (kind, check)
        assert AUTHOR in check["feedback"], (kind, check["feedback"])
        assert check["diagnoses"] == [{"id": AUTHOR, "text": AUTHOR}], kind
    # None: the author's text replaces the generic one about requires_grad
    assert generic not in graded.check("test_answer[none]")["feedback"]
    # the author's diagnose failing is the check's error, named for the author
    broken = graded.check("test_raising_diagnose")
    assert broken["status"] == "error" and broken["score"] == 0.0
    assert "broken_diagnosis" in broken["feedback"] and "ZeroDivisionError" in broken["feedback"], broken["feedback"]
    not_text = graded.check("test_diagnose_that_gives_no_text")
    assert not_text["status"] == "error" and "int" in not_text["feedback"], not_text["feedback"]


def test_a_class_report_counts_a_courses_diagnosis_by_its_students(tmp_path):
    checks, subs, out = tmp_path / "checks", tmp_path / "subs", tmp_path / "out"
    checks.mkdir()
    (checks / "conftest.py").write_text(COURSE_CONFTEST)
    (checks / "test_hooks.py").write_text(textwrap.dedent(CHECKS))
    (checks / "pytest.ini").write_text("[pytest]\n")
    for student, factor in (("ann", 2), ("ben", 3), ("cy", 1)):
        (subs / student).mkdir(parents=True)
        (subs / student / "hooks.py").write_text(
            STUDENT.replace("x * 2", f"x * {factor}").replace(
                "return None", "return True" if factor == 1 else "return None"
            )
        )
    done = subprocess.run(
        class_command(checks, subs, out, "-j", "1", "--timeout=10"),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    page = Page((out / "report.html").read_text(encoding="utf-8"))
    # ann and ben got it (each in a visible and a hidden check), with values
    # that differ; cy's answers are right
    assert "2 students: " + SCALED.format(k="…") in page.items, page.items
    assert "2 students: " + PLAIN in page.items, page.items


GENERIC_CHECKS = """
import pytest
import torch

pytestmark = pytest.mark.grade(concept="leaf", points=1)


def test_generic(submission, autograd):
    autograd.assert_grad(submission("tangents").answer("none"), torch.ones(3, dtype=torch.float64), "x.grad")
"""


def test_a_run_in_chinese_records_the_same_diagnosis_ids(pytester):
    from pytest_autograd_grader.i18n.zh import ZH

    english = grade_checks(pytester, GENERIC_CHECKS, "--grade-inline", tangents=TANGENTS).check("test_generic")
    chinese = grade_checks(pytester, GENERIC_CHECKS, "--grade-inline", "--grade-lang", "zh", tangents=TANGENTS).check(
        "test_generic"
    )
    (found,) = english["diagnoses"]
    assert found["id"].startswith("diag.") and found["text"] == diagnose_none(Context())
    assert chinese["diagnoses"] == [{"id": found["id"], "text": ZH[found["id"]]}]

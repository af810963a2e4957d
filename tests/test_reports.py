"""Report files: each written on its own, atomically, never through a link or
into a directory; a failure is named at the end of the summary, never a
traceback."""

from __future__ import annotations

import json
import os
import stat

import pytest
from conftest import QUIET_PLUGINS

from pytest_autograd_grader.reporters import ReportWriteError, write_json_atomic

# A check's own code runs in the pytest process: with --grade-inline it can
# stand in for anything that changes the report paths while grading runs.
REPORT_BECOMES_A_DIRECTORY = """
import os
import pytest

pytestmark = pytest.mark.grade(concept="leaf")

@pytest.mark.grade(points=2)
def test_right():
    pass

@pytest.mark.grade(points=3)
def test_wrong():
    assert False, "wrong answer"

def test_swaps_reports():
    for path in {paths!r}:
        os.remove(path)
        os.mkdir(path)
"""


def _grade(pytester, paths, *args):
    pytester.makepyfile(test_checks=REPORT_BECOMES_A_DIRECTORY.format(paths=paths))
    return pytester.runpytest(
        "--grade",
        "--grade-inline",
        "--grade-json",
        "report.json",
        "--grade-gradescope",
        "results.json",
        *QUIET_PLUGINS,
        *args,
    )


def test_a_report_that_became_a_directory_costs_only_itself(pytester):
    result = _grade(pytester, ["report.json"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the normal one: a check failed
    results = json.loads((pytester.path / "results.json").read_text())
    assert results["score"] == 3.0 and results["extra_data"]["complete"] is True
    assert [t["score"] for t in results["tests"]] == [2.0, 0.0, 1.0]
    assert (pytester.path / "report.json").is_dir() and not any((pytester.path / "report.json").iterdir())
    result.stdout.re_match_lines([r"TOTAL\s+3/6\s"])
    result.stdout.fnmatch_lines(
        [
            f"report written to {pytester.path / 'results.json'}",
            f"--grade-json: could not write {pytester.path / 'report.json'}: it is a directory",
        ]
    )
    assert f"report written to {pytester.path / 'report.json'}" not in result.stdout.str()
    # nothing was left behind half way
    assert sorted(p.name for p in pytester.path.iterdir() if p.name.endswith(".tmp")) == []


def test_both_reports_directories_still_print_the_table(pytester):
    result = _grade(pytester, ["report.json", "results.json"], "--grade-fail-under", "50")
    assert result.ret == pytest.ExitCode.OK  # 3 of 6 points
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text
    result.stdout.re_match_lines([r"Leaf tensors \(leaf\)\s+3/6\s", r"TOTAL\s+3/6\s"])
    # at the top of the grade section, one line each; the table and the gate below
    result.stdout.fnmatch_lines(
        [
            "*= grade =*",
            f"--grade-json: could not write {pytester.path / 'report.json'}: it is a directory",
            f"--grade-gradescope: could not write {pytester.path / 'results.json'}: it is a directory",
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(["TOTAL*", "total 50.0% is at or above the required 50.0%"], consecutive=True)


def test_a_report_that_comes_back_is_written_at_the_end(pytester):
    pytester.makepyfile(
        test_checks="""
        import os
        import pytest

        pytestmark = pytest.mark.grade(concept="leaf")

        def test_a_takes_the_path():
            os.remove("report.json")
            os.mkdir("report.json")

        def test_b_gives_it_back():
            os.rmdir("report.json")
    """
    )
    result = pytester.runpytest("--grade", "--grade-inline", "--grade-json", "report.json", *QUIET_PLUGINS)
    assert result.ret == 0
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["complete"] is True and report["score"] == 2.0
    assert "could not write" not in result.stdout.str()


# -- write_json_atomic on its own -------------------------------------------


def test_a_symlink_at_the_path_is_replaced_not_followed(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "report.json").symlink_to(outside)
    write_json_atomic(reports / "report.json", {"score": 1})
    assert not (reports / "report.json").is_symlink()
    assert json.loads((reports / "report.json").read_text()) == {"score": 1}
    assert outside.read_text() == "keep me"


def test_a_directory_at_the_path_is_left_alone(tmp_path):
    (tmp_path / "report.json").mkdir()
    (tmp_path / "report.json" / "inside").write_text("x")
    with pytest.raises(ReportWriteError, match="^it is a directory$"):
        write_json_atomic(tmp_path / "report.json", {})
    assert [p.name for p in (tmp_path / "report.json").iterdir()] == ["inside"]
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary file left


def test_a_missing_directory_is_named(tmp_path):
    with pytest.raises(ReportWriteError, match="the directory .*gone does not exist"):
        write_json_atomic(tmp_path / "gone" / "report.json", {})


def test_a_parent_swapped_mid_write_does_not_redirect_it(tmp_path, monkeypatch):
    reports, elsewhere = tmp_path / "reports", tmp_path / "elsewhere"
    reports.mkdir()
    elsewhere.mkdir()
    real_open = os.open

    def open_then_swap(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        if flags & os.O_DIRECTORY:  # the parent is open: swap it for a link
            reports.rename(tmp_path / "moved")
            reports.symlink_to(elsewhere)
        return fd

    monkeypatch.setattr(os, "open", open_then_swap)
    write_json_atomic(reports / "report.json", {"score": 1})
    assert json.loads((tmp_path / "moved" / "report.json").read_text()) == {"score": 1}
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize(
    "umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)], ids=["umask022", "umask027", "umask077"]
)
def test_the_file_mode_follows_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        write_json_atomic(tmp_path / "report.json", {})
        write_json_atomic(tmp_path / "report.json", {"again": True})  # a rewrite too
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "report.json").stat().st_mode) == mode


def test_junit_xml_carries_the_grade_properties(pytester):
    import xml.etree.ElementTree as ET

    from conftest import run_grader

    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="leaf", points=2)
        def test_right():
            pass

        @pytest.mark.grade(concept="graph", points=3)
        def test_wrong(autograd):
            autograd.assert_equal(1, 2, "x")
    """
    )
    for family in ("xunit2", "xunit1"):
        run_grader(pytester, "--junitxml", "junit.xml", "-o", f"junit_family={family}")
        cases = {
            case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
            for case in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
        }
        assert cases["test_right"] == {
            "grade_concept": "leaf",
            "grade_score": "2.0",
            "grade_max_score": "2.0",
            "grade_status": "passed",
        }, family
        assert cases["test_wrong"] == {
            "grade_concept": "graph",
            "grade_score": "0.0",
            "grade_max_score": "3.0",
            "grade_status": "failed",
        }, family


def test_hidden_reasons_reach_only_the_private_report(pytester):
    from conftest import grade_checks

    checks = """
        import pytest
        import torch

        @pytest.mark.grade(concept="graph", points=3, hidden="after_published")
        def test_secret(submission, autograd):
            autograd.assert_close(submission("graph").f(torch.tensor([0.123])), torch.tensor([3.0]), "f(0.123)")

        @pytest.mark.grade(concept="graph", points=1)
        def test_visible(submission, autograd):
            autograd.assert_close(submission("graph").f(torch.tensor([1.0])), torch.tensor([3.0]), "f(1)")
    """
    graded = grade_checks(
        pytester, checks, "--grade-json-private", "private.json", graph="def f(x):\n    return x * 2\n"
    )
    secret = graded.check("test_secret")
    assert secret["feedback"] == "A hidden check on 'Computational graphs' failed."
    assert "private_feedback" not in secret and secret["file"] is None and secret["line"] is None
    assert secret["visibility"] == "after_published" and secret["hidden"] is True
    assert "0.123" not in graded.text and "f(0.123)" not in json.dumps(graded.report)
    # the visible check points at the student's function
    visible = graded.check("test_visible")
    assert (visible["file"], visible["line"]) == ("graph.py", 1) and "f(1)" in visible["feedback"]
    private = {c["id"]: c for c in json.loads((pytester.path / "private.json").read_text())["checks"]}
    real = private["test_checks.py::test_secret"]
    assert real["file"] == "graph.py"
    assert real["feedback"] == secret["feedback"]
    assert real["private_feedback"].startswith("[Computational graphs] f(0.123): values differ")
    assert (real["file"], real["line"]) == ("graph.py", 1)
    graded.result.stdout.fnmatch_lines([f"report written to {pytester.path / 'private.json'}"])


def test_a_hidden_check_in_a_notebook_names_no_cell():
    # a notebook's place is a file, a cell and a line in it: a hidden check
    # left the cell in the student's report while it cleared the rest
    from pytest_autograd_grader.scoring import CheckResult

    check = CheckResult(
        id="test_checks.py::test_secret",
        concept="leaf",
        score=0.0,
        max_score=1.0,
        status="failed",
        hidden=True,
        file="leaf.ipynb",
        line=3,
        cell=7,
    )
    assert (check.public()["file"], check.public()["line"], check.public()["cell"]) == (None, None, None)
    assert (check.to_dict()["file"], check.to_dict()["line"], check.to_dict()["cell"]) == ("leaf.ipynb", 3, 7)

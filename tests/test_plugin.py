"""The plugin core as a user meets it: options, the grade marker, scores per
concept, statuses, partial credit, exit codes and the JSON report."""

from __future__ import annotations

import json

import pytest
from conftest import QUIET_PLUGINS, run_grader

CHECKS = """
import pytest
from pytest_autograd_grader.outcomes import StudentFailure

pytestmark = pytest.mark.grade(concept="leaf")

@pytest.mark.grade(points=2)
def test_right():
    pass

@pytest.mark.grade(points=3)
def test_wrong():
    assert 1 + 1 == 3, "the student's answer was 3"

@pytest.mark.grade(concept="graph", points=4)
def test_graph_right():
    pass

@pytest.mark.grade(concept="graph", points=1)
def test_broken_check():
    {}["missing"]

def test_hung():
    raise StudentFailure("leaf.find did not finish within 1 s", status="timeout")

def test_died():
    raise StudentFailure("the process running leaf.find died", status="crashed")

@pytest.mark.grade(points=5)
def test_skipped():
    pytest.skip("needs CUDA")
"""


def test_concept_table_total_and_statuses(pytester):
    pytester.makepyfile(test_checks=CHECKS)
    graded = run_grader(pytester)
    report = graded.report
    statuses = {c["id"].split("::")[1]: c["status"] for c in report["checks"]}
    assert statuses == {
        "test_right": "passed",
        "test_wrong": "failed",
        "test_graph_right": "passed",
        "test_broken_check": "error",
        "test_hung": "timeout",
        "test_died": "crashed",
        "test_skipped": "skipped",
    }
    # skipped checks are not graded: 2 + 3 + 4 + 1 + 1 + 1 points
    assert (report["score"], report["max_score"]) == (6.0, 12.0)
    assert report["percent"] == 50.0
    leaf = graded.concept("leaf")
    assert leaf == {"id": "leaf", "title": "Leaf tensors", "score": 2.0, "max_score": 7.0, "checks": 4, "passed": 1}
    assert graded.concept("graph")["score"] == 4.0
    graded.result.stdout.re_match_lines(
        [
            r"=+ grade =+",
            r"Computational graphs \(graph\)\s+4/5\s+1/2 passed\s+[#.]+\s+80\.0%",
            r"Leaf tensors \(leaf\)\s+2/7\s+1/4 passed\s+[#.]+\s+28\.6%",
            r"TOTAL\s+6/12\s+[#.]+\s+50\.0%",
        ]
    )
    # an instructor's broken check is named as such, with its cause
    graded.result.stdout.fnmatch_lines(["*1 check(s) are broken (status error)*", "*test_broken_check*KeyError*"])


def test_failed_check_shows_feedback_once_without_traceback(pytester):
    pytester.makepyfile(
        test_checks="""
        import pytest
        from pytest_autograd_grader.outcomes import GradeFailure

        @pytest.mark.grade(concept="leaf")
        def test_leaves():
            raise GradeFailure("is_leaf of w: expected True, got False")
    """
    )
    graded = run_grader(pytester)
    text = graded.text
    failures = text[text.index("= FAILURES =") : text.index("= grade =")]
    assert failures.count("[Leaf tensors] is_leaf of w: expected True, got False") == 1
    assert "raise GradeFailure" not in text
    assert graded.check("test_leaves")["feedback"] == "[Leaf tensors] is_leaf of w: expected True, got False"


def test_json_report_fields(pytester):
    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="leaf", points=2)
        def test_one(grade_device):
            '''Which tensors are leaves?

            More words.'''
    """
    )
    report = run_grader(pytester, "--grade-seed", "1234").report
    assert report["schema"] == "pytest-autograd-grader/1"
    assert report["complete"] is True
    assert report["seed"] == 1234 and report["devices"] == ["cpu"]
    assert report["torch"].startswith("2.")
    assert isinstance(report["duration_s"], float)
    assert set(report) >= {"score", "max_score", "percent", "concepts", "checks"}
    (check,) = report["checks"]
    assert check == {
        "id": "test_checks.py::test_one[cpu]",
        "concept": "leaf",
        "score": 2.0,
        "max_score": 2.0,
        "status": "passed",
        "feedback": "",
        "hidden": False,
        "device": "cpu",
        "duration_s": check["duration_s"],
        "topic": "checks",
        "title": "Which tensors are leaves? [cpu]",
        "file": None,
        "line": None,
        "cell": None,
        "visibility": "visible",
        "instruction": None,
        "inputs": None,
        "inputs_missing": None,
        "diagnoses": [],
    }
    assert check["duration_s"] >= 0


def test_a_title_that_wraps_in_the_docstring_is_kept_whole(pytester):
    pytester.makepyfile(
        test_checks='''
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_long():
            """A second backward through a freed graph raises PyTorch's
            error; retain_graph=True keeps it.

            Details that are not the title."""
    '''
    )
    (check,) = run_grader(pytester).report["checks"]
    assert (
        check["title"] == "A second backward through a freed graph raises PyTorch's error; retain_graph=True keeps it"
    )


def test_report_is_written_incomplete_at_start(pytester):
    pytester.makepyfile(
        test_checks="""
        import json, pathlib, pytest

        @pytest.mark.grade(concept="leaf")
        def test_sees_report():
            report = json.loads(pathlib.Path("report.json").read_text())
            assert report["complete"] is False and report["checks"] == []
    """
    )
    graded = run_grader(pytester)
    assert graded.check("test_sees_report")["status"] == "passed"
    assert graded.report["complete"] is True


def test_partial_credit_through_parts_and_credit(pytester):
    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="graph", points=4)
        def test_parts(autograd):
            with autograd.part(1):
                autograd.assert_equal(1, 1, "first")
            with autograd.part(3):
                autograd.assert_equal(2, 3, "second")

        @pytest.mark.grade(concept="graph", points=10)
        def test_credit(autograd):
            autograd.credit(0.3, "3 of 10 cases right")

        @pytest.mark.grade(concept="graph", points=2)
        def test_all_parts(autograd):
            with autograd.part():
                pass
            with autograd.part():
                pass
    """
    )
    graded = run_grader(pytester)
    parts = graded.check("test_parts")
    assert (parts["status"], parts["score"]) == ("failed", 1.0)
    assert "1 of 4 parts right" in parts["feedback"] and "second: expected 3, got 2" in parts["feedback"]
    credit = graded.check("test_credit")
    assert (credit["status"], credit["score"]) == ("failed", 3.0)
    assert "3 of 10 cases right" in credit["feedback"]
    assert graded.check("test_all_parts")["score"] == 2.0
    assert graded.report["score"] == 6.0


@pytest.mark.parametrize("threshold, expected", [("50", 0), ("50.1", 1), ("0", 0), ("100", 1)])
def test_fail_under_exit_codes(pytester, threshold, expected):
    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_right():
            pass

        @pytest.mark.grade(concept="leaf")
        def test_wrong():
            assert False
    """
    )
    graded = run_grader(pytester, "--grade-fail-under", threshold)
    assert graded.result.ret == expected
    graded.result.stdout.fnmatch_lines([f"*total 50.0% is {'at or above' if expected == 0 else 'below'} the required*"])


def test_without_fail_under_exit_status_is_pytests(pytester):
    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_wrong():
            assert False
    """
    )
    assert run_grader(pytester).result.ret == pytest.ExitCode.TESTS_FAILED


def test_options_read_from_ini(pytester):
    pytester.makeini("""
        [pytest]
        grade = true
        grade_seed = 77
        grade_json = ini-report.json
        grade_fail_under = 10
    """)
    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_right():
            pass
    """
    )
    result = pytester.runpytest(*QUIET_PLUGINS)
    assert result.ret == 0
    report = json.loads((pytester.path / "ini-report.json").read_text())
    assert report["seed"] == 77 and report["percent"] == 100.0
    result.stdout.fnmatch_lines(["grade: seed 77 *"])


@pytest.mark.parametrize(
    "marker, message",
    [
        (
            "@pytest.mark.grade(points=2)",
            "this check has no concept; add @pytest.mark.grade(concept=...) with one of: graph, leaf,",
        ),
        ("@pytest.mark.grade(concept='leaves')", "unknown concept 'leaves'; use one of: graph, leaf"),
        ("@pytest.mark.grade(concept='leaf', points=0)", "points must be a positive number, got 0"),
        ("@pytest.mark.grade(concept='leaf', points='2')", "points must be a positive number, got '2'"),
        ("", "this check has no concept"),
    ],
)
def test_bad_marker_is_an_error_naming_the_check(pytester, marker, message):
    pytester.makepyfile(
        test_checks=f"""
        import pytest

        {marker}
        def test_bad():
            pass

        @pytest.mark.grade(concept="leaf")
        def test_good():
            pass
    """
    )
    graded = run_grader(pytester)
    bad = graded.check("test_bad")
    assert bad["status"] == "error" and bad["score"] == 0
    assert bad["feedback"].startswith("test_checks.py::test_bad: ")
    assert message in bad["feedback"]
    assert graded.check("test_good")["status"] == "passed"
    graded.result.stdout.fnmatch_lines(["*check(s) are broken*", f"*test_bad*{message[:30]}*"])


def test_strict_markers_accept_grade(pytester):
    pytester.makepyfile(
        test_checks="""
        import pytest

        pytestmark = pytest.mark.grade(concept="leaf")

        def test_one():
            pass
    """
    )
    graded = run_grader(pytester, "--strict-markers")
    assert graded.result.ret == 0
    assert graded.check("test_one")["status"] == "passed"
    plain = pytester.runpytest("--strict-markers", *QUIET_PLUGINS)
    assert plain.ret == 0


def test_course_adds_concepts_adjusts_results_and_receives_gradebook(pytester):
    pytester.makeconftest("""
        from pytest_autograd_grader.concepts import Concept

        def pytest_grade_concepts(config):
            return [Concept("broadcasting", "Broadcasting rules", "shapes that stretch")]

        def pytest_grade_check_result(item, result):
            if item.name == "test_bonus":
                result.feedback = "bonus check"
            return result

        def pytest_grade_gradebook(config, gradebook):
            with open("gradebook.txt", "w") as f:
                f.write(f"{gradebook.score}/{gradebook.max_score}")
    """)
    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="broadcasting", points=2)
        def test_bonus():
            pass
    """
    )
    graded = run_grader(pytester)
    assert graded.concept("broadcasting")["title"] == "Broadcasting rules"
    assert graded.check("test_bonus")["feedback"] == "bonus check"
    assert (pytester.path / "gradebook.txt").read_text() == "2.0/2.0"
    assert (pytester.path / "report.json").exists()  # the default still ran


def test_syntax_error_in_a_checks_file_costs_only_that_file(pytester):
    pytester.makepyfile(
        test_broken="""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_x(:
            pass
    """,
        test_fine="""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_ok():
            pass
    """,
    )
    graded = run_grader(pytester)
    assert graded.check("test_ok")["status"] == "passed"
    broken = graded.checks["test_broken.py"]
    assert broken["status"] == "error"
    assert "could not load the checks in test_broken.py" in broken["feedback"]
    assert "(line 4: SyntaxError: invalid syntax)" in broken["feedback"]
    assert graded.report["complete"] is True
    assert graded.result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(
    "args, message",
    [
        (["--grade-submission", "nowhere"], "--grade-submission: the directory 'nowhere' does not exist"),
        (
            ["--grade-seed", "abc"],
            "--grade-seed: 'abc' is not a seed; use a whole number 0 or above, such as 1234, or 'random'",
        ),
        (
            ["--grade-seed=-5"],
            "--grade-seed: '-5' is not a seed; use a whole number 0 or above, such as 1234, or 'random'",
        ),
        (
            ["--grade-json", "missing/dir/report.json"],
            "--grade-json: cannot write 'missing/dir/report.json' because the directory",
        ),
        (["--grade-gradescope", "missing/results.json"], "--grade-gradescope: cannot write 'missing/results.json'"),
        (["--grade-fail-under", "lots"], "--grade-fail-under: 'lots' is not a percentage"),
        (["--grade-fail-under", "120"], "--grade-fail-under: '120' is not a percentage"),
        (["--grade-timeout", "0"], "--grade-timeout: '0' is not a number of seconds"),
        (["--grade-device", "tpu"], "--grade-device: 'tpu' is not a device"),
    ],
)
def test_usage_errors_before_grading(pytester, args, message):
    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_one():
            raise AssertionError("must not run")
    """
    )
    result = pytester.runpytest("--grade", *args, *QUIET_PLUGINS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert "must not run" not in result.stdout.str()


def test_unwritable_report_directory_is_a_usage_error(pytester):
    import os

    if os.geteuid() == 0:
        pytest.skip("root can write anywhere")
    locked = pytester.mkdir("locked")
    locked.chmod(0o500)
    result = pytester.runpytest("--grade", "--grade-json", "locked/report.json", *QUIET_PLUGINS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "is not writable" in result.stderr.str()


SEEDED = r"""
import pytest

pytestmark = pytest.mark.grade(concept="graph")

@pytest.mark.parametrize("n", [1, 2, 3])
def test_inputs(grade_rng, n):
    x = grade_rng.randn(4)
    with open("inputs.txt", "a") as f:
        f.write(f"{n} {x.tolist()} {grade_rng.randint(0, 10**9)}\n")
"""


def _graded_inputs(pytester, *args: str):
    """Run the seeded checks; return the report and each check's inputs."""
    log = pytester.path / "inputs.txt"
    log.unlink(missing_ok=True)
    graded = run_grader(pytester, *args)
    return graded, {line.split()[0]: line for line in log.read_text().splitlines()}


def test_seed_in_header_and_reuse_reproduces_inputs(pytester):
    pytester.makepyfile(test_seeded=SEEDED)
    first, inputs = _graded_inputs(pytester)
    seed = first.report["seed"]
    first.result.stdout.fnmatch_lines([f"grade: seed {seed} (reproduce with --grade-seed {seed}), device cpu, *"])
    assert len(inputs) == 3
    assert _graded_inputs(pytester, "--grade-seed", str(seed))[1] == inputs
    assert _graded_inputs(pytester, "--grade-seed", str(seed + 1))[1] != inputs
    # inputs depend on the check, not on which checks run or in what order
    _, alone = _graded_inputs(
        pytester, "--grade-seed", str(seed), "test_seeded.py::test_inputs[3]", "test_seeded.py::test_inputs[1]"
    )
    assert alone == {"1": inputs["1"], "3": inputs["3"]}


def test_random_seeds_differ_between_runs(pytester):
    pytester.makepyfile(test_seeded=SEEDED)
    seeds = {run_grader(pytester).report["seed"] for _ in range(3)}
    assert len(seeds) > 1


def test_plain_run_without_grade_scores_nothing(pytester):
    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_one(grade_rng):
            assert grade_rng.randn(2).shape == (2,)
    """
    )
    result = pytester.runpytest(*QUIET_PLUGINS)
    assert result.ret == 0
    assert "= grade =" not in result.stdout.str()
    assert not (pytester.path / "report.json").exists()


def test_run_stopped_early_leaves_an_incomplete_report(pytester):
    pytester.makepyfile(
        test_checks="""
        import pytest

        pytestmark = pytest.mark.grade(concept="leaf")

        def test_first():
            assert False

        def test_never_runs():
            pass
    """
    )
    graded = run_grader(pytester, "-x")
    assert graded.report["complete"] is False
    assert [c["id"] for c in graded.report["checks"]] == ["test_checks.py::test_first"]


def test_configuration_inside_the_submission_is_refused(pytester):
    student = pytester.mkdir("student")
    (student / "pytest.ini").write_text("[pytest]\naddopts = --grade-fail-under 0\n")
    pytester.mkdir("checks")
    (pytester.path / "checks" / "test_c.py").write_text(
        "import pytest\n\n@pytest.mark.grade(concept='leaf')\ndef test_c():\n    assert False\n"
    )
    result = pytester.runpytest("--grade", "--grade-submission", "student", "checks", *QUIET_PLUGINS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "inside the submission directory" in result.stderr.str()
    assert "--grade-submission=student (with '=')" in result.stderr.str()
    # with '=' pytest never looks there, and the run is graded normally
    ok = pytester.runpytest("--grade", "--grade-submission=student", "checks", *QUIET_PLUGINS)
    assert ok.ret == pytest.ExitCode.TESTS_FAILED


def test_inline_mode_must_be_typed(pytester):
    pytester.makeini("[pytest]\naddopts = --grade-inline\n")
    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_mode(request):
            from pytest_autograd_grader.session_state import STATE
            assert request.config.stash[STATE].settings.inline is False
    """
    )
    assert run_grader(pytester).check("test_mode")["status"] == "passed"


@pytest.mark.parametrize("test_paths", [["."], ["checks", "student/sub"], ["student/sub/test_s.py"]])
def test_a_submission_that_pytest_would_collect_is_refused(pytester, test_paths):
    pytester.mkdir("student")
    pytester.mkdir("student/sub")
    (pytester.path / "student" / "conftest.py").write_text("raise SystemExit('student code ran in the grader')\n")
    pytester.mkdir("checks")
    (pytester.path / "checks" / "test_c.py").write_text(
        "import pytest\n\n@pytest.mark.grade(concept='leaf')\ndef test_c():\n    pass\n"
    )
    result = pytester.runpytest("--grade", "--grade-submission=student", "--noconftest", *test_paths, *QUIET_PLUGINS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "so pytest would also collect the files in it" in result.stderr.str()
    assert "pytest --grade student for exercises whose checks sit beside them" in result.stderr.str()


@pytest.mark.parametrize("test_path", ["exercises", "exercises/test_e.py"])
def test_the_checks_own_directory_as_submission_is_the_default_written_out(pytester, test_path):
    # "pytest --grade exercises/test_leaf.py --grade-submission=exercises" was
    # refused as if the student's folder were collected: it is the default
    pytester.mkdir("exercises")
    (pytester.path / "exercises" / "e.py").write_text("def f():\n    return 1\n")
    (pytester.path / "exercises" / "test_e.py").write_text(
        "import pytest\n\n@pytest.mark.grade(concept='leaf')\ndef test_e(submission):\n"
        "    assert submission('e', numpy_only=True).f() == 1\n"
    )
    implicit = run_grader(pytester, test_path, report="implicit.json")
    explicit = run_grader(pytester, test_path, "--grade-submission=exercises", report="explicit.json")
    assert explicit.result.ret == implicit.result.ret == 0
    assert explicit.report["percent"] == implicit.report["percent"] == 100.0


def test_torch_is_out_of_the_garbage_collectors_way_before_the_checks_run(pytester):
    # pytest collects garbage several times at a session's end: with torch's
    # heap in the collections, a lone run took 0.8 s longer
    pytester.makepyfile(
        test_frozen="""
        import gc
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_torch_is_frozen():
            import torch

            function = torch.nn.Module.__init__
            assert not any(obj is function for obj in gc.get_objects())
    """
    )
    result = pytester.runpytest_subprocess("--grade", "--grade-inline", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()

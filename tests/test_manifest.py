"""The manifest of a course's check files: the command writes the hashes
and the checks, and grading with it fails every check of an edited or
missing check file (never importing it) and ignores added test files."""

from __future__ import annotations

import hashlib
import json
import textwrap

import pytest
from conftest import run_grader

from pytest_autograd_grader.cli import main
from pytest_autograd_grader.i18n import msg
from pytest_autograd_grader.platforms.manifest import file_hash

CONFTEST = """
import pytest

@pytest.fixture
def course_value():
    return 2
"""

# writes a marker beside checks/ when imported: proof the file ran
CHECKS_A = """
import pathlib
import pytest

pathlib.Path(__file__).resolve().parent.parent.joinpath("imported-test_a").write_text("ran")
pytestmark = pytest.mark.grade(concept="graph")

@pytest.mark.grade(points=2)
def test_passes(course_value):
    assert course_value == 2

@pytest.mark.grade(points=3)
def test_fails():
    assert False, "not yet"
"""

CHECKS_B = """
import pytest

pytestmark = pytest.mark.grade(concept="leaf")

@pytest.mark.parametrize("n", [1, 2])
def test_each(course_value, n):
    assert n <= course_value

@pytest.mark.grade(points=4, hidden=True)
def test_secret():
    assert False, "secret reason"
"""

STUDENT = "def answer():\n    return 42\n"


def make_course(pytester: pytest.Pytester) -> dict[str, str]:
    """checks/ as a course ships it: two check files (one in a subfolder),
    a conftest.py and a student's module beside the checks."""
    files = {"conftest.py": CONFTEST, "test_a.py": CHECKS_A, "more/test_b.py": CHECKS_B, "answer.py": STUDENT}
    for name, source in files.items():
        path = pytester.path / "checks" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return files


def write_manifest(pytester: pytest.Pytester, capsys) -> dict:
    assert main(["manifest", "checks", "-o", "m.json"]) == 0
    out = capsys.readouterr().out
    assert msg("manifest.written", path="m.json", files=3, checks=5) in out
    (pytester.path / "imported-test_a").unlink()  # listing the checks imports them
    return json.loads((pytester.path / "m.json").read_text())


def grade(pytester: pytest.Pytester, *args: str):
    return run_grader(pytester, "checks", "--grade-inline", "--grade-manifest", "m.json", *args)


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_manifest_lists_check_files_their_checks_and_conftest_not_the_students_module(pytester, capsys):
    make_course(pytester)
    manifest = write_manifest(pytester, capsys)
    assert manifest["schema"] == "pytest-autograd-grader-manifest/1"
    files = manifest["files"]
    assert sorted(files) == ["conftest.py", "more/test_b.py", "test_a.py"]  # not answer.py
    for name, entry in files.items():
        assert entry["sha256"] == sha256(pytester.path / "checks" / name)
    assert files["conftest.py"]["checks"] == []
    # a checkout with Windows line endings (git's autocrlf) still matches
    crlf = pytester.path / "crlf.py"
    crlf.write_bytes(CONFTEST.replace("\n", "\r\n").encode())
    assert file_hash(crlf) == files["conftest.py"]["sha256"] != sha256(crlf)
    summary = {c["id"]: (c["concept"], c["points"], c["hidden"]) for name in files for c in files[name]["checks"]}
    assert summary == {
        "test_a.py::test_passes": ("graph", 2.0, False),
        "test_a.py::test_fails": ("graph", 3.0, False),
        "more/test_b.py::test_each[1]": ("leaf", 1.0, False),
        "more/test_b.py::test_each[2]": ("leaf", 1.0, False),
        "more/test_b.py::test_secret": ("leaf", 4.0, True),
    }


def test_a_check_file_that_does_not_load_writes_no_manifest(pytester, capsys):
    make_course(pytester)
    (pytester.path / "checks" / "more" / "test_b.py").write_text("def test_x(:\n    pass\n")
    assert main(["manifest", "checks", "-o", "m.json"]) == 2
    err = capsys.readouterr().err
    assert "could not load the checks in more/test_b.py (line 1: SyntaxError" in err
    assert "No manifest was written" in err
    assert not (pytester.path / "m.json").exists()
    assert main(["manifest", "no-such-dir"]) == 2
    assert msg("manifest.not_dir", path="no-such-dir") in capsys.readouterr().err


def _scores(graded) -> dict[str, tuple]:
    return {c["id"].split("/")[-1]: (c["status"], c["score"], c["max_score"]) for c in graded.report["checks"]}


UNTOUCHED = {
    "test_a.py::test_passes": ("passed", 2.0, 2.0),
    "test_a.py::test_fails": ("failed", 0.0, 3.0),
    "test_b.py::test_each[1]": ("passed", 1.0, 1.0),
    "test_b.py::test_each[2]": ("passed", 1.0, 1.0),
    "test_b.py::test_secret": ("failed", 0.0, 4.0),
}
# test_a.py edited: both its checks fail with the manifest's points
EDITED_A = {**UNTOUCHED, "test_a.py::test_passes": ("failed", 0.0, 2.0)}


def edit_checks_a(pytester):
    """The student's way to steal points: the failing check passes, is
    worth more, and a new one is added; the edited file marks its import."""
    source = CHECKS_A.replace('assert False, "not yet"', "pass").replace("points=3", "points=30")
    source = source.replace('"imported-test_a"', '"imported-edited-test_a"')
    (pytester.path / "checks" / "test_a.py").write_text(textwrap.dedent(source) + "\ndef test_bonus():\n    pass\n")


def test_grading_with_the_manifest(pytester, capsys):
    make_course(pytester)
    write_manifest(pytester, capsys)

    untouched = grade(pytester)
    assert _scores(untouched) == UNTOUCHED
    assert untouched.report["max_score"] == 11.0 and untouched.report["score"] == 4.0
    assert (pytester.path / "imported-test_a").exists()  # the file runs when it is the course's

    # an edited check file, an added test file and an edited student module
    edit_checks_a(pytester)
    (pytester.path / "checks" / "test_free.py").write_text(
        "import pytest\n\n@pytest.mark.grade(concept='graph', points=100)\ndef test_free():\n    pass\n"
    )
    (pytester.path / "checks" / "answer.py").write_text("def answer():\n    return 0\n")
    # a new folder of the student's: pytest would load its conftest.py
    (pytester.path / "checks" / "free").mkdir()
    (pytester.path / "checks" / "free" / "conftest.py").write_text(
        "import pathlib\npathlib.Path(__file__).parent.parent.parent.joinpath('imported-free').write_text('ran')\n"
    )
    edited = grade(pytester)
    assert _scores(edited) == EDITED_A
    assert edited.report["max_score"] == 11.0 and edited.report["score"] == 2.0
    restore = msg("manifest.edited", file="checks/test_a.py")
    for name in ("test_passes", "test_fails"):
        assert restore in edited.check(f"test_a.py::{name}")["feedback"]
    assert not (pytester.path / "imported-edited-test_a").exists()  # never imported
    assert not (pytester.path / "imported-free").exists()
    assert edited.result.ret == pytest.ExitCode.TESTS_FAILED
    edited.result.stdout.fnmatch_lines([restore])
    # named on the command line, where pytest asks no pytest_ignore_collect
    named = run_grader(pytester, "checks/test_a.py", "--grade-inline", "--grade-manifest", "m.json")
    assert {k: v for k, v in _scores(named).items() if k.startswith("test_a")} == {
        k: v for k, v in EDITED_A.items() if k.startswith("test_a")
    }
    assert not (pytester.path / "imported-edited-test_a").exists()

    # a missing check file, and an edited conftest.py in the folder of the other
    (pytester.path / "checks" / "test_a.py").unlink()
    (pytester.path / "checks" / "more" / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef course_value():\n    return 99\n"
    )
    broken = grade(pytester)
    assert _scores(broken) == {name: ("failed", 0.0, points) for name, (_, _, points) in UNTOUCHED.items()}
    assert msg("manifest.missing", file="checks/test_a.py") in broken.check("test_a.py::test_fails")["feedback"]
    extra = msg("manifest.extra", file="checks/more/conftest.py")
    assert extra in broken.check("test_b.py::test_each[1]")["feedback"]
    hidden = broken.check("test_b.py::test_secret")
    assert hidden["hidden"] is True and extra in hidden["feedback"]


def test_a_malformed_manifest_is_a_usage_error(pytester, capsys):
    make_course(pytester)
    manifest = write_manifest(pytester, capsys)
    good = json.dumps(manifest)
    manifest["files"]["test_a.py"]["sha256"] = "not a hash"
    for text in ("{not json", json.dumps({"schema": "something else", "files": {}}), json.dumps(manifest)):
        (pytester.path / "m.json").write_text(text)
        result = grade(pytester)
        assert result.result.ret == pytest.ExitCode.USAGE_ERROR
        result.result.stderr.fnmatch_lines(
            [
                "*--grade-manifest: *m.json is not a manifest this grader can read*"
                "python -m pytest_autograd_grader manifest CHECKS_DIR*"
            ]
        )
    # a folder that is not the one the manifest was written for
    (pytester.path / "m.json").write_text(good)
    (pytester.path / "elsewhere").mkdir()
    result = run_grader(pytester, "elsewhere", "--grade-inline", "--grade-manifest", "m.json")
    assert result.result.ret == pytest.ExitCode.USAGE_ERROR
    result.result.stderr.fnmatch_lines(
        ["*none of the check files that *m.json lists (such as more/test_b.py) is in *elsewhere;*"]
    )


def test_xdist_grades_with_the_manifest_the_same(pytester, capsys):
    make_course(pytester)
    write_manifest(pytester, capsys)
    edit_checks_a(pytester)
    result = pytester.runpytest_subprocess(
        "checks",
        "--grade",
        "--grade-inline",
        "--grade-manifest",
        "m.json",
        "--grade-json",
        "r.json",
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
    )
    report = json.loads((pytester.path / "r.json").read_text())
    assert {c["id"].split("/")[-1]: (c["status"], c["score"], c["max_score"]) for c in report["checks"]} == EDITED_A
    assert report["max_score"] == 11.0 and result.ret == pytest.ExitCode.TESTS_FAILED
    assert not (pytester.path / "imported-edited-test_a").exists()  # not in a worker either


def test_listing_checks_leaves_the_callers_modules_as_they_were(tmp_path):
    # the checks' conftest.py is imported under the name "conftest", which
    # this suite's own conftest has: listing replaced it, and a later
    # `from conftest import ...` in the same process found the course's
    import conftest as ours

    from pytest_autograd_grader.platforms.manifest import build_manifest

    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "conftest.py").write_text("COURSE = True\n")
    (checks / "test_a.py").write_text("import pytest\n\n@pytest.mark.grade(concept='leaf')\ndef test_a():\n    pass\n")
    build_manifest(checks)
    import conftest

    assert conftest is ours and not hasattr(conftest, "COURSE")

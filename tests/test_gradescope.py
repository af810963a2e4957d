"""Gradescope as an instructor meets it: the results.json Gradescope reads,
and the autograder.zip from ``gradescope-bundle`` whose run_autograder runs
against a fake /autograder tree."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import stat
import subprocess
import sys
import textwrap
import zipfile
from importlib import resources
from pathlib import Path

from conftest import SHIPPED_CONCEPTS, grade_checks

from pytest_autograd_grader import __version__, cli
from pytest_autograd_grader.platforms.wheel import grader_wheel
from pytest_autograd_grader.reporters.gradescope import gradescope_results
from pytest_autograd_grader.scoring import CheckResult, Gradebook

# numpy_only: these students need no torch, and its workers start in a
# fraction of the time
CHECKS = '''
import pytest

@pytest.mark.grade(concept="leaf", points=1)
def test_leaf_visible(submission, autograd):
    """says which tensors are leaves"""
    autograd.assert_equal(submission("m", numpy_only=True).f(3), 3, "f")

@pytest.mark.grade(concept="graph", points=2)
def test_spins(submission):
    submission("m", numpy_only=True).spin()

@pytest.mark.grade(concept="graph", points=3, hidden=True)
def test_secret(submission, autograd):
    autograd.assert_equal(submission("m", numpy_only=True).f(4), 5, "f")

@pytest.mark.grade(concept="leaf", points=4, hidden="after_published")
def test_secret_passes(submission, autograd):
    autograd.assert_equal(submission("m", numpy_only=True).f(1), 1, "f")

@pytest.mark.grade(concept="graph", points=5)
def test_skipped():
    pytest.skip("no CUDA")
'''

STUDENT = """
def f(x):
    return x

def spin():
    while True:
        pass
"""


def _row(output: str, label: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(label))


def test_results_json_names_numbers_statuses_and_hidden_checks(pytester):
    graded = grade_checks(pytester, CHECKS, "--grade-timeout", "1", "--grade-gradescope", "results.json", m=STUDENT)
    results = json.loads((pytester.path / "results.json").read_text())
    tests = {t["name"]: t for t in results["tests"]}
    # grouped by concept in the table's order (graph before leaf), not the file's; skipped left out
    assert [(t["number"], t["name"]) for t in results["tests"]] == [
        ("1.1", "Computational graphs › spins"),
        ("1.2", "Computational graphs › secret"),
        ("2.1", "Leaf tensors › says which tensors are leaves"),
        ("2.2", "Leaf tensors › secret passes"),
    ]
    visible = tests["Leaf tensors › says which tensors are leaves"]
    assert visible == {
        "name": "Leaf tensors › says which tensors are leaves",
        "number": "2.1",
        "score": 1.0,
        "max_score": 1.0,
        "status": "passed",
        "output": "",
        "output_format": "text",
        "tags": ["leaf"],
        "visibility": "visible",
        "extra_data": {"grader_status": "passed", "id": "test_checks.py::test_leaf_visible", "device": None},
    }
    # the real status in words
    spins = tests["Computational graphs › spins"]
    assert (spins["status"], spins["score"], spins["extra_data"]["grader_status"]) == ("failed", 0.0, "timeout")
    assert spins["output"].startswith("Timed out: [Computational graphs] m.spin did not finish within 1 s")
    assert spins["visibility"] == "visible"
    # hidden checks: the real reason, shown as the marker allows
    secret = tests["Computational graphs › secret"]
    assert (secret["status"], secret["score"], secret["max_score"]) == ("failed", 0.0, 3.0)
    assert secret["visibility"] == "hidden"
    assert secret["output"] == "[Computational graphs] f: expected 5, got 4"
    passes = tests["Leaf tensors › secret passes"]
    assert (passes["status"], passes["score"], passes["visibility"]) == ("passed", 4.0, "after_published")
    # ... and nowhere a student looks before then
    assert (
        graded.checks["test_checks.py::test_secret"]["feedback"] == "A hidden check on 'Computational graphs' failed."
    )
    assert "expected 5, got 4" not in graded.text and "expected 5" not in json.dumps(graded.report)

    # the total counts every check (Gradescope hides it while a test is hidden);
    # the text students see at once counts visible checks only
    assert results["score"] == 5.0 == graded.report["score"]
    output = results["output"]
    assert re.fullmatch(
        r"Computational graphs \(graph\)\s+0/2\s+0/1 passed .*  0\.0%", _row(output, "Computational graphs")
    )
    assert re.fullmatch(r"Leaf tensors \(leaf\)\s+1/1\s+1/1 passed .*100\.0%", _row(output, "Leaf tensors"))
    assert re.fullmatch(r"TOTAL\s+1/3\s+.* 33\.3%", _row(output, "TOTAL"))
    # what Gradescope really does with each: one never shown, one shown once grades are published
    assert (
        "2 hidden check(s) are not counted above: 1 never shown to students, 1 shown once your instructor"
        " publishes the grades. While any check is hidden, Gradescope shows you no total score." in output.splitlines()
    )
    assert "/10" not in output and "5/" not in output
    assert (results["stdout_visibility"], results["visibility"], results["output_format"]) == (
        "hidden",
        "visible",
        "text",
    )
    assert results["extra_data"] == {
        "percent": 50.0,
        "seed": 7,
        "complete": True,
        "isolation": graded.report["isolation"],
    }
    assert results["execution_time"] > 0


def _gradebook(*checks: CheckResult, complete: bool = True) -> Gradebook:
    book = Gradebook(
        seed=3, devices=["cpu"], torch="2.13.0", concepts={c.id: c for c in SHIPPED_CONCEPTS}, isolation="bwrap"
    )
    for check in checks:
        book.checks[check.id] = check
    book.finish(complete=complete)
    return book


def test_results_json_from_a_gradebook_says_every_status_in_words():
    book = _gradebook(
        CheckResult(
            "t.py::test_c", "leaf", 0.0, 2.0, "crashed", "[Leaf tensors] the process died (SIGSEGV)", title="c"
        ),
        CheckResult("t.py::test_e", "leaf", 0.0, 1.0, "error", "NameError: name 'x' is not defined", title="e"),
        CheckResult(
            "t.py::test_h",
            "graph",
            0.5,
            2.0,
            "failed",
            "A hidden check on 'Computational graphs' failed.",
            hidden=True,
            visibility="after_due_date",
            title="h",
            private_feedback="[Computational graphs] dy/dw: expected 7, got 6",
        ),
        CheckResult("t.py::test_s", "graph", 0.0, 0.0, "skipped", "no CUDA", title="s"),
        CheckResult("broken.py", "", 0.0, 0.0, "error", "could not load the checks in broken.py"),
        complete=False,
    )
    results = gradescope_results(book)
    tests = {t["number"]: t for t in results["tests"]}
    assert sorted(tests) == ["1.1", "2.1", "2.2", "3.1"]
    assert tests["1.1"]["name"] == "Computational graphs › h"
    assert tests["1.1"]["output"] == "[Computational graphs] dy/dw: expected 7, got 6"
    assert (tests["1.1"]["visibility"], tests["1.1"]["score"]) == ("after_due_date", 0.5)
    assert tests["2.1"]["output"] == "Your code crashed the process: [Leaf tensors] the process died (SIGSEGV)"
    assert tests["2.2"]["output"].startswith("This check is broken (not your fault")
    assert tests["2.2"]["output"].endswith(": NameError: name 'x' is not defined")
    # a checks file that did not load: no concept, named by its id, last
    assert (tests["3.1"]["name"], tests["3.1"]["tags"]) == ("broken.py", [])
    output = results["output"].splitlines()
    assert output[0].startswith("Grading did not finish")
    assert results["extra_data"]["complete"] is False
    assert re.fullmatch(r"TOTAL\s+0/3 .*", _row(results["output"], "TOTAL"))
    assert results["score"] == 0.5


# -- the bundle ---------------------------------------------------------------------------


def _checks_dir(path: Path) -> Path:
    checks = path / "checks"
    (checks / "helpers").mkdir(parents=True)
    (checks / "test_one.py").write_text(CHECKS)
    (checks / "conftest.py").write_text("# the course's fixtures\n")
    (checks / "helpers" / "data.txt").write_text("1 2 3\n")
    # what tools leave beside the checks (caches, version control, a venv) is not shipped
    for junk in ("__pycache__", ".pytest_cache", ".git", ".hypothesis", ".ruff_cache", "venv", "node_modules"):
        (checks / junk).mkdir()
        (checks / junk / "x").write_text("junk")
    (checks / "test_one.pyc").write_text("junk")
    (checks / "secret_link.py").symlink_to("/etc/hostname")
    return checks


def _bundle(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(["gradescope-bundle", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_bundle_holds_scripts_and_checks(tmp_path, capsys):
    checks = _checks_dir(tmp_path)
    out = tmp_path / "autograder.zip"
    code, stdout, stderr = _bundle(capsys, str(checks), "-o", str(out), "--timeout", "3", "--seed", "11")
    assert code == 0, stderr
    archive = zipfile.ZipFile(out)
    modes = {i.filename: stat.S_IMODE(i.external_attr >> 16) for i in archive.infolist()}
    own_wheel = f"pytest_autograd_grader-{__version__}-py3-none-any.whl"
    assert modes == {
        "setup.sh": 0o755,
        "run_autograder": 0o755,
        "gradescope_run.py": 0o644,
        "layout.py": 0o644,
        "requirements.txt": 0o644,
        "bundle.json": 0o644,
        "checks/test_one.py": 0o644,
        "checks/conftest.py": 0o644,
        "checks/helpers/data.txt": 0o644,
        "checks/pytest.ini": 0o644,
        f"wheels/{own_wheel}": 0o644,
        "grade-manifest.json": 0o644,
    }
    assert archive.read("checks/pytest.ini") == b"[pytest]\n"
    # the grader is not on the package index: the zip carries the wheel of the grader that wrote it
    assert archive.read("requirements.txt").decode() == f"./wheels/{own_wheel}[notebook,engine]\n"
    shipped = zipfile.ZipFile(io.BytesIO(archive.read(f"wheels/{own_wheel}"))).namelist()
    assert "pytest_autograd_grader/plugin.py" in shipped and grader_wheel().name == own_wheel
    assert f"pytest_autograd_grader-{__version__}.dist-info/RECORD" in shipped
    options = json.loads(archive.read("bundle.json"))["grade_options"]
    assert options == [
        "--grade-lang",
        "en",
        "--grade-timeout",
        "3",
        "--grade-seed",
        "11",
        "--grade-manifest",
        "grade-manifest.json",
    ]
    setup = archive.read("setup.sh").decode()
    assert setup.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in setup
    assert "pip3 install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in setup
    assert re.search(r"apt-get install .*bubblewrap \|\| true", setup)
    # run_autograder's own fallback, for when python3 does not start, is valid JSON
    script = archive.read("run_autograder").decode()
    fallback = json.loads(script.split("<<'FALLBACK_RESULTS'\n")[1].split("\nFALLBACK_RESULTS\n")[0])
    assert fallback["score"] == 0.0 and "python3 did not start" in fallback["output"]
    # what was written, and what was left out
    assert f"wrote {out}" in stdout and "-rwxr-xr-x" in stdout and "checks/helpers/data.txt" in stdout
    assert "seed: 11 on every run" in stdout
    assert f"left out {checks / 'secret_link.py'}: it is a symbolic link" in stderr

    # setup.sh installs torch's CPU build before the grader, from the zip's own folder
    torch_line = setup.index("pip3 install --no-cache-dir torch==2.13.0")
    assert (
        setup.index('cd "$(dirname "$0")"')
        < torch_line
        < setup.index("pip3 install --no-cache-dir -r requirements.txt")
    )
    assert f"wheels/{own_wheel}" in stdout and "index" not in stderr

    # the instructor's own pytest.ini is kept; a wheel file travels in the zip, in place of the grader's own
    (checks / "pytest.ini").write_text("[pytest]\nmarkers = slow\n")
    wheel = tmp_path / "pytest_autograd_grader-9.9-py3-none-any.whl"
    wheel.write_bytes(b"PK")
    code, stdout, stderr = _bundle(capsys, str(checks), "-o", str(out), "--grader-requirement", str(wheel))
    assert code == 0, stderr
    archive = zipfile.ZipFile(out)
    assert archive.read("checks/pytest.ini") == b"[pytest]\nmarkers = slow\n"
    assert archive.read(f"wheels/{wheel.name}") == b"PK"
    assert [n for n in archive.namelist() if n.startswith("wheels/")] == [f"wheels/{wheel.name}"]
    assert archive.read("requirements.txt").decode() == f"./wheels/{wheel.name}[notebook,engine]\n"
    assert json.loads(archive.read("bundle.json"))["grade_options"] == [
        "--grade-lang",
        "en",
        "--grade-manifest",
        "grade-manifest.json",
    ]
    assert "seed: random on every run" in stdout


def test_bundle_warns_that_a_package_name_comes_from_the_index(tmp_path, capsys):
    checks = _checks_dir(tmp_path)
    out = tmp_path / "autograder.zip"
    for spec in ("pytest-autograd-grader==0.1.0", "pytest-autograd-grader"):
        code, stdout, stderr = _bundle(capsys, str(checks), "-o", str(out), "--grader-requirement", spec)
        assert code == 0, stderr
        archive = zipfile.ZipFile(out)
        assert archive.read("requirements.txt").decode() == f"{spec}\n"
        assert not [n for n in archive.namelist() if n.startswith("wheels/")]
        assert (
            f"setup.sh will fetch {spec!r} from the package index (PyPI), where pytest-autograd-grader is "
            "not published yet" in stderr
        )
        assert "leave out --grader-requirement to ship this grader's own wheel" in stderr
    # a URL is fetched from where it points: written as is, without a warning
    url = "git+https://github.com/OWNER/pytest-autograd-grader@v0.1.0"
    for spec in (url, f"pytest-autograd-grader @ {url}"):
        code, stdout, stderr = _bundle(capsys, str(checks), "-o", str(out), "--grader-requirement", spec)
        assert code == 0 and "package index" not in stderr, stderr
        assert zipfile.ZipFile(out).read("requirements.txt").decode() == f"{spec}\n"


def test_bundle_refuses_what_it_cannot_ship(tmp_path, capsys, monkeypatch):
    checks = _checks_dir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "helper.py").write_text("")
    refusals = [
        ((str(tmp_path / "nowhere"),), "is not a directory; pass the directory that holds your checks"),
        ((str(tmp_path / "empty"),), "holds no test_*.py or *_test.py file"),
        ((str(checks), "-o", str(checks / "autograder.zip")), "lies inside the checks directory"),
        ((str(checks), "-o", str(tmp_path / "no" / "a.zip")), "does not exist; create it or choose another path"),
        ((str(checks), "--seed", "abc"), "--seed 'abc' is not a seed"),
        ((str(checks), "--timeout", "-1"), "--timeout '-1' is not a number of seconds"),
        ((str(checks), "--grader-requirement", str(tmp_path)), "build a wheel from it (pip wheel --no-deps"),
        ((str(checks), "--grader-requirement", str(tmp_path / "gone.whl")), "looks like a file, but there is none"),
    ]
    monkeypatch.chdir(tmp_path)  # where a zip without -o would go
    for args, message in refusals:
        code, stdout, stderr = _bundle(capsys, *args)
        assert (code, stdout) == (2, ""), (args, stdout, stderr)
        assert message in stderr and "Traceback" not in stderr, (args, stderr)
    assert not list(tmp_path.rglob("*.zip"))


# -- run_autograder ---------------------------------------------------------------------


def _gradescope_run():
    path = resources.files("pytest_autograd_grader.platforms").joinpath("gradescope_files", "gradescope_run.py")
    spec = importlib.util.spec_from_file_location("gradescope_run", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_run_autograder_finds_the_modules_of_every_upload_layout(tmp_path):
    find = _gradescope_run().find_modules

    def upload(name: str, *files: str) -> Path:
        root = tmp_path / name
        for file in files:
            (root / file).parent.mkdir(parents=True, exist_ok=True)
            (root / file).write_text("")
        root.mkdir(exist_ok=True)
        return root

    repo = upload("repo", "exercises/leaf.py", "exercises/test_leaf.py", "README.md", "conftest.py")
    assert find(repo) == repo / "exercises"
    flat = upload("flat", "leaf.py", "graph.py")
    assert find(flat) == flat
    folder = upload("folder", "hw3/leaf.py", "__MACOSX/._leaf.py")
    assert find(folder) == folder / "hw3"
    zipped_repo = upload("zipped_repo", "autograd-main/exercises/leaf.py", "autograd-main/README.md")
    assert find(zipped_repo) == zipped_repo / "autograd-main" / "exercises"
    two = upload("two", "a/leaf.py", "b/leaf.py")
    assert find(two) == two
    # a link could point the grader at its own checks: never followed
    linked = upload("linked", "elsewhere.txt")
    (linked / "exercises").symlink_to(tmp_path / "repo" / "exercises")
    assert find(linked) == linked


def test_run_autograder_keeps_partial_scores_and_explains(tmp_path):
    finish = _gradescope_run().finish_results
    path = tmp_path / "results.json"
    complete = {"score": 3.0, "output": "table", "tests": [], "extra_data": {"complete": True}}
    path.write_text(json.dumps(complete))
    assert finish(path, 1, {}) == complete
    path.write_text(
        json.dumps(
            {
                "score": 2.0,
                "output": "table",
                "tests": [{"score": 2.0, "name": "a"}],
                "extra_data": {"complete": False, "seed": 4},
            }
        )
    )
    partial = finish(path, -9, {})
    assert partial["score"] == 2.0 and partial["tests"] == [{"score": 2.0, "name": "a"}]
    assert partial["output"].startswith(
        "The autograder could not finish grading your submission: the grader "
        "stopped (exit status -9) before every check had run"
    )
    assert partial["output"].endswith("contact your instructor, who can see the autograder's log.\n\ntable")
    assert partial["extra_data"] == {"complete": False, "seed": 4, "grader_exit_code": -9}
    path.write_text('{"score": 1.0, "tests": [')
    broken = finish(path, 0, {})
    assert broken["score"] == 0 and "results file could not be read (exit status 0)" in broken["output"]


HOSTILE_CONFTEST = """
import json, os
def pytest_configure(config):
    root = os.environ["AUTOGRADER_ROOT"]
    open(os.path.join(root, "STUDENT_CONFTEST_RAN"), "w").close()
    with open(os.path.join(root, "results", "results.json"), "w") as f:
        json.dump({"score": 99, "output": "all checks passed"}, f)
    os._exit(0)
"""


def test_run_autograder_in_a_fake_autograder_root(tmp_path, capsys):
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "test_m.py").write_text(
        textwrap.dedent("""
        import pytest

        @pytest.mark.grade(concept="leaf", points=2)
        def test_f(submission, autograd):
            autograd.assert_equal(submission("m", numpy_only=True).f(3), 3, "f")

        @pytest.mark.grade(concept="graph", points=1, hidden=True)
        def test_secret(submission, autograd):
            autograd.assert_equal(submission("m", numpy_only=True).f(4), 5, "f")
    """)
    )
    assert cli.main(["gradescope-bundle", str(checks), "-o", str(tmp_path / "autograder.zip")]) == 0
    capsys.readouterr()
    root = tmp_path / "autograder"
    source = root / "source"
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        archive.extractall(source)
        for info in archive.infolist():  # as unzip does
            os.chmod(source / info.filename, stat.S_IMODE(info.external_attr >> 16))
    # a repository upload, with files that try to take over the grading
    upload = root / "submission"
    (upload / "exercises").mkdir(parents=True)
    (upload / "exercises" / "m.py").write_text("def f(x):\n    return x\n")
    for place in (upload, upload / "exercises"):
        (place / "conftest.py").write_text(HOSTILE_CONFTEST)
        (place / "pytest.ini").write_text("[pytest]\naddopts = -p no:grade\n")
    # `python3` is this interpreter (a script, so sys.executable is the real one)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python3 = bin_dir / "python3"
    python3.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python3.chmod(0o755)
    env = {
        **os.environ,
        "AUTOGRADER_ROOT": str(root),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        # plugins that cost seconds at start-up and matter to no grading
        "PYTEST_ADDOPTS": "-p no:hypothesispytest -p no:benchmark -p no:unraisableexception",
    }
    results = root / "results" / "results.json"

    def run_autograder() -> dict:
        done = subprocess.run(
            [str(source / "run_autograder")], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(results.read_text())

    graded = run_autograder()
    assert not (root / "STUDENT_CONFTEST_RAN").exists()
    assert graded["score"] == 2.0 and graded["extra_data"]["complete"] is True, graded
    assert [(t["name"], t["status"], t["visibility"]) for t in graded["tests"]] == [
        ("Computational graphs › secret", "failed", "hidden"),
        ("Leaf tensors › f", "passed", "visible"),
    ]
    assert graded["tests"][0]["output"] == "[Computational graphs] f: expected 5, got 4"

    # checks that do not even load still leave a results file that says so
    (source / "checks" / "pytest.ini").write_text("[pytest]\naddopts = --no-such-option\n")
    broken = run_autograder()
    assert broken["score"] == 0 and broken["tests"] == []
    assert broken["output"].startswith(
        "The autograder could not finish grading your submission: the grader "
        "stopped (exit status 4) without writing any results."
    )
    assert "contact your instructor" in broken["output"]

    # so does a python3 that does not start
    python3.write_text("#!/bin/sh\nexit 127\n")
    assert run_autograder() == {
        "score": 0.0,
        "output": "The autograder could not finish grading your submission: python3 did not start. "
        "This is most likely not a problem in your code: contact your instructor, who can see the autograder's "
        "log.",
        "output_format": "text",
        "stdout_visibility": "hidden",
        "tests": [],
        "extra_data": {"complete": False},
    }

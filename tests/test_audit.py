"""``autograd-grader audit`` on a tiny course (templates/course, copied):
what the author sees, exit codes, the JSON document and the printed
table, for a sound course and for each way it can fail."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_autograd_grader import cli

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "templates" / "course"
SOLUTION = (COURSE / "solutions" / "hooks.py").read_text()
# s can be exactly 1 (on seed 2), where -g and -s*g are the same answer: the hole
WEAK_S = "s = 0.5 + grade_rng.randint(1, 8) / 4"
# an equivalent mutant: "+ 0 * s" flipped to "- 0 * s" changes nothing
EQUIVALENT = SOLUTION.replace("return x.grad", "return x.grad + 0 * s")


@pytest.fixture
def course(tmp_path: Path) -> Path:
    shutil.copytree(COURSE, tmp_path / "course")
    return tmp_path / "course"


def audit(course: Path, *args: str) -> tuple[int, str, dict]:
    """The command as an author types it: exit code, what it printed, the JSON."""
    report = course.parent / "audit.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_autograd_grader",
            "audit",
            str(course / "exercises"),
            "--solutions",
            str(course / "solutions"),
            "--json",
            str(report),
            "-j",
            "2",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    document = json.loads(report.read_text()) if report.is_file() else {}
    return done.returncode, done.stdout + done.stderr, document


def plant(course: Path, name: str, source: str) -> None:
    (course / "mistakes" / "hooks" / f"{name}.py").write_text(source)


def test_a_sound_course_passes_with_its_mistake_killed_and_named(course):
    checks = course / "exercises" / "test_hooks.py"
    source = checks.read_text()
    # a second check: a mutant's run stops at its first failing check, a planted mistake's runs them all
    second = source[source.index("@pytest.mark.grade(points=2") :].replace(
        "def test_reversed_grad(", "def test_reversed_grad_again("
    )
    checks.write_text(source + "\n\n" + second)
    code, printed, document = audit(course, "--seeds", "2", "--html", str(course.parent / "audit.html"))
    assert code == 0, printed
    assert document["schema"] == "pytest-autograd-grader/audit-1" and document["passed"] is True
    assert document["baseline"]["solutions"] == {"ok": True, "percent": {"1": 100.0, "2": 100.0}, "failed_checks": []}
    assert document["baseline"]["stubs"]["ok"] and document["baseline"]["stubs"]["unexpected"] == []
    (mistake,) = document["mistakes"]
    assert (mistake["name"], mistake["status"], mistake["expected"]) == ("unscaled", "killed", ["diag.hooks.unscaled"])
    assert mistake["what"] == "The hook negates the gradient but forgets the factor s."
    first, again = "test_hooks.py::test_reversed_grad[cpu]", "test_hooks.py::test_reversed_grad_again[cpu]"
    assert mistake["checks_failed"] == [first, again]
    assert len(document["mutants"]) == 9 and {m["status"] for m in document["mutants"]} == {"killed"}
    (mutant,) = [m for m in document["mutants"] if m["operator"] == "drop_minus"]  # -s*g with its minus dropped
    assert mutant["checks_failed"] == [first]  # stopped there
    assert document["score"]["percent"] == 100.0
    assert document["checks"] == [
        {"check": first, "topic": "hooks", "mistakes_killed": 1, "mutants_killed": 9, "survivors_passed": 0},
        {"check": again, "topic": "hooks", "mistakes_killed": 1, "mutants_killed": 0, "survivors_passed": 0},
    ]
    assert "test_hooks.py::test_reversed_grad[cpu]" in printed and "audit passed" in printed
    assert (course.parent / "audit.html").is_file()


def test_a_mistake_that_passes_on_some_seeds_fails_the_audit_with_those_seeds(course):
    checks = course / "exercises" / "test_hooks.py"
    checks.write_text(checks.read_text().replace("s = 1.5 + grade_rng.randint(0, 6) / 4", WEAK_S))
    code, printed, document = audit(course, "--seeds", "3", "--no-mutants")
    assert code == 1, printed
    (mistake,) = document["mistakes"]
    assert (mistake["status"], mistake["seeds_passed"]) == ("survived", [2])
    assert mistake["checks_passed"] == ["test_hooks.py::test_reversed_grad[cpu]"]
    assert (document["checks"][0]["mistakes_killed"], document["checks"][0]["survivors_passed"]) == (0, 1)
    assert "hooks/unscaled" in printed and "full marks on seeds 2" in printed and "audit failed" in printed


def test_unnamed_unparsable_and_hanging_mistakes_each_get_their_verdict(course):
    plant(
        course,
        "misnamed",
        SOLUTION.replace("-s * g", "s * g").replace(
            '"""Reference solution of the gradient hooks topic."""',
            '"""Forgets the sign.\n\nexpected diagnosis: diag.hooks.unscaled\ncheck: test_reversed_grad\n"""',
        ),
    )
    plant(course, "broken", '"""Does not parse."""\ndef reversed_grad(x, s:\n')
    plant(course, "hangs", SOLUTION.replace("x.register_hook", "while True: pass\n    x.register_hook"))
    code, printed, document = audit(course, "--seeds", "2", "--no-mutants", "--timeout", "2")
    assert code == 1, printed
    verdicts = {m["name"]: m for m in document["mistakes"]}
    assert verdicts["unscaled"]["status"] == "killed"
    assert (verdicts["misnamed"]["status"], verdicts["misnamed"]["seeds_unnamed"]) == ("unnamed", [1, 2])
    assert verdicts["broken"]["status"] == "error" and "does not parse (line 2" in verdicts["broken"]["error"]
    assert verdicts["hangs"]["status"] == "killed"  # the check's time limit stopped it, no one else
    assert "Traceback" not in printed
    assert "hooks/misnamed was not named diag.hooks.unscaled on seeds 1, 2" in printed


def test_a_survivor_is_shown_as_a_diff_until_accepted_with_a_reason(course):
    (course / "solutions" / "hooks.py").write_text(EQUIVALENT)
    code, printed, document = audit(course, "--seeds", "2", "--fail-under", "90")
    assert code == 1, printed
    survivors = [m for m in document["mutants"] if m["status"] == "survived"]
    assert sorted(m["operator"] for m in survivors) == ["drop_term", "swap_sign"]
    for survivor in survivors:
        assert survivor["seeds_passed"] == [1, 2]
        assert survivor["checks_passed"] == ["test_hooks.py::test_reversed_grad[cpu]"]
    assert document["score"]["survived"] == 2 and document["score"]["percent"] < 90
    assert "    -    return x.grad + 0 * s\n    +    return x.grad - 0 * s" in printed
    assert "under --fail-under 90 %" in printed

    (course / "mistakes" / "accepted.toml").write_text(
        "".join(f'[[survivor]]\nid = "{m["id"]}"\nreason = "adding or taking 0 is the same"\n\n' for m in survivors)
        + '[[survivor]]\nid = "hooks.reversed_grad:drop_minus:00000000"\nreason = "was there once"\n'
    )
    code, printed, document = audit(course, "--seeds", "2", "--fail-under", "90")
    assert code == 0, printed
    for survivor in survivors:
        accepted = next(m for m in document["mutants"] if m["id"] == survivor["id"])
        assert (accepted["status"], accepted["reason"]) == ("accepted", "adding or taking 0 is the same")
    score = document["score"]
    assert (score["survived"], score["accepted"], score["errors"], score["percent"]) == (0, 2, 0, 100.0)
    assert "hooks.reversed_grad:drop_minus:00000000 is no mutant any more" in printed


def test_a_broken_solution_is_a_baseline_problem(course):
    (course / "solutions" / "hooks.py").write_text(SOLUTION.replace("-s * g", "-2 * s * g"))
    code, printed, document = audit(course, "--seeds", "1", "--no-mutants")
    assert code == 1, printed
    assert document["baseline"]["solutions"]["ok"] is False
    assert document["baseline"]["solutions"]["failed_checks"] == ["test_hooks.py::test_reversed_grad[cpu]"]
    assert "the solutions do not score 100 %" in printed


def usage(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(["audit", *argv])
    return code, capsys.readouterr().err


def test_without_libcst_the_audit_says_how_to_install_it(course, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "libcst", None)
    monkeypatch.delitem(sys.modules, "pytest_autograd_grader.audit.mutants", raising=False)
    code, said = usage(capsys, str(course / "exercises"), "--solutions", str(course / "solutions"))
    assert code == 2 and "pip install 'pytest-autograd-grader[audit]'" in said


@pytest.mark.parametrize(
    "damage, expected",
    [
        ("no checks", "is not a folder; give the folder of the course's check files"),
        ("no solutions", "give the folder of the reference solutions"),
        ("solution syntax", "does not parse (line 1"),
        ("unknown topic folder", "is named like no solution module"),
        ("empty mistakes folder", "holds no mistake; add hooks/<name>.py"),
        ("empty mistakes", "is empty; plant a mistake as"),
        ("accepted without reason", "entry 1: reason is missing"),
    ],
)
def test_bad_input_gets_a_message_saying_what_to_do(course, capsys, damage, expected):
    checks, solutions = course / "exercises", course / "solutions"
    if damage == "no checks":
        checks = course / "nowhere"
    elif damage == "no solutions":
        solutions = course / "nowhere"
    elif damage == "solution syntax":
        (solutions / "hooks.py").write_text("def reversed_grad(x, s:\n")
    elif damage == "unknown topic folder":
        (course / "mistakes" / "hook").mkdir()
    elif damage == "empty mistakes folder":
        shutil.rmtree(course / "mistakes" / "hooks")
        (course / "mistakes" / "hooks").mkdir()
    elif damage == "empty mistakes":
        shutil.rmtree(course / "mistakes" / "hooks")
    else:
        (course / "mistakes" / "accepted.toml").write_text('[[survivor]]\nid = "hooks.x:y:1"\n')
    code, said = usage(capsys, str(checks), "--solutions", str(solutions))
    assert code == 2 and expected in said and "Traceback" not in said


STOPPED_THEN_FULL = """
import json, sys
from pathlib import Path
from pytest_autograd_grader.audit.grading import GradeOptions, grade_topic
from pytest_autograd_grader.audit.variants import Variant
course, wrong = Path(sys.argv[1]), sys.argv[2]
variants = [Variant("mutant", "hooks", "m", wrong), Variant("mistake", "hooks", "w", wrong)]
reports = grade_topic(course / "exercises", course / "solutions", [course / "exercises" / "test_hooks.py"],
                      variants, [1], GradeOptions(jobs=1), course.parent / "work")
print(json.dumps([[c["id"] for c in reports[(i, 1)]["checks"] if c["score"] < c["max_score"]] for i in (0, 1)]))
"""


def test_a_run_stopped_at_its_first_failure_leaves_the_next_one_graded_in_full(course):
    checks = course / "exercises" / "test_hooks.py"
    source = checks.read_text()
    second = source[source.index("@pytest.mark.grade(points=2") :].replace(
        "def test_reversed_grad(", "def test_reversed_grad_again("
    )
    checks.write_text(source + "\n\n" + second)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    wrong = SOLUTION.replace("-s * g", "s * g")
    done = subprocess.run(
        [sys.executable, "-c", STOPPED_THEN_FULL, str(course), wrong],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    stopped, full = json.loads(done.stdout.splitlines()[-1])
    assert stopped == ["test_hooks.py::test_reversed_grad[cpu]"]  # one worker: the same session, in turn
    assert full == ["test_hooks.py::test_reversed_grad[cpu]", "test_hooks.py::test_reversed_grad_again[cpu]"]

"""The `engine` topic graded through the sandbox, as a student's run
grades it: the reference engine passes every check, and a sample of the
planted mistakes (engine_mistakes.py; one per concept and per kind of
diagnosis: a derivative, broadcasting, the order of the nodes, freeing,
accumulation, vector backward) fails exactly the checks it should, with
its diagnosis and a program the student can run as it is shown. Every
planted mistake on every seed, and the fuzzer itself, are tested
in-process in test_engine_fuzz.py, where a grading costs no worker."""

import re
import shutil
import subprocess
import sys

from conftest import EXERCISES, SEEDS, grade_variants, pattern
from engine_mistakes import ALL, MAX_OPS, MISTAKES, SOURCE, planted

from pytest_autograd_grader.i18n.en import EN

TOPIC = "engine"
SANDBOXED = (
    "tanh_derivative",
    "matmul_vector",
    "unbroadcast_leading",
    "fanout_overwrite",
    "reversed_order",
    "no_grad_root",
    "shared_grad",
    "leaves_after_error",
    "many_one_by_one",
    "not_accumulated",
    "unbroadcast_shifted",
    "relu_zero",
)


def _ops(feedback):
    found = re.search(r"\((\d+) ops\)", feedback)
    assert found, feedback
    return int(found.group(1))


def test_reference_passes_and_each_mistake_fails_its_checks_on_each_seed(pytester):
    modules = {"reference": SOURCE, **{name: MISTAKES[name][0] for name in SANDBOXED}}
    keep = {name: list(MISTAKES[name][1]) for name in SANDBOXED}
    # the reference on 20 seeds is test_curriculum's; every mistake on 6 seeds, test_engine_fuzz's
    results = grade_variants(pytester, TOPIC, modules, seeds=SEEDS[:2], keep=keep)
    for check in ALL:
        for run in results["reference"][check]:
            assert run["status"] == "passed" and run["score"] == run["max_score"], (check, run["feedback"])
    for name in SANDBOXED:
        _, checks, diagnosis = MISTAKES[name]
        assert set(results[name]) == set(checks), (name, sorted(results[name]))
        for check in checks:
            for run in results[name][check]:
                feedback = run["feedback"]
                assert run["status"] == "failed" and run["score"] == 0, (name, check, run)
                assert pattern(diagnosis).search(feedback), (name, check, feedback)
                others = [key for key in EN if key.startswith("diag.engine.") and key != diagnosis]
                assert not any(pattern(key).search(feedback) for key in others), (name, check, feedback)
                # a script the student can run as it is, beside their engine
                assert "import numpy as np\nfrom engine_" in feedback, feedback
                assert _ops(feedback) <= MAX_OPS, (name, check, feedback)
    assert "tanh" in results["tanh_derivative"]["test_op_derivatives"][0]["feedback"]
    # the smallest program runs as it is shown, beside the engine, and prints the disagreement
    for name in ("tanh_derivative", "fanout_overwrite", "not_accumulated", "leaves_after_error"):
        feedback = results[name][MISTAKES[name][1][0]][0]["feedback"]
        script = feedback[feedback.index("import numpy as np") :].split("\n\n")
        script = "\n\n".join(script[:2])  # the imports, then the program up to the blank line after it
        folder = pytester.path / f"run_{name}"
        folder.mkdir()
        (folder / f"engine_{name}.py").write_text(MISTAKES[name][0])
        shutil.copy(EXERCISES / "engine_given.py", folder)  # a student's folder has it, beside engine.py
        (folder / "smallest.py").write_text(script)
        ran = subprocess.run([sys.executable, "smallest.py"], cwd=folder, capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0, (script, ran.stderr)
        assert "torch.autograd:" in script and ran.stdout.strip(), (script, ran.stdout)


def test_grading_an_engine_writes_nothing_but_its_report(pytester):
    # hypothesis would keep the constants it reads from "local" source files
    # in .hypothesis/ of the working directory, and draw other programs for
    # the same seed on an editable install than on a wheel
    import os
    import shutil

    from conftest import EXERCISES

    checks, student = pytester.path / "checks", pytester.path / "student"
    checks.mkdir()
    student.mkdir()
    shutil.copy(EXERCISES / "test_engine.py", checks / "test_engine.py")
    (student / "engine.py").write_text(MISTAKES["tanh_derivative"][0])
    before = set(os.listdir(pytester.path))
    result = pytester.runpytest_subprocess(
        "--grade",
        "--grade-json",
        "report.json",
        "--grade-submission=student",
        "--grade-seed=3",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:benchmark",
        "checks",
    )
    # a wrong tanh costs the op check only: the traversal is built from the ops it gets right
    assert "1 failed, 6 passed" in result.stdout.str(), result.stdout.str()[-2000:]
    new = set(os.listdir(pytester.path)) - before
    # pytester's own: the run's output and its basetemp
    assert {n for n in new if n not in ("stdout", "stderr") and not n.startswith("runpytest-")} == {"report.json"}


def test_a_wrong_derivative_costs_the_op_check_not_the_traversal(pytester):
    # the traversal is built from the ops the engine gets right on their own
    wrong_joins = planted(
        ("        return grad, grad\n", "        return grad, 2 * grad\n"),
        ("        return grad, -grad\n", "        return grad, grad\n"),
        ("        return grad * b, grad * a\n", "        return grad * a, grad * b\n"),
    )
    modules = {"tanh": MISTAKES["tanh_derivative"][0], "joins": wrong_joins}
    results = grade_variants(
        pytester,
        TOPIC,
        modules,
        seeds=SEEDS[:6],
        keep={"tanh": ["test_graph_traversal"], "joins": ["test_graph_traversal"]},
    )
    for run in results["tanh"]["test_graph_traversal"]:
        assert run["status"] == "passed", run["feedback"]
    # with no op left to join two paths, the traversal cannot be checked: said, not passed
    for run in results["joins"]["test_graph_traversal"]:
        assert run["status"] == "failed" and "the traversal could not be checked" in run["feedback"], run

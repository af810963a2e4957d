"""The `engine` topic: the reference engine passes every check on the 20
seeds, and each engine mistake of issue 10, planted alone into the
reference solution, fails on every seed exactly the checks of the concepts
it touches, with feedback that names the mistake and shows a program of at
most a few ops. A second, shorter session checks on a few seeds that the
other checks of each planted engine still pass (two seeds: ~0.15 s a check).

The fuzzer itself (plain data, rendering, comparison, shrinking) is tested
in-process at the end, without the sandbox."""

import re
import subprocess
import sys

from conftest import SEEDS, SOLUTIONS, grade_variants, pattern

from pytest_autograd_grader.i18n.en import EN

TOPIC = "engine"
SOURCE = (SOLUTIONS / "engine.py").read_text()

CHECKS = {
    "engine": ("test_op_derivatives", "test_broadcasting", "test_graph_traversal"),
    "leaf": ("test_leaves_and_requires_grad",),
    "accumulation": ("test_accumulation_and_zeroing",),
    "retain_graph": ("test_retain_graph_errors",),
    "vector_backward": ("test_vector_backward",),
}
ALL = tuple(check for checks in CHECKS.values() for check in checks)


def planted(*replacements):
    """The reference engine with each (old, new) text replaced; each old
    text occurs exactly once."""
    source = SOURCE
    for old, new in replacements:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


# name: (the engine, the checks it fails, the diagnosis its feedback gives)
MISTAKES = {
    "fanout_overwrite": (planted((
        "                arrived[inp] = g if inp not in arrived else arrived[inp] + g\n",
        "                arrived[inp] = g\n")),
        ("test_graph_traversal",), "diag.engine.fanout_overwrite"),
    "no_unbroadcast": (planted(("                g = unbroadcast(g, inp.shape)\n", "")),
                       ("test_broadcasting",), "diag.engine.no_unbroadcast"),
    # nodes run in the order the search found them, not topologically: a node
    # reached along a short path runs before the gradients of longer ones arrive
    "wrong_order": (planted(("for t in sorted(non_leaves, key=lambda t: t.grad_fn.seq, reverse=True):",
                             "for t in non_leaves:"),
                            ("            grad = arrived.pop(t)\n", "            grad = arrived.pop(t, 0)\n")),
                    ("test_graph_traversal",), "diag.engine.order"),
    "nonleaf_grads": (planted(("            if t.retains_grad:\n                accumulate_grad(t, grad)",
                               "            accumulate_grad(t, grad)")),
                      ("test_leaves_and_requires_grad",), "diag.engine.nonleaf_grad"),
    "never_freed": (planted(("            if not retain_graph:\n                node.free_saved()\n", "")),
                    ("test_retain_graph_errors",), "diag.engine.never_freed"),
    "implicit_accepted": (planted(("            if out.data.size != 1:\n                raise RuntimeError(ERR_IMPLICIT_GRAD)\n",
                                   "")),
                          ("test_vector_backward",), "diag.engine.implicit_accepted"),
    "retain_no_grad": (planted(("        if not self.requires_grad:\n            raise RuntimeError(ERR_RETAIN_NO_GRAD)\n", "")),
                       ("test_leaves_and_requires_grad",), "diag.engine.retain_grad_no_grad"),
    "shape_accepted": (planted(("            if g.shape != out.shape:\n"
                                "                raise RuntimeError(ERR_SHAPE.format(i=i, grad_shape=g.shape, "
                                "out_shape=out.shape))\n", "")),
                       ("test_vector_backward",), "diag.engine.shape_accepted"),
    "not_accumulated": (planted((
        "    t.grad = np.array(grad, dtype=np.float64) if t.grad is None else t.grad + grad",
        "    t.grad = np.array(grad, dtype=np.float64)")),
        ("test_accumulation_and_zeroing",), "diag.engine.not_accumulated"),
    "not_cleared": (planted(("    def zero_grad(self) -> None:\n        self.grad = None",
                             "    def zero_grad(self) -> None:\n        pass")),
                    ("test_accumulation_and_zeroing",), "diag.engine.not_cleared"),
    # one rule, PyTorch's: zero_grad sets .grad to None, not zeros
    "zeros_not_none": (planted(("    def zero_grad(self) -> None:\n        self.grad = None",
                                "    def zero_grad(self) -> None:\n        self.grad = np.zeros_like(self.data)")),
                       ("test_accumulation_and_zeroing",), "diag.engine.zeros_not_none"),
    # the gradient argument ignored (ones instead), or applied twice
    "gradient_ignored": (planted(("out_shape=out.shape))\n        elif out.requires_grad:",
                                  "out_shape=out.shape))\n            g = np.ones_like(g)\n        elif out.requires_grad:")),
                         ("test_vector_backward",), "diag.engine.gradient_ignored"),
    "gradient_twice": (planted(("out_shape=out.shape))\n        elif out.requires_grad:",
                                "out_shape=out.shape))\n            g = g * g\n        elif out.requires_grad:")),
                       ("test_vector_backward",), "diag.engine.gradient_twice"),
    "retain_grad_ignored": (planted(("            if t.retains_grad:\n                accumulate_grad(t, grad)",
                                     "            if False:\n                accumulate_grad(t, grad)")),
                            ("test_leaves_and_requires_grad",), "diag.engine.retain_grad_ignored"),
    "freed_despite_retain": (planted(("            if not retain_graph:\n                node.free_saved()\n",
                                      "            node.free_saved()\n")),
                             ("test_retain_graph_errors",), "diag.engine.freed_despite_retain"),
    "tanh_derivative": (planted(("        return (grad * (1 - out * out),)", "        return (grad * (1 - out),)")),
                        ("test_op_derivatives",), "diag.engine.wrong_derivative"),
    "matmul_transposed": (planted((
        "        return (g2 @ b2.T).reshape(a.shape), (a2.T @ g2).reshape(b.shape)",
        "        return (g2 @ b2).reshape(a.shape), (a2 @ g2).reshape(b.shape)")),
        ("test_op_derivatives",), "diag.engine.matmul_transposed"),
}

# the most ops a minimal program may show
MAX_OPS = 5


def _ops(feedback):
    found = re.search(r"\((\d+) ops\)", feedback)
    assert found, feedback
    return int(found.group(1))


def test_reference_passes_and_each_mistake_fails_its_checks_on_each_seed(pytester):
    modules = {"reference": SOURCE, **{name: source for name, (source, _, _) in MISTAKES.items()}}
    keep = {name: list(checks) for name, (_, checks, _) in MISTAKES.items()}
    # the reference on 20 seeds is test_curriculum's; here 6 seeds per mistake
    results = grade_variants(pytester, TOPIC, modules, seeds=SEEDS[:6], keep=keep)
    for check in ALL:
        for run in results["reference"][check]:
            assert run["status"] == "passed" and run["score"] == run["max_score"], (check, run["feedback"])
    for name, (_, checks, diagnosis) in MISTAKES.items():
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
    for name in ("tanh_derivative", "fanout_overwrite", "not_accumulated"):
        feedback = results[name][MISTAKES[name][1][0]][0]["feedback"]
        script = feedback[feedback.index("import numpy as np"):].split("\n\n")
        script = "\n\n".join(script[:2])  # the imports, then the program up to the blank line after it
        folder = pytester.path / f"run_{name}"
        folder.mkdir()
        (folder / f"engine_{name}.py").write_text(MISTAKES[name][0])
        (folder / "smallest.py").write_text(script)
        ran = subprocess.run([sys.executable, "smallest.py"], cwd=folder, capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0, (script, ran.stderr)
        assert "torch.autograd:" in script and ran.stdout.strip(), (script, ran.stdout)


# checks a mistake may also fail, on the seeds whose programs lean on what it breaks
ALSO = {"freed_despite_retain": ("test_accumulation_and_zeroing", "test_vector_backward")}  # retain_graph=True there too


def test_each_mistake_passes_the_checks_of_other_concepts(pytester):
    modules = {name: source for name, (source, _, _) in MISTAKES.items()}
    keep = {name: [c for c in ALL if c not in checks and c not in ALSO.get(name, ()) and
                   not (set(checks) & set(CHECKS["engine"]) and c in CHECKS["engine"])]
            for name, (_, checks, _) in MISTAKES.items()}
    results = grade_variants(pytester, TOPIC, modules, seeds=SEEDS[:2], keep=keep)
    for name, checks in results.items():
        for check, runs in checks.items():
            for run in runs:
                assert run["status"] == "passed", (name, check, run["feedback"])


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
    result = pytester.runpytest_subprocess("--grade", "--grade-json", "report.json", "--grade-submission=student",
                                           "--grade-seed=3", "-p", "no:cacheprovider", "-p", "no:benchmark",
                                           "checks")
    # a wrong tanh costs the op check only: the traversal is built from the ops it gets right
    assert "1 failed, 6 passed" in result.stdout.str(), result.stdout.str()[-2000:]
    new = set(os.listdir(pytester.path)) - before
    # pytester's own: the run's output and its basetemp
    assert {n for n in new if n not in ("stdout", "stderr") and not n.startswith("runpytest-")} == {"report.json"}


def test_a_wrong_derivative_costs_the_op_check_not_the_traversal(pytester):
    # the traversal is built from the ops the engine gets right on their own
    wrong_joins = planted(("        return grad, grad\n", "        return grad, 2 * grad\n"),
                          ("        return grad, -grad\n", "        return grad, grad\n"),
                          ("        return grad * b, grad * a\n", "        return grad * a, grad * b\n"))
    modules = {"tanh": MISTAKES["tanh_derivative"][0], "joins": wrong_joins}
    results = grade_variants(pytester, TOPIC, modules, seeds=SEEDS[:6],
                             keep={"tanh": ["test_graph_traversal"], "joins": ["test_graph_traversal"]})
    for run in results["tanh"]["test_graph_traversal"]:
        assert run["status"] == "passed", run["feedback"]
    # with no op left to join two paths, the traversal cannot be checked: said, not passed
    for run in results["joins"]["test_graph_traversal"]:
        assert run["status"] == "failed" and "the traversal could not be checked" in run["feedback"], run

"""The engine exercise as a student meets it: engine.py holds only what the
student writes, in the order of the stages its docstring gives, with the
given plumbing in engine_given.py (one file, the grader's copy always);
each stage is graded by its checks while the later stages still raise
NotImplementedError."""

from __future__ import annotations

import ast
import re

from conftest import EXERCISES, SEEDS, SOLUTIONS, grade_variants
from test_engine_fuzz import fuzzer

STUB = (EXERCISES / "engine.py").read_text()
SOLUTION = (SOLUTIONS / "engine.py").read_text()
GIVEN = (EXERCISES / "engine_given.py").read_text()

# what each stage's checks are, as the stub's docstring tells the student to run them
STAGE_CHECKS = {
    1: ("test_op_derivatives",),
    2: ("test_graph_traversal", "test_broadcasting", "test_vector_backward"),
    3: ("test_leaves_and_requires_grad", "test_accumulation_and_zeroing", "test_retain_graph_errors"),
}


def _definitions(source: str) -> list[tuple[str, ast.FunctionDef]]:
    """Every function and method of ``source`` in file order, named as the
    grader names an unwritten part ("run_backward", "Node.free_saved")."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            found.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            found += [(f"{node.name}.{f.name}", f) for f in node.body if isinstance(f, ast.FunctionDef)]
    return found


def _stubbed_names(source: str) -> list[str]:
    return [
        name
        for name, f in _definitions(source)
        if any(isinstance(s, ast.Raise) and "NotImplementedError" in ast.unparse(s) for s in f.body)
    ]


def _stages() -> dict[int, tuple[set[str], list[str]]]:
    """Per stage of the stub's docstring: the parts it names (as the file
    defines them) and the words of its check command's -k."""
    doc = ast.get_docstring(ast.parse(STUB))
    defined = {name for name, _ in _definitions(STUB)} | {
        n.name for n in ast.parse(STUB).body if isinstance(n, ast.ClassDef)
    }
    stages = {}
    for number, text, command in re.findall(r"Stage (\d),(.*?)\n\s*(pytest --grade [^\n]+)", doc, re.S):
        assert command.startswith("pytest --grade exercises/test_engine.py -k "), command
        words = re.findall(r"\w+", command.split(" -k ", 1)[1])
        stages[int(number)] = (set(re.findall(r"\w+(?:\.\w+)?", text)) & defined, [w for w in words if w != "or"])
    return stages


def without(source: str, names: set[str]) -> str:
    """``source`` with the bodies of the named functions and methods replaced
    by ``raise NotImplementedError``: a student's engine part-way through."""
    lines = source.splitlines(True)
    for _, f in sorted((d for d in _definitions(source) if d[0] in names), key=lambda d: -d[1].lineno):
        indent = " " * f.body[0].col_offset
        lines[f.body[0].lineno - 1 : f.end_lineno] = [indent + "raise NotImplementedError\n"]
    return "".join(lines)


STAGE2 = {"unbroadcast", "accumulate_grad", "run_backward", "backward", "Tensor.is_leaf"}
STAGE3 = {"Tensor.retain_grad", "Tensor.detach", "Tensor.zero_grad"}


def test_the_stub_holds_only_the_students_part_in_the_order_of_its_stages():
    stubbed = _stubbed_names(STUB)
    # nothing given is left in the stub: every function in it is the student's to write
    assert stubbed == [name for name, _ in _definitions(STUB)]
    stages = _stages()
    assert sorted(stages) == [1, 2, 3]
    assert {"Node.saved_tensors", "Node.free_saved", "AddBackward0"} <= stages[1][0]
    assert STAGE2 <= stages[2][0] and STAGE3 <= stages[3][0]
    # the stages' parts come in the file in the stages' order
    position = {name: i for i, name in enumerate(stubbed)}
    last_of = {n: max(position[m] for m in stubbed if _stage_of(m) == n) for n in (1, 2, 3)}
    first_of = {n: min(position[m] for m in stubbed if _stage_of(m) == n) for n in (1, 2, 3)}
    assert last_of[1] < first_of[2] and last_of[2] < first_of[3]
    # each stage's -k selects exactly its checks
    every = [c for checks in STAGE_CHECKS.values() for c in checks]
    for number, (_, words) in stages.items():
        assert sorted(c for c in every if any(w in c for w in words)) == sorted(STAGE_CHECKS[number])


def _stage_of(name: str) -> int:
    if name in STAGE3:
        return 3
    return 2 if name in STAGE2 else 1


def test_the_given_part_is_one_file_that_stub_and_solution_import_and_neither_copies():
    given_names = {n.name for n in ast.parse(GIVEN).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for source in (STUB, SOLUTION):
        tree = ast.parse(source)
        assert any(isinstance(n, ast.ImportFrom) and n.module == "engine_given" for n in tree.body)
        defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert defined & given_names == set()
        assert "ERR_BACKWARD_TWICE = " not in source and "def _apply(" not in source
    # the solution fills in exactly the stub's parts, nothing of its own besides helpers
    assert set(_stubbed_names(STUB)) <= {name for name, _ in _definitions(SOLUTION)}


def test_stage_one_passes_the_op_check_on_every_seed_before_backward_exists():
    stage1 = without(SOLUTION, STAGE2 | STAGE3)
    for seed in SEEDS:
        assert fuzzer(stage1, "test_op_derivatives", seed).run() is None, seed


def test_each_stage_is_graded_by_its_checks_and_a_forged_given_file_changes_nothing(pytester):
    # the upload's own engine_given.py is a forgery that would break every
    # engine; the grader loads its own copy, so no variant notices it
    student = pytester.path / "student"
    student.mkdir()
    (student / "engine_given.py").write_text("raise ImportError('a forged engine_given')\n")
    variants = {
        "reference": SOLUTION,
        "stage1": without(SOLUTION, STAGE2 | STAGE3),
        "stage2": without(SOLUTION, STAGE3),
    }
    results = grade_variants(pytester, "engine", variants, seeds=SEEDS[:2])
    done = {"reference": (1, 2, 3), "stage1": (1,), "stage2": (1, 2)}
    for name, stages in done.items():
        for stage, checks in STAGE_CHECKS.items():
            for check in checks:
                for run in results[name][check]:
                    if stage in stages:
                        assert run["status"] == "passed", (name, check, run["feedback"])
                    else:
                        assert run["status"] == "failed" and run["score"] == 0, (name, check, run)
                        assert f"not implemented yet: engine_{name}." in run["feedback"], (name, check, run)

"""Shared helpers: run the grader in-process with pytester and read back
the JSON report, the way an instructor's CI would."""

from __future__ import annotations

import json
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy  # noqa: F401
import pytest
import torch  # noqa: F401
from _pytest import pytester as _pytester

# pytester forgets every module first imported during an in-process run.
# torch imports parts of itself lazily (torch.testing pulls in
# torch.distributed on a failed comparison), and registering its operator
# libraries twice fails or crashes the interpreter, so torch and numpy are
# kept across runs.
_KEEP = ("torch", "numpy", "functorch", "sympy", "mpmath", "networkx", "jinja2", "filelock", "fsspec")
_snapshot_init = _pytester.SysModulesSnapshot.__init__


def _keep_heavy_modules(self, preserve=None):
    def keep(name: str) -> bool:
        return name.split(".")[0] in _KEEP or (preserve is not None and preserve(name))

    _snapshot_init(self, preserve=keep)


_pytester.SysModulesSnapshot.__init__ = _keep_heavy_modules

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
EXERCISES = REPO / "exercises"
SOLUTIONS = REPO / "solutions"


# Plugins that cost time in every in-process run and matter to none of them:
# unraisableexception's clean-up runs gc.collect() five times (~0.3 s over
# torch's heap); hypothesis and pytest-benchmark, where installed, are
# re-imported and print summaries each run (~1.7 s). Unknown names are fine.
QUIET_PLUGINS = ("-p", "no:cacheprovider", "-p", "no:unraisableexception",
                 "-p", "no:hypothesispytest", "-p", "no:benchmark")


@dataclass
class Graded:
    result: pytest.RunResult
    report: dict

    @property
    def text(self) -> str:
        return self.result.stdout.str()

    @property
    def checks(self) -> dict[str, dict]:
        return {c["id"]: c for c in self.report["checks"]}

    def concept(self, concept_id: str) -> dict:
        return next(c for c in self.report["concepts"] if c["id"] == concept_id)

    def check(self, name: str) -> dict:
        """The one check whose id contains ``name``."""
        found = [c for c in self.report["checks"] if name in c["id"]]
        assert len(found) == 1, f"{name!r} matches {[c['id'] for c in found]}"
        return found[0]


def run_grader(pytester: pytest.Pytester, *args: str, report: str = "report.json") -> Graded:
    result = pytester.runpytest("--grade", "--grade-json", report, *QUIET_PLUGINS, *args)
    path = pytester.path / report
    data = json.loads(path.read_text()) if path.exists() else {}
    return Graded(result, data)


def grade_checks(pytester: pytest.Pytester, checks: str, *args: str, **students: str) -> Graded:
    """Grade ``checks`` (a checks file's source) against a student directory
    holding one module per keyword argument (name=source), with a fixed seed."""
    student = pytester.path / "student"
    student.mkdir(exist_ok=True)
    for name, source in students.items():
        (student / f"{name}.py").write_text(textwrap.dedent(source))
    pytester.makepyfile(test_checks=checks)
    seed = () if any(a.startswith("--grade-seed") for a in args) else ("--grade-seed", "7")
    return run_grader(pytester, "test_checks.py", "--grade-submission=student", *seed, *args)


@pytest.fixture
def grade_topics(pytester: pytest.Pytester):
    """Grade the curriculum's checks for ``topics`` against a submission made
    of the reference solutions, where ``stubs`` use the untouched exercise
    files and ``modules`` maps a module name to replacement source code."""

    def run(topics, *args: str, stubs=(), modules: dict[str, str] | None = None) -> Graded:
        checks = pytester.path / "checks"
        student = pytester.path / "student"
        checks.mkdir(exist_ok=True)
        student.mkdir(exist_ok=True)
        for topic in topics:
            shutil.copy(EXERCISES / f"test_{topic}.py", checks / f"test_{topic}.py")
            source = EXERCISES if topic in stubs else SOLUTIONS
            shutil.copy(source / f"{topic}.py", student / f"{topic}.py")
        for name, text in (modules or {}).items():
            (student / f"{name}.py").write_text(text)
        # A fixed seed unless the test names one: a failure in CI must be
        # reproducible (test_curriculum sweeps many seeds on purpose).
        seed = () if any(a.startswith("--grade-seed") for a in args) else ("--grade-seed", "20261122")
        return run_grader(pytester, "checks", "--grade-submission=student", *seed, *args)

    return run


def _replace_function(source: str, function: str, replacement: str) -> str:
    import ast

    lines = source.splitlines(keepends=True)
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == function:
            start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
            return "".join(lines[:start]) + replacement.strip("\n") + "\n" + "".join(lines[node.end_lineno:])
    raise AssertionError(f"{function} not found")


def solution_with_all(topic: str, replacements: dict[str, str]) -> str:
    """The reference solution of ``topic`` with each named function (or
    class) replaced by the source code given for it, so one grading run can
    test one plausible mistake per check."""
    source = (SOLUTIONS / f"{topic}.py").read_text()
    for function, replacement in replacements.items():
        source = _replace_function(source, function, replacement)
    return source


def solution_with(topic: str, function: str, replacement: str) -> str:
    """The reference solution of ``topic`` with one function replaced."""
    return solution_with_all(topic, {function: replacement})


SEEDS = tuple(range(1001, 1021))  # 20 run seeds for the every-seed tests

# Written beside the checks by grade_seeds: it overrides the plugin's
# grade_rng with one parametrized by run seed, which derives each check's
# seed exactly as `--grade-seed S` does, so one session grades every seed.
_SEEDS_CONFTEST = '''
import pytest
from pytest_autograd_grader.seeding import GradeRng, check_seed

@pytest.fixture(params={seeds!r}, ids=lambda seed: f"seed{{seed}}")
def grade_rng(request):
    device = request.getfixturevalue("grade_device") if "grade_device" in request.fixturenames else "cpu"
    nodeid = request.node.nodeid.replace(f"-seed{{request.param}}]", "]").replace(f"[seed{{request.param}}]", "")
    return GradeRng.create(check_seed(request.param, nodeid), device=device)
'''


@dataclass
class Seeded(Graded):
    def runs(self, name: str) -> list[dict]:
        """Every seed's result of the check whose name contains ``name``."""
        found = [c for c in self.report["checks"] if name in c["id"].split("::")[-1]]
        names = {c["id"].split("[")[0] for c in found}
        assert len(names) == 1, f"{name!r} matches {sorted(names)}"
        return found


@pytest.fixture
def grade_seeds(pytester: pytest.Pytester, grade_topics):
    """Like ``grade_topics``, but every check runs once for each of ``seeds``
    (default: the 20 of ``SEEDS``) with the inputs ``--grade-seed S`` gives
    it; ``Seeded.runs(name)`` lists one check's results."""

    def run(topics, *args: str, seeds=SEEDS, **kwargs) -> Seeded:
        (pytester.path / "checks").mkdir(exist_ok=True)
        (pytester.path / "checks" / "conftest.py").write_text(_SEEDS_CONFTEST.format(seeds=tuple(seeds)))
        graded = grade_topics(topics, *args, **kwargs)
        return Seeded(graded.result, graded.report)

    return run

"""Shared helpers: run the grader in-process with pytester and read back
the JSON report, the way an instructor's CI would."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy  # noqa: F401
import pytest
import shipped_course_plugin
import torch  # noqa: F401
from _pytest import pytester as _pytester

from pytest_autograd_grader import i18n
from pytest_autograd_grader.i18n import msg
from pytest_autograd_grader.i18n.en import EN as GRADER_EN
from pytest_autograd_grader.i18n.zh import ZH as GRADER_ZH
from pytest_autograd_grader.protocol import ProtocolWarning


@contextlib.contextmanager
def language(code: str):
    """The grader's messages in ``code`` for the block, the language before put back."""
    restore = i18n.saved_language()
    i18n.use_language(code)
    try:
        yield
    finally:
        restore()


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


def pytest_configure(config):
    # a stage (or other word) one side of the grader-worker protocol does not
    # know fails the test that meets it; for a student it stays a plain crash.
    # ProtocolWarning is imported above, so in-process runs share the class.
    config.addinivalue_line("filterwarnings", f"error::{ProtocolWarning.__module__}.{ProtocolWarning.__name__}")


REPO = Path(__file__).resolve().parent.parent
EXERCISES = REPO / "exercises"
SOLUTIONS = REPO / "solutions"


# the shipped course's files that are not topics: an instructor's checks
# folder holding some of its check files needs them beside those
COURSE_FILES = ("conftest.py", "course_messages_en.py", "course_messages_zh.py")


def copy_course_files(checks: Path) -> None:
    for name in COURSE_FILES:
        shutil.copy(EXERCISES / name, checks / name)


COURSE_EN, COURSE_ZH = shipped_course_plugin.messages().values()  # exercises/course_messages_*.py
SHIPPED_CONCEPTS = shipped_course_plugin.concepts()  # the shipped course's twelve (exercises/conftest.py)
# what the shipped course's runs say: the grader's catalogue and the course's
EN = {**GRADER_EN, **COURSE_EN}
ZH = {**GRADER_ZH, **COURSE_ZH}
# The tests' own msg() speaks the shipped course too, as its runs do (each
# in-process run puts back this process's messages when it ends).
i18n.add_course_messages({"en": COURSE_EN, "zh": COURSE_ZH}, source="tests/conftest.py")


@pytest.fixture(autouse=True)
def _shipped_course(monkeypatch):
    """Checks the tests write or copy use the shipped course's concept and
    message ids without its conftest.py: every pytest run a test starts
    (in-process or not) loads shipped_course_plugin (set per test, so that
    the test session's own xdist workers do not)."""
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(p for p in (str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH")) if p),
    )
    monkeypatch.setenv(
        "PYTEST_PLUGINS", ",".join(p for p in (os.environ.get("PYTEST_PLUGINS"), "shipped_course_plugin") if p)
    )


# Plugins that cost time in every in-process run and matter to none of them:
# unraisableexception's clean-up runs gc.collect() five times (~0.3 s over
# torch's heap); hypothesis and pytest-benchmark, where installed, are
# re-imported and print summaries each run (~1.7 s). Unknown names are fine.
QUIET_PLUGINS = (
    "-p",
    "no:cacheprovider",
    "-p",
    "no:unraisableexception",
    "-p",
    "no:hypothesispytest",
    "-p",
    "no:benchmark",
)


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


@pytest.fixture
def fresh_process_state():
    """The grader's process-wide registries (process_state.py: the sandboxes'
    zygotes, the isolations chosen) as in a fresh process for one test, and
    fresh again after it: what the test chose under its monkeypatches is
    not left to the next."""
    from pytest_autograd_grader import process_state

    process_state.reset()
    yield process_state.PROCESS
    process_state.reset()


@pytest.fixture(autouse=True)
def _outside_github_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs in these tests never write into a real GitHub job's summary or
    outputs, even when this suite itself runs in GitHub Actions."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)


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
            return "".join(lines[:start]) + replacement.strip("\n") + "\n" + "".join(lines[node.end_lineno :])
    raise AssertionError(f"{function} not found")


def solution_function(topic: str, function: str) -> str:
    """The source of one function (or class) of ``topic``'s reference solution."""
    import ast

    source = (SOLUTIONS / f"{topic}.py").read_text()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == function:
            return ast.get_source_segment(source, node) + "\n"
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
_SEEDS_CONFTEST = """
import pytest
from pytest_autograd_grader.checking.seeding import GradeRng, check_seed

@pytest.fixture(params={seeds!r}, ids=lambda seed: f"seed{{seed}}")
def grade_rng(request):
    device = request.getfixturevalue("grade_device") if "grade_device" in request.fixturenames else "cpu"
    # the node id `--grade-seed S` would see: without this fixture's parameter
    base, _, params = request.node.nodeid.partition("[")
    params = [p for p in params.rstrip("]").split("-") if p != f"seed{{request.param}}"]
    nodeid = base + (f"[{{'-'.join(params)}}]" if params else "")
    return GradeRng.create(check_seed(request.param, nodeid), device=device)
"""


@pytest.fixture
def grade_seeds(pytester: pytest.Pytester, grade_topics):
    """Like ``grade_topics``, but every check runs once for each of ``seeds``
    (default: the 20 of ``SEEDS``) with the inputs ``--grade-seed S`` gives
    it, in one session (check ids gain a seedS parameter)."""

    def run(topics, *args: str, seeds=SEEDS, **kwargs) -> Graded:
        (pytester.path / "checks").mkdir(exist_ok=True)
        (pytester.path / "checks" / "conftest.py").write_text(_SEEDS_CONFTEST.format(seeds=tuple(seeds)))
        # the JSON report is what these tests read: pytest's tracebacks of
        # failing checks would cost ~0.1 s each
        return grade_topics(topics, "--tb=no", "-rN", *args, **kwargs)

    return run


def grade_variants(pytester, topic, variants, seeds=SEEDS, args=("--tb=no", "-rN"), keep=None):
    """Grade ``topic``'s checks against several student modules in one
    session, each under every seed of ``seeds`` with exactly the inputs
    ``--grade-seed S`` gives: variant NAME's copy of the checks lies in
    checks/NAME/ (directories are not part of a check's seed) and calls the
    student module TOPIC_NAME; ``keep`` ({variant: test names}) grades only
    those checks of a variant. Returns {variant: {test name: [result, ...]}}."""
    checks, student = pytester.path / "checks", pytester.path / "student"
    checks.mkdir(exist_ok=True)
    student.mkdir(exist_ok=True)
    (checks / "conftest.py").write_text(_SEEDS_CONFTEST.format(seeds=tuple(seeds)))
    source = (EXERCISES / f"test_{topic}.py").read_text()
    call = f'submission("{topic}"'  # submission("engine") or submission("engine", numpy_only=True)
    assert call in source
    for name, module in variants.items():
        package = checks / name
        package.mkdir()
        (package / "__init__.py").write_text("")
        text = source.replace(call, f'submission("{topic}_{name}"')
        if keep is not None and name in keep:
            for test in set(re.findall(r"^def (test_\w+)\(", text, re.M)) - set(keep[name]):
                text = text.replace(f"def {test}(", f"def _not_graded_{test}(")
        (package / f"test_{topic}.py").write_text(text)
        (student / f"{topic}_{name}.py").write_text(module)
    graded = run_grader(pytester, "checks", "--grade-submission=student", *args)
    assert graded.report.get("complete"), graded.text[-3000:]
    results = {name: {} for name in variants}
    for check in graded.report["checks"]:
        path, _, test = check["id"].partition("::")
        results[path.split("/")[-2]].setdefault(test.split("[")[0], []).append(check)
    for name, checks_of in results.items():
        for test, runs in checks_of.items():
            assert len(runs) == len(seeds), (name, test, len(runs))
    return results


def pattern(message_id):
    """A regular expression matching every instance of a catalogue message."""
    parts = re.split(r"\{[^{}]*\}", EN[message_id])
    return re.compile(".*?".join(re.escape(part) for part in parts))


# Generic diagnoses: a planted mistake's feedback may name one only where its
# expectations list it (a misdiagnosis shows up as an unexpected one).
GENERIC = (
    "diag.multiple",
    "diag.multiple_calls",
    "diag.mean_sum",
    "diag.fraction",
    "diag.running_sum",
    "diag.factor",
    "diag.mean_twice",
    "diag.too_small",
    "diag.mean_not_sum",
    "diag.ones",
    "diag.sign",
    "diag.transpose",
    "diag.none_leaf",
    "diag.none_not_leaf",
    "diag.none_intermediate",
    "diag.requires_grad",
    "diag.backward_twice",
    "diag.implicit_grad",
    "diag.shape_mismatch",
    "diag.inplace_saved",
)


def assert_diagnosed(results, topic, expect, may=None):
    """Every planted mistake of ``expect`` ({variant: {check: [wanted, ...]}})
    fails on every seed and its feedback says each wanted thing: a message
    id (any instance of that message), (message id, {fields}) (that very
    text) or a plain text. It names no other diagnosis or requirement of
    ``topic`` and no generic diagnosis that is not wanted (or allowed by
    ``may``: {(variant, check): [message id, ...]}, for the seed-dependent).
    Every diagnosis and requirement of ``topic`` must be wanted somewhere."""
    topic_ids = [key for key in EN if key.startswith((f"diag.{topic}.", f"req.{topic}."))]
    planted = {
        w[0] if isinstance(w, tuple) else w for checks in expect.values() for wanted in checks.values() for w in wanted
    }
    assert set(topic_ids) <= planted, f"no planted mistake gets {sorted(set(topic_ids) - planted)}"
    own = topic_ids + list(GENERIC)
    for variant, checks in expect.items():
        for check, wanted in checks.items():
            ids = {w[0] if isinstance(w, tuple) else w for w in wanted} & set(EN)
            allowed = ids | set((may or {}).get((variant, check), ()))
            for run in results[variant][check]:
                feedback = run["feedback"]
                assert run["status"] == "failed" and run["score"] < run["max_score"], (variant, check, run)
                for w in wanted:
                    if isinstance(w, tuple):
                        assert msg(w[0], **w[1]) in feedback, (variant, check, w, feedback)
                    elif w in EN:
                        assert pattern(w).search(feedback), (variant, check, w, feedback)
                    else:
                        assert w in feedback, (variant, check, w, feedback)
                for key in own:
                    assert key in allowed or not pattern(key).search(feedback), (variant, check, key, feedback)


def assert_all_pass(results, variant, *checks):
    for check in checks or results[variant]:
        for run in results[variant][check]:
            assert run["status"] == "passed" and run["score"] == run["max_score"], (variant, check, run)


def grade_named(pytester, topic, *groups):
    """``grade_variants`` for named plantings: each group maps a variant's
    name to {function: source} replacing those functions of the reference
    solution (say WRONG and RIGHT). Returns {variant: {test name: results}}."""
    return grade_variants(
        pytester,
        topic,
        {name: solution_with_all(topic, functions) for group in groups for name, functions in group.items()},
    )


def grade_planted(pytester, topic, variants, checks_of=None):
    """``grade_variants`` for a list of plantings: each a dict {function:
    source} (replacing those functions of the reference solution) with an
    optional "only" (the checks to grade; else ``checks_of[function]`` or
    test_<function>). Returns, per planting, {test name: [its results]}."""
    checks_of = checks_of or {}
    modules, keep = {}, {}
    for i, variant in enumerate(variants):
        functions = {f: text for f, text in variant.items() if f != "only"}
        modules[f"v{i}"] = solution_with_all(topic, functions)
        keep[f"v{i}"] = variant.get("only") or [c for f in functions for c in checks_of.get(f, (f"test_{f}",))]
    results = grade_variants(pytester, topic, modules, keep=keep)
    return [results[f"v{i}"] for i in range(len(variants))]


def fails_everywhere(runs, *texts, absent=(), score=None):
    """Every seed's result failed (with ``score`` when given), and its
    feedback says each of ``texts`` and none of ``absent``; returns the
    first seed's feedback."""
    for run in runs:
        assert run["status"] == "failed" and run["score"] < run["max_score"], run
        assert score is None or run["score"] == score, run
        for text in texts:
            assert text in run["feedback"], (text, run["feedback"])
        for text in absent:
            assert text not in run["feedback"], (text, run["feedback"])
    return runs[0]["feedback"]


def passes_everywhere(runs):
    assert all(run["status"] == "passed" for run in runs), [run["feedback"] for run in runs if run["feedback"]]


def instruction_only(points, share=0.25):
    """The score of a check whose values are right but whose instruction,
    read from the student's own trace, was broken: that share is lost."""
    return points * (1 - share)


class Mistake(NamedTuple):
    """A planted mistake for ``assert_planted``."""

    function: str  # graded by the check test_<function>
    what: str
    source: str
    diagnosis: str | tuple | None  # the message id(s) its feedback must give (None: none of the check's own)
    texts: tuple = ()  # more text the feedback must hold
    score: float = 0
    absent: tuple = ()  # text the feedback must not hold (advice the exercise forbids)


def fragment(message_id):
    """The longest piece of a message's English text without placeholders."""
    return max(re.split(r"\{[^}]*\}", EN[message_id]), key=len).strip()


def assert_planted(pytester, topic, mistakes, correct, specific):
    """Grade every ``Mistake`` and every correct style ({name: {function:
    source}}) under the 20 seeds in one session (``grade_variants``, at
    most one mistake per function in each module): each mistake fails on
    every seed with its score, its diagnosis and texts, and none of the
    other message ids ``specific`` lists for its check; each style passes."""
    versions = _one_mistake_per_function(mistakes)
    modules = {
        name: solution_with_all(topic, {f: m.source for f, m in chosen.items()}) for name, chosen in versions.items()
    }
    modules.update({name: solution_with_all(topic, functions) for name, functions in correct.items()})
    keep = {name: [f"test_{f}" for f in functions] for name, functions in {**versions, **correct}.items()}
    runs = grade_variants(pytester, topic, modules, keep=keep)
    for name, functions in correct.items():
        for function in functions:
            for run in runs[name][f"test_{function}"]:
                assert run["status"] == "passed", (name, function, run["feedback"])
    for name, chosen in versions.items():
        for function, mistake in chosen.items():
            check = f"test_{function}"
            _assert_caught(mistake, runs[name][check], specific[check])


def _one_mistake_per_function(mistakes):
    """{"version<i>": {function: its i-th mistake}}: as many modules as the
    function with most mistakes has, each planting at most one per function."""
    by_function = {}
    for mistake in mistakes:
        by_function.setdefault(mistake.function, []).append(mistake)
    versions = {}
    for i in range(max(len(found) for found in by_function.values())):
        chosen = {function: found[i] for function, found in by_function.items() if i < len(found)}
        versions[f"version{i}"] = chosen
    return versions


def _assert_caught(mistake, runs, specific_ids):
    """Each run of the mistake's check fails with its score, its diagnosis
    and texts, and none of the check's other specific message ids."""
    given = (mistake.diagnosis,) if isinstance(mistake.diagnosis, str) else mistake.diagnosis or ()
    others = [fragment(i) for i in specific_ids if i not in given]
    for run in runs:
        feedback = run["feedback"]
        assert run["status"] == "failed" and run["score"] == mistake.score, (mistake.what, run)
        for text in tuple(fragment(i) for i in given) + mistake.texts:
            assert text in feedback, (mistake.what, text, feedback)
        for other in others + list(mistake.absent):
            assert other not in feedback, (mistake.what, other, feedback)


def pytest_collection_modifyitems(config, items):
    """Journeys last: each keeps a core busy for minutes (a venv, torch,
    a run of its own), so the quick tests go first on both xdist workers;
    inside a journey's own run of this suite they skip (never recurse)."""
    import os

    from journeys import NESTED

    journeys = [item for item in items if item.get_closest_marker("journey")]
    if os.environ.get(NESTED):
        for item in journeys:
            item.add_marker(pytest.mark.skip(reason="inside a journey's own run of this suite"))
    items[:] = [item for item in items if item not in journeys] + journeys


def class_command(checks: Path, submissions: Path, out: Path, *more: str) -> list[str]:
    """The command line of ``autograd-grader class`` run by this Python:
    ``checks`` grade the class in ``submissions`` (a folder or an export),
    the outputs go to ``out``; ``more`` are further options."""
    return [
        sys.executable,
        *("-m", "pytest_autograd_grader", "class"),
        *("--checks", str(checks), "--submissions", str(submissions), "--out", str(out)),
        *more,
    ]

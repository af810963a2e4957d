"""The course authors' pages (docs/authors/) document every public
signature a course uses, so an instructor writes checks without reading the
source. These tests read the signatures from the code and fail when the
pages lack one (a new keyword, method, field, public name or special op
name): the hand-written API reference must hold at least what the code
offers, and every public name must have an entry the site generates from
its docstring (mkdocstrings), with a docstring to show."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import re
import subprocess
import sys
import textwrap

from conftest import REPO

import pytest_autograd_grader
from pytest_autograd_grader import hookspecs
from pytest_autograd_grader.boundary import call_facts, records, tracing
from pytest_autograd_grader.boundary.submission import StudentFunction, Submission, Submissions
from pytest_autograd_grader.checking import misconceptions
from pytest_autograd_grader.checking.autograd import Autograd
from pytest_autograd_grader.checking.input_classes import INPUT_CLASSES
from pytest_autograd_grader.checking.seeding import GradeRng
from pytest_autograd_grader.declarations import spec_of

PAGES = REPO / "docs" / "authors"
API = (PAGES / "api.md").read_text(encoding="utf-8")
GENERATED_HEADING = "\n## Generated from the docstrings\n"
# every page of the authors' section, the API reference included
AUTHORS = "\n".join(page.read_text(encoding="utf-8") for page in sorted(PAGES.glob("*.md")))
# the hand-written reference: the API page up to its generated entries
REFERENCE = API[: API.index(GENERATED_HEADING)]
GENERATED = API[API.index(GENERATED_HEADING) :]


def _bullet(prefix: str) -> str:
    """The reference's bullet that starts with ``prefix`` (up to the next
    bullet, heading or blank line)."""
    found = re.search(r"^- " + re.escape(prefix) + r".*?(?=^- |^#|\n\n|\Z)", REFERENCE, re.M | re.S)
    assert found, f"docs/authors/api.md has no bullet for {prefix}"
    return found.group(0)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def _public_methods(cls: type) -> dict:
    return {
        name: value
        for name, value in vars(cls).items()
        if not name.startswith("_") and callable(value) and not isinstance(value, classmethod)
    }


def _parameters(function) -> list[str]:
    return [p.name for p in inspect.signature(function).parameters.values() if p.name not in ("self", "cls")]


# (the class, the prefix each of its methods is documented under)
FIXTURE_CLASSES = [
    (Autograd, "autograd."),
    (GradeRng, "grade_rng."),
    (Submission, "proxy."),
    (StudentFunction, "proxy.func."),
]


def test_every_fixture_method_and_each_of_its_parameters_is_in_the_reference():
    missing = []
    for cls, prefix in FIXTURE_CLASSES:
        for name, method in _public_methods(cls).items():
            try:
                bullet = _bullet(f"`{prefix}{name}(")
            except AssertionError as exc:
                missing.append(str(exc))
                continue
            missing += [f"{prefix}{name}: {p}" for p in _parameters(method) if p not in _words(bullet)]
    for name in ("module", "qualname", "trace", "traces"):
        assert (
            f"`proxy.{name}`" in REFERENCE or f"`proxy.func.{name}`" in REFERENCE or f"`submission.{name}`" in REFERENCE
        ), name
    for field in dataclasses.fields(GradeRng):
        assert f"`grade_rng.{field.name}`" in REFERENCE, field.name
    # the fixture itself: submission(module, *, numpy_only=..., ...)
    call = _bullet("`submission(")
    missing += [f"submission: {p}" for p in _parameters(Submissions.__call__) if p not in _words(call)]
    assert missing == []


def test_the_markers_keywords_and_input_classes_are_in_the_reference():
    keywords = set(re.findall(r'kwargs\.get\("(\w+)"', inspect.getsource(inspect.getmodule(spec_of))))
    assert {"concept", "points", "hidden"} <= keywords  # the parsing of the source still finds them
    marker = _bullet("`pytest.mark.grade(")
    assert sorted(k for k in keywords if f"{k}=" not in marker) == []
    assert [c for c in INPUT_CLASSES if f'"{c}"' not in AUTHORS] == []


def test_every_public_name_of_the_package_is_in_the_reference():
    assert [n for n in pytest_autograd_grader._PUBLIC if f"`{n}`" not in REFERENCE and f"`{n}(" not in REFERENCE] == []
    # the signatures of the public functions and classes, keyword by keyword
    missing = []
    for name in pytest_autograd_grader._PUBLIC:
        value = getattr(pytest_autograd_grader, name)
        if not callable(value) or name in (
            "TensorRecord",
            "ErrorRecord",
            "ObjectRecord",
            "Trace",
            "RaisedError",
            "Retained",
            "StudentFunction",
        ):
            continue  # records are told field by field below
        found = re.search(r"`" + re.escape(name) + r"\(([^`]*)\)`", REFERENCE)
        if found is None:
            missing.append(f"{name}: no `{name}(...)` signature")
            continue
        missing += [f"{name}: {p}" for p in _parameters(value) if p not in _words(found.group(1))]
    assert missing == []


def test_every_field_of_the_records_and_the_trace_is_in_the_reference():
    classes = [
        records.TensorRecord,
        records.ErrorRecord,
        records.ObjectRecord,
        tracing.Op,
        tracing.BackwardCall,
        call_facts.RaisedError,
        call_facts.Retained,
        tracing.Trace,
    ]
    missing = []
    for cls in classes:
        bullet = _bullet(f"`{cls.__name__}`")
        names = [f.name for f in dataclasses.fields(cls)]
        names += [n for n, v in vars(cls).items() if not n.startswith("_") and (isinstance(v, property) or callable(v))]
        missing += [f"{cls.__name__}.{n}" for n in names if f"`{n}" not in bullet]
    missing += [f"Trace.tampered: {t}" for t in tracing.TAMPERED if f"`{t}`" not in REFERENCE]
    missing += [
        f"expect_error: {e}"
        for e in misconceptions.AUTOGRAD_ERRORS
        if f"`{e}`" not in _bullet("`autograd.expect_error(")
    ]
    missing += [
        f"Context: {f.name}"
        for f in dataclasses.fields(misconceptions.Context)
        if f.name not in _words(_bullet("diagnoses: `Context("))
    ]
    assert missing == []


def test_every_op_name_the_trace_gives_a_meaning_is_in_the_reference():
    special = (
        set(tracing.FACTORIES)
        | set(tracing._PROPERTIES)
        | set(tracing._MODE_SWITCHES)
        | set(tracing._BACKWARD.values())
        | set(misconceptions.COPIES_MEMORY)
        | set(misconceptions.SHARES_MEMORY)
    )
    assert sorted(n for n in special if f"`{n}`" not in REFERENCE) == []


def test_every_kind_of_engine_program_is_in_the_reference():
    from pytest_autograd_grader.engine_fuzz import KINDS
    from pytest_autograd_grader.engine_fuzz.programs import GENERATORS

    assert KINDS == tuple(GENERATORS)  # fuzz_engine accepts every kind the fuzzer draws
    assert [k for k in KINDS if f"`{k}`" not in _bullet("the engine track: `fuzz_engine(")] == []


def test_the_hooks_are_in_the_authors_section():
    hooks = [n for n in vars(hookspecs) if n.startswith("pytest_grade_")]
    assert hooks and [h for h in hooks if f"`{h}(" not in AUTHORS] == []


# the API reference's table of op names: what each row's code records, run under the grader's recorder
RECORD_ROWS = textwrap.dedent("""
    import json, sys
    import torch
    from pytest_autograd_grader.boundary import tracing

    out = []
    for code, no_grad in json.loads(sys.argv[1]):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        w = torch.tensor([3.0, 4.0])
        y = (x * w).sum()
        y.backward(retain_graph=True)
        names = dict(torch=torch, x=x, w=w, y=y, t=torch.zeros(2))
        with torch.set_grad_enabled(not no_grad), tracing.recorder() as rec:
            exec(code, names)
        out.append([op[0] for op in rec.ops])
    print(json.dumps(out))
""")


def test_the_op_names_table_says_what_the_trace_records():
    rows = re.findall(r"^\| `([^`]+)`( \(under `no_grad`\))? \| ((?:`[^`]+`(?:, )?)+) \|$", REFERENCE, re.M)
    assert len(rows) >= 10, rows
    # in a process of its own: the recorder puts a counter in front of torch's autograd engine
    done = subprocess.run(
        [sys.executable, "-c", RECORD_ROWS, json.dumps([[code, bool(under)] for code, under, _ in rows])],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    recorded = json.loads(done.stdout)
    documented = [re.findall(r"`([^`]+)`", names) for _, _, names in rows]
    assert [(code, got) for (code, _, _), got, want in zip(rows, recorded, documented) if got != want] == []


# -- the reference generated from the docstrings -------------------------------

# the fixtures' classes a check meets as `autograd`, `grade_rng` and `submission`
FIXTURE_PATHS = {
    "checking.autograd.Autograd": Autograd,
    "checking.seeding.GradeRng": GradeRng,
    "boundary.submission.Submissions": Submissions,
    "boundary.submission.Submission": Submission,
    "boundary.submission.StudentFunction": StudentFunction,
}


def _generated_paths() -> list[str]:
    return re.findall(r"^::: pytest_autograd_grader\.(\S+)$", GENERATED, re.M)


def test_every_public_name_has_an_entry_generated_from_its_docstring():
    paths = _generated_paths()
    # an entry per public name, at the module that defines it (the package
    # imports each lazily, which mkdocstrings cannot follow)
    missing = [
        f"{module}.{name}" for name, module in pytest_autograd_grader._PUBLIC.items() if f"{module}.{name}" not in paths
    ]
    missing += [path for path in FIXTURE_PATHS if path not in paths]
    missing += ["hookspecs"] if "hookspecs" not in paths else []
    assert missing == [], f"docs/authors/api.md lacks ::: blocks for {missing}"


def test_every_generated_entry_names_a_documented_object():
    undocumented = []
    for path in _generated_paths():
        module, _, name = path.rpartition(".")
        try:
            value = getattr(importlib.import_module(f"pytest_autograd_grader.{module}"), name)
        except (ImportError, AttributeError):
            value = importlib.import_module(f"pytest_autograd_grader.{path}")  # a whole module
        if name == "COPIES_MEMORY":  # a constant: its docstring is the string after it
            source = inspect.getsource(importlib.import_module(f"pytest_autograd_grader.{module}"))
            if not re.search(r"^COPIES_MEMORY = .*\n\"\"\"\S", source, re.M):
                undocumented.append(path)
            continue
        if not (inspect.getdoc(value) or "").strip():
            undocumented.append(path)
    # and each public method of the fixtures' classes, which the entries list
    undocumented += [
        f"{cls.__name__}.{name}"
        for cls in FIXTURE_PATHS.values()
        for name, method in _public_methods(cls).items()
        if not (inspect.getdoc(method) or "").strip()
    ]
    assert undocumented == []

"""The shipped course's planted mistakes, read from mistakes/<topic>/<name>.py
(the files `autograd-grader audit` reads) back into the ``Mistake``s that
conftest.assert_planted grades.

A file is a whole module: the reference solution with one function wrong,
whose docstring's first line says what is wrong, then the fields
``check: test_<function>`` (or the checks that must catch it, separated by
", ") and ``expected diagnosis: <id>[, <id>...]``. What only the tests assert
of a mistake (more texts, a partial score, texts that must be absent) stays
in its topic's test file, as an ``Expect`` per name (``planted``) or the
list of what else its feedback says (``planted_named``); the tests that
grade bundles of plantings by index or by variant name build them from the
files with ``planted_source`` and ``planted_module``."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

from conftest import REPO, SOLUTIONS, Mistake, grade_variants, solution_with_all

MISTAKES_DIR = REPO / "mistakes"


class Expect(NamedTuple):
    """What a topic's test asserts of one planted mistake beyond its file."""

    texts: tuple = ()  # more text the feedback must hold
    score: float = 0
    absent: tuple = ()  # text the feedback must not hold


class Planted(NamedTuple):
    name: str
    what: str
    fields: dict  # docstring field -> value ("check", "expected diagnosis")
    module: str  # the whole file


def read_planted(path: Path) -> Planted:
    text = path.read_text()
    doc = ast.get_docstring(ast.parse(text)) or ""
    what, *rest = doc.splitlines() or [""]
    fields = {}
    for line in rest:
        key, colon, value = line.partition(":")
        if colon and key.strip():
            fields[key.strip()] = value.strip()
    return Planted(path.stem, what.strip(), fields, text)


def topic_files(topic: str) -> list[Path]:
    """The planted mistakes of ``topic``, by name (``_``-files are not)."""
    return sorted(p for p in (MISTAKES_DIR / topic).glob("*.py") if not p.name.startswith("_"))


def _statement_lines(node: ast.stmt) -> tuple[int, int]:
    decorators = getattr(node, "decorator_list", None)
    return (decorators[0].lineno if decorators else node.lineno) - 1, node.end_lineno


def changed_source(topic: str, module: str) -> str:
    """The top-level statements of ``module`` that differ from or are absent
    in ``topic``'s reference solution (its docstring aside), each run of
    neighbouring ones with the text between them: the wrong function and any
    helper it defines, as source that replaces the function in the solution."""
    solution = {ast.dump(node) for node in ast.parse((SOLUTIONS / f"{topic}.py").read_text()).body}
    lines = module.splitlines(keepends=True)
    body = ast.parse(module).body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]
    runs: list[list[int]] = []
    previous_changed = False
    for node in body:
        changed = ast.dump(node) not in solution
        if changed:
            start, end = _statement_lines(node)
            if previous_changed:
                runs[-1][1] = end
            else:
                runs.append([start, end])
        previous_changed = changed
    return "\n\n\n".join("".join(lines[start:end]).strip("\n") for start, end in runs) + "\n"


# topic -> the names planted_source gave out: what a test module's VARIANTS use
SOURCES_USED: dict[str, set[str]] = {}


def planted_source(topic: str, name: str) -> str:
    """The source that plants mistakes/<topic>/<name>.py into the reference
    solution (its changed definitions), for the tests that grade bundles of
    plantings by index (conftest.grade_planted)."""
    SOURCES_USED.setdefault(topic, set()).add(name)
    return "\n" + changed_source(topic, (MISTAKES_DIR / topic / f"{name}.py").read_text())


def planted_module(topic: str, *names: str) -> str:
    """The reference solution with every named mistake of ``topic`` planted
    (each replaces the solution's definition it changes): a bundle of
    mistakes in different functions, graded in one module."""
    solution = {
        node.name
        for node in ast.parse((SOLUTIONS / f"{topic}.py").read_text()).body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef))
    }
    replacements = {}
    for name in names:
        source = planted_source(topic, name)
        (function,) = {
            node.name for node in ast.parse(source).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
        } & solution
        replacements[function] = source
    return solution_with_all(topic, replacements)


def as_mistake(topic: str, planted: Planted, expect: Expect) -> Mistake:
    ids = tuple(i.strip() for i in planted.fields.get("expected diagnosis", "").split(",") if i.strip())
    diagnosis = ids[0] if len(ids) == 1 else ids or None
    function = planted.fields["check"].removeprefix("test_")
    return Mistake(
        function,
        planted.what,
        "\n" + changed_source(topic, planted.module),
        diagnosis,
        expect.texts,
        expect.score,
        expect.absent,
    )


def planted(topic: str, expect: dict[str, Expect]) -> list[Mistake]:
    """Every planted mistake of ``topic`` as a ``Mistake``, with the test's
    ``expect`` for it where it has one (every name there must be a file)."""
    files = {path.stem: read_planted(path) for path in topic_files(topic)}
    stale = sorted(set(expect) - set(files))
    assert not stale, f"expectations for mistakes that are not in mistakes/{topic}/: {stale}"
    return [as_mistake(topic, found, expect.get(name, Expect())) for name, found in files.items()]


def planted_named(topic: str, extra: dict[str, list]) -> dict[str, dict[str, list]]:
    """For conftest.assert_diagnosed: {name: {its check: what its feedback
    says}}, the file's expected diagnoses and the test's ``extra`` for it."""
    files = {path.stem: read_planted(path) for path in topic_files(topic)}
    stale = sorted(set(extra) - set(files))
    assert not stale, f"expectations for mistakes that are not in mistakes/{topic}/: {stale}"
    wanted = {}
    for name, found in files.items():
        ids = [i.strip() for i in found.fields.get("expected diagnosis", "").split(",") if i.strip()]
        wanted[name] = {found.fields["check"]: ids + list(extra.get(name, ()))}
    return wanted


def grade_planted_named(pytester, topic: str, right: dict[str, dict[str, str]]) -> dict[str, dict[str, list]]:
    """Grade every planted mistake of ``topic`` (its own check only) and the
    correct styles ``right`` ({name: {function: source}}, every check) under
    the 20 seeds in one session, at most one mistake per function in each
    module (as conftest.assert_planted). Returns {name: {test name: results}}
    for the mistakes and the styles."""
    versions: list[dict[str, str]] = []  # function -> the mistake's name
    mistakes = {
        name: as_mistake(topic, read_planted(MISTAKES_DIR / topic / f"{name}.py"), Expect())
        for name in (path.stem for path in topic_files(topic))
    }
    for name, mistake in mistakes.items():
        version = next((v for v in versions if mistake.function not in v), None)
        if version is None:
            versions.append(version := {})
        version[mistake.function] = name
    modules = {
        f"version{i}": solution_with_all(topic, {f: mistakes[n].source for f, n in version.items()})
        for i, version in enumerate(versions)
    }
    keep = {f"version{i}": [f"test_{f}" for f in version] for i, version in enumerate(versions)}
    modules.update({name: solution_with_all(topic, functions) for name, functions in right.items()})
    results = grade_variants(pytester, topic, modules, keep=keep)
    graded = {name: results[name] for name in right}
    for i, version in enumerate(versions):
        for function, name in version.items():
            graded[name] = {f"test_{function}": results[f"version{i}"][f"test_{function}"]}
    return graded

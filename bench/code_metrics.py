"""The package's size, complexity and private-pytest-API figures, for a
before/after comparison (issue 45's closing note):

    python bench/code_metrics.py                                  # this checkout
    python bench/code_metrics.py /tmp/old/pytest_autograd_grader  # another one

Printed: modules and the largest; functions over complexity 10 as ruff's
C901 sees them with no configuration and every `noqa` ignored (the true
count), and separately what CI's ruff sees with the checkout's own
pyproject.toml (noqa honoured); functions over 50 lines, over 50
statements and over 10 parameters; the longest function; uses of pytest's
private API outside pytest_internals.py (the scan of
tests/test_pytest_internals.py); the share of annotated parameters.
Needs ruff (the test extra). The symlinked course (curriculum/) is left out.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# the scan tests/test_pytest_internals.py holds the package to
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from private_pytest_api import object_name, private_uses  # noqa: E402

DEFAULT_PACKAGE = Path(__file__).resolve().parents[1] / "pytest_autograd_grader"
SKIPPED = ("curriculum",)
ADAPTER = "pytest_internals.py"
BUDGET = {"complexity": 10, "lines": 50, "statements": 50, "parameters": 10}
BUDGET_NOQA = re.compile(r"#\s*noqa:[^#\n]*\b(C901|PLR0913|PLR0915)\b")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Function:
    module: str
    name: str
    line: int
    length: int  # lines from the def (decorators left out) to the last line of its body


def modules(package: Path) -> list[Path]:
    """The package's Python files, the symlinked course left out."""
    return sorted(
        path for path in package.rglob("*.py") if not any(part in SKIPPED for part in path.relative_to(package).parts)
    )


def functions(package: Path, tree_of: dict[Path, ast.Module]) -> list[Function]:
    found = []
    for path, tree in tree_of.items():
        for node, qualname in _defs(tree, ""):
            end = node.end_lineno or node.lineno
            found.append(Function(str(path.relative_to(package)), qualname, node.lineno, end - node.lineno + 1))
    return found


def _defs(node: ast.AST, prefix: str) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, FUNCTIONS + (ast.ClassDef,)):
            qualname = f"{prefix}{child.name}"
            if isinstance(child, FUNCTIONS):
                yield child, qualname
            yield from _defs(child, qualname + ".")
        else:
            yield from _defs(child, prefix)


def ruff_findings(package: Path, rules: str, *, isolated: bool) -> list[dict]:
    """ruff's findings of these rules: isolated, at the budget with no noqa
    honoured; otherwise as CI runs it, with the checkout's own settings."""
    command = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "json", "--exit-zero"]
    if isolated:
        command += [
            "--isolated",
            "--ignore-noqa",
            "--select",
            rules,
            "--config",
            f"lint.mccabe.max-complexity={BUDGET['complexity']}",
            "--config",
            f"lint.pylint.max-statements={BUDGET['statements']}",
            "--config",
            f"lint.pylint.max-args={BUDGET['parameters']}",
        ]
    command += ["--extend-exclude", ",".join(SKIPPED), str(package)]
    # from the checkout's root, where CI runs it and finds its pyproject.toml
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=package.parent)
    wanted = set(rules.split(","))
    return [finding for finding in json.loads(done.stdout) if finding["code"] in wanted]


def complexity_of(finding: dict) -> int:
    """The complexity in a C901 message: "`name` is too complex (14 > 10)"."""
    return int(finding["message"].rsplit("(", 1)[1].split()[0])


def _underscored(tree: ast.Module) -> Iterator[str]:
    """Every _pytest import and underscored attribute but self's, and
    underscored string constants (names looked up with getattr)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("_pytest"):
            yield node.module or ""
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("_pytest"))
        elif isinstance(node, ast.Attribute) and _is_private_name(node.attr) and object_name(node.value) != "self":
            yield node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _is_private_name(node.value):
            yield node.value


def _is_private_name(name: str) -> bool:
    return re.fullmatch(r"_[a-z]\w*", name) is not None


def annotated_parameters(tree_of: dict[Path, ast.Module]) -> tuple[int, int, int, int]:
    """(annotated, all) parameters of every function, a method's self or cls
    left out, then (annotated, all) returns."""
    annotated = total = returns = functions = 0
    for tree in tree_of.values():
        for node, _ in _defs(tree, ""):
            params = [
                *node.args.posonlyargs,
                *node.args.args,
                *node.args.kwonlyargs,
                *filter(None, (node.args.vararg, node.args.kwarg)),
            ]
            params = [p for p in params if p.arg not in ("self", "cls")]
            total += len(params)
            annotated += sum(p.annotation is not None for p in params)
            functions += 1
            returns += node.returns is not None
    return annotated, total, returns, functions


def _where(finding: dict, package: Path) -> str:
    return f"{Path(finding['filename']).relative_to(package.resolve())}:{finding['location']['row']}"


def report_modules(package: Path, paths: list[Path]) -> None:
    lengths = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in paths}
    largest = max(lengths, key=lambda path: lengths[path])
    over = sum(n > 420 for n in lengths.values())
    print(
        f"modules: {len(paths)}, {sum(lengths.values())} lines; largest: "
        f"{largest.relative_to(package)} ({lengths[largest]} lines); over 420 lines: {over}"
    )


def report_complexity(package: Path) -> None:
    true = sorted(ruff_findings(package, "C901", isolated=True), key=complexity_of, reverse=True)
    print(f"functions over complexity {BUDGET['complexity']} (ruff C901, no config, noqa ignored): {len(true)}")
    for finding in true[:10]:
        print(f"    {complexity_of(finding):3d}  {_where(finding, package)}  {finding['message'].split()[0]}")
    ci = ruff_findings(package, "C901,PLR0913,PLR0915", isolated=False)
    by_rule = {rule: sum(f["code"] == rule for f in ci) for rule in ("C901", "PLR0915", "PLR0913")}
    print(f"what CI's ruff sees (the checkout's pyproject.toml, noqa honoured): {by_rule}")
    marked = [
        f"{path.relative_to(package)}:{number}"
        for path in modules(package)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if BUDGET_NOQA.search(line)
    ]
    print(f"budget exceptions marked noqa: {len(marked)}" + "".join(f"\n    {where}" for where in marked))


def report_sizes(package: Path, found: list[Function]) -> None:
    statements = ruff_findings(package, "PLR0915", isolated=True)
    parameters = ruff_findings(package, "PLR0913", isolated=True)
    over_lines = sorted((f for f in found if f.length > BUDGET["lines"]), key=lambda f: -f.length)
    print(
        f"functions: {len(found)}; over {BUDGET['lines']} lines: {len(over_lines)}; "
        f"over {BUDGET['statements']} statements: {len(statements)}; "
        f"over {BUDGET['parameters']} parameters: {len(parameters)}"
    )
    for finding in parameters:
        print(f"    {_where(finding, package)}  {finding['message']}")
    if found:
        longest = max(found, key=lambda f: f.length)
        print(f"longest function: {longest.module}:{longest.line} {longest.name} ({longest.length} lines)")
    for function in over_lines[:10]:
        print(f"    {function.length:4d}  {function.module}:{function.line} {function.name}")


def report_private_api(package: Path, tree_of: dict[Path, ast.Module]) -> None:
    outside = {path: uses for path, tree in tree_of.items() if path.name != ADAPTER if (uses := private_uses(tree))}
    inside = {use for path, tree in tree_of.items() if path.name == ADAPTER for use in _underscored(tree)}
    print(
        f"private pytest API uses outside {ADAPTER}: {sum(map(len, outside.values()))} "
        f"in {len(outside)} modules; private names the adapter touches: {len(inside)} ({', '.join(sorted(inside))})"
    )
    for path, uses in outside.items():
        print(f"    {path.relative_to(package)}: {', '.join(sorted(set(uses)))}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "package",
        nargs="?",
        type=Path,
        default=DEFAULT_PACKAGE,
        help="the package folder (default: this checkout's pytest_autograd_grader)",
    )
    package = parser.parse_args(argv).package.resolve()
    if not (package / "__init__.py").is_file():
        parser.error(f"{package} is not a package folder (it has no __init__.py)")
    paths = modules(package)
    tree_of = {path: ast.parse(path.read_text(encoding="utf-8"), str(path)) for path in paths}
    print(f"package: {package}")
    report_modules(package, paths)
    report_complexity(package)
    report_sizes(package, functions(package, tree_of))
    report_private_api(package, tree_of)
    annotated, total, returns, functions_ = annotated_parameters(tree_of)
    print(
        f"annotated parameters: {annotated}/{total} ({100 * annotated / max(total, 1):.0f} %); "
        f"annotated returns: {returns}/{functions_} ({100 * returns / max(functions_, 1):.0f} %)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

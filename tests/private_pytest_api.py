"""The scan for pytest's private API in the package's source: what
tests/test_pytest_internals.py forbids outside pytest_internals.py, and what
bench/code_metrics.py counts (on any checkout)."""

from __future__ import annotations

import ast

# the names pytest's objects go by in the package (and in pytest's own hooks)
PYTEST_OBJECTS = {
    "session",
    "item",
    "config",
    "early_config",
    "tr",
    "terminalreporter",
    "reporter",
    "request",
    "node",
    "report",
    "rep",
    "call",
    "pluginmanager",
    "parser",
    "metafunc",
    "collector",
    "excinfo",
    "fixturedef",
}


def private_uses(source: str | ast.Module) -> list[str]:
    """Each import of _pytest, and each underscored attribute read or
    written on a name pytest's objects go by (``session._setupstate``,
    ``tr._tw``, ``item.config._x``), in ``source`` (text or a parsed module)."""
    found = []
    tree = ast.parse(source) if isinstance(source, str) else source
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "_pytest"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "_pytest":
            found.append(node.module)
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if (name := object_name(node.value)) in PYTEST_OBJECTS:
                found.append(f"{name}.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and len(node.args) >= 2
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and object_name(node.args[0]) in PYTEST_OBJECTS
            and leading_text(node.args[1]).startswith("_")
        ):
            found.append(f"{node.func.id}({object_name(node.args[0])}, {leading_text(node.args[1])!r}...)")
    return found


def object_name(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def leading_text(node: ast.expr) -> str:
    """The text a string argument starts with (an f-string's first part)."""
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[0]
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""

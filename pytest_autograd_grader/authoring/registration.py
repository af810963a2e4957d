"""A new topic's concept and messages in the course's ``exercises/conftest.py``.

The registration is one marked block of its own: hook implementations
named ``pytest_grade_concepts_<topic>`` and ``pytest_grade_messages_<topic>``
that pluggy calls as ``pytest_grade_concepts`` and ``pytest_grade_messages``
(``specname=``). So an existing conftest is only added to, never edited:
its own hooks, however they are written, keep working, and each later
topic adds its block the same way.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

from .topic_files import Topic

HEADER = '''"""The course's own registrations, found by pytest beside its checks in
every layout (self-check, instructor CI, a class run): its concepts, and
its messages in English and Chinese (the pytest_grade_concepts and
pytest_grade_messages hooks)."""
'''


@dataclass(frozen=True)
class Registration:
    text: str  # the whole conftest to write, or "" when it cannot be edited safely
    block: str  # what the topic adds, for the author to paste when text is None
    exists: bool  # whether the conftest was there before
    problem: str = ""  # why it cannot be edited safely (a message id), or ""


def registration(conftest: Path, topic: Topic) -> Registration:
    """The conftest with ``topic``'s block added (or a new one)."""
    if not conftest.exists() and not conftest.is_symlink():
        text = block(topic, with_concept=True, imports=_imports(topic, True, set(), appended=False))
        return Registration(HEADER + "\n" + text, text, exists=False)
    source, tree, problem = _read(conftest)
    registered = tree is not None and topic.concept in _concept_ids(tree)
    bound = _imported(tree) if tree is not None else set()
    text = block(topic, with_concept=not registered, imports=_imports(topic, not registered, bound, appended=True))
    if tree is not None:  # read and parsed: no problem so far
        problem = _clash(tree, topic)
    if problem:
        return Registration("", text, exists=True, problem=problem)
    joined = source.rstrip("\n") + "\n\n\n" + text
    try:
        ast.parse(joined)
    except SyntaxError:
        return Registration("", text, exists=True, problem="new_topic.conftest_unparsable")
    return Registration(joined, text, exists=True)


def _imported(tree: ast.Module) -> set[str]:
    """What the file's top-level imports bind: ``pytest`` for ``import
    pytest``, ``pytest_autograd_grader.Concept`` for its ``from`` import."""
    bound = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            bound |= {alias.name for alias in node.names if alias.asname is None}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            bound |= {f"{node.module}.{alias.name}" for alias in node.names if alias.asname is None}
    return bound


def _imports(topic: Topic, with_concept: bool, bound: set[str], appended: bool) -> str:
    """The block's import lines, less those the file has already."""
    noqa = "  # noqa: E402" if appended else ""  # imports below code, on purpose
    lines = [] if "pytest" in bound else [f"import pytest{noqa}"]
    if with_concept and "pytest_autograd_grader.Concept" not in bound:
        lines += [f"from pytest_autograd_grader import Concept{noqa}"]
    return "\n\n".join(lines) + "\n\n" if lines else ""


def _read(conftest: Path) -> tuple[str, ast.Module | None, str]:
    if conftest.is_symlink() or not conftest.is_file():
        return "", None, "new_topic.conftest_not_file"
    try:
        source = conftest.read_text(encoding="utf-8")
        return source, ast.parse(source), ""
    except (OSError, UnicodeDecodeError, ValueError):
        return "", None, "new_topic.conftest_unreadable"
    except SyntaxError:
        return "", None, "new_topic.conftest_unparsable"


def _concept_ids(tree: ast.Module) -> set[str]:
    """The ids of the ``Concept("id", ...)`` calls written in the file."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if callee == "Concept" and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def _clash(tree: ast.Module, topic: Topic) -> str:
    """A message id when the file already defines a name of the block or
    holds one of its message ids (a second run, or an author's own)."""
    names = {_messages_name(topic), f"pytest_grade_concepts_{topic.name}", f"pytest_grade_messages_{topic.name}"}
    for node in ast.walk(tree):
        defined = (
            {getattr(node, "name", None), getattr(node, "id", None)}
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Name))
            else set()
        )
        if defined & names:
            return "new_topic.conftest_has_block"
        if isinstance(node, ast.Constant) and node.value in (topic.label, topic.diagnosis):
            return "new_topic.conftest_has_block"
    return ""


def _literal(text: str) -> str:
    """A Python string literal of one printable line, in double quotes."""
    return json.dumps(text, ensure_ascii=False)


def _messages_name(topic: Topic) -> str:
    return f"{topic.name.upper()}_MESSAGES"


def block(topic: Topic, with_concept: bool, imports: str) -> str:
    """The topic's registration: its messages, and its concept unless the
    course registers that concept already."""
    title = topic.title.replace("{", "{{").replace("}", "}}")  # a message text: braces are fields
    concept_en = f'        "concept.{topic.concept}": {_literal(title)},\n' if with_concept else ""
    concept_zh = (
        f'        "concept.{topic.concept}": {_literal(title)},  # translate the title\n' if with_concept else ""
    )
    hook = (
        f"""

@pytest.hookimpl(specname="pytest_grade_concepts")
def pytest_grade_concepts_{topic.name}(config):
    # Concept(id, title, the idea a student must show): fill in the third.
    return [Concept({_literal(topic.concept)}, {_literal(topic.title)}, "")]
"""
        if with_concept
        else ""
    )
    return f'''# --- topic {topic.name} (written by autograd-grader new-topic; edit freely) ---
# specname= makes these two functions more implementations of the
# pytest_grade_concepts / pytest_grade_messages hooks, beside any others here.
{imports}{_messages_name(topic)} = {{
    "en": {{
{concept_en}        "{topic.label}": "x.grad with d = {{d}}",
        "{topic.diagnosis}": "x.grad is d = {{d}} times too large: divide L by d before you call L.backward().",
    }},
    "zh": {{
{concept_zh}        "{topic.label}": "d = {{d}} 时的 x.grad",
        "{topic.diagnosis}": "x.grad 大了 d = {{d}} 倍：请先把 L 除以 d，再调用 L.backward()。",
    }},
}}
{hook}

@pytest.hookimpl(specname="pytest_grade_messages")
def pytest_grade_messages_{topic.name}(config):
    return {_messages_name(topic)}
# --- end of topic {topic.name} ---
'''

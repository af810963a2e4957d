"""The shipped course's planted mistakes (mistakes/<topic>/<name>.py, what
`autograd-grader audit` reads): each a whole module with one wrong answer
and the fields the audit and the topic tests read, each graded by its
topic's test, and no test expects one that is gone."""

import ast
import importlib
import re

import pytest
from conftest import EN, EXERCISES, REPO, SOLUTIONS
from planted_mistakes import MISTAKES_DIR, SOURCES_USED, changed_source, read_planted, topic_files

FILES = sorted(MISTAKES_DIR.glob("*/*.py"))
# the calls a topic test grades its folder with (planted_mistakes.planted, planted_named)
GRADES_FOLDER = re.compile(r"\bplanted(_named)?\(TOPIC, EXPECT\)")


def _names(source: str) -> set[str]:
    return {node.name for node in ast.parse(source).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def test_the_shipped_course_has_planted_mistakes():
    assert len(FILES) >= 70
    assert {path.parent.name for path in FILES} <= {path.stem for path in SOLUTIONS.glob("*.py")}


@pytest.mark.parametrize("path", FILES, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_a_planted_mistake_is_the_solution_with_one_function_wrong(path):
    topic = path.parent.name
    planted = read_planted(path)
    assert planted.what and not planted.what.startswith(("check:", "expected diagnosis:")), planted.what
    assert not path.name.startswith("_") and re.fullmatch(r"[a-z][a-z0-9_]*", path.stem)
    compile(planted.module, str(path), "exec")
    checks = planted.fields["check"].split(", ")
    for check in checks:
        assert re.search(rf"^def {check}\(", (EXERCISES / f"test_{topic}.py").read_text(), re.M), check
    changed = _names(changed_source(topic, planted.module))
    solution = _names((SOLUTIONS / f"{topic}.py").read_text())
    assert changed & solution, f"{path} changes no function of the solution"
    function = checks[0].removeprefix("test_")
    if len(checks) == 1 and function in solution:  # the check test_<function> grades <function>
        assert function in changed, f"{path}: {function} is the solution's"
    for message_id in filter(None, planted.fields.get("expected diagnosis", "").split(", ")):
        assert message_id in EN, f"{path}: unknown diagnosis {message_id!r}"


def _topic_tests() -> dict[str, object]:
    found = {}
    for path in sorted((REPO / "tests").glob("test_topic_*.py")):
        text = path.read_text()
        if GRADES_FOLDER.search(text):
            module = importlib.import_module(path.stem)
            found[module.TOPIC] = module
        elif "planted_source(TOPIC" in text or "planted_module(TOPIC" in text:  # VARIANTS name every file
            module = importlib.import_module(path.stem)
            assert SOURCES_USED[module.TOPIC] == {p.stem for p in topic_files(module.TOPIC)}, path.name
            found[module.TOPIC] = module
    return found


def test_every_planted_mistake_is_graded_and_every_expectation_names_one():
    tests = _topic_tests()
    # the engine's: every one by test_engine_fuzz, some in the sandbox too
    engine_mistakes, fuzz, engine = (
        importlib.import_module(name) for name in ("engine_mistakes", "test_engine_fuzz", "test_topic_engine")
    )
    names = {path.stem for path in topic_files("engine")}
    assert fuzz.MISTAKES is engine_mistakes.MISTAKES and set(engine_mistakes.MISTAKES) == names
    assert set(engine.SANDBOXED) | set(engine_mistakes.ALSO) <= names
    tests["engine"] = engine_mistakes
    folders = {path.parent.name for path in FILES}
    assert folders - set(tests) == set(), "planted mistakes no topic test grades"
    for topic, module in tests.items():
        names = {path.stem for path in topic_files(topic)}
        assert names, f"{module.__name__} grades mistakes/{topic}/, which is empty"
        assert set(getattr(module, "EXPECT", ())) - names == set(), f"{module.__name__} expects mistakes that are gone"

"""The shipped course's concepts and messages for the checks the tests write
or copy without the course's conftest.py.

Those checks use the shipped course's concept ids (concept="leaf") and
message ids, as checks written before the course moved out of the grader did.
tests/conftest.py loads this plugin into every pytest run a test starts
(PYTEST_PLUGINS, in-process and in subprocesses); what it gives is read from
exercises/conftest.py and exercises/course_messages_*.py. The shipped course
itself does not need it: tests/test_course_messages.py grades exercises/
with it turned off (-p no:shipped_course_plugin).

PYTEST_DONT_REWRITE: tests/conftest.py imports it before the runs load it.
"""

from pathlib import Path

EXERCISES = Path(__file__).resolve().parent.parent / "exercises"


def _run(name: str) -> dict:
    namespace: dict = {"__file__": str(EXERCISES / name)}
    exec((EXERCISES / name).read_text(encoding="utf-8"), namespace)
    return namespace


def concepts() -> list:
    return _run("conftest.py")["CONCEPTS"]


def messages() -> dict[str, dict[str, str]]:
    return {"en": _run("course_messages_en.py")["EN"], "zh": _run("course_messages_zh.py")["ZH"]}


def pytest_grade_concepts(config):
    return concepts()


def pytest_grade_messages(config):
    return messages()

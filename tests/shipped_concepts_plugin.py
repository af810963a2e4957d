"""The shipped course's concepts for the checks the tests write themselves.

Those checks use the shipped course's concept ids (concept="leaf") without a
conftest.py of their own, as checks written before the course moved out of the
grader did. tests/conftest.py loads this plugin into every pytest run the tests
start (PYTEST_PLUGINS, in-process and in subprocesses); its concepts are
exercises/conftest.py's, read from there. A run of the shipped course itself
does not need it: tests/test_course_messages.py grades exercises/ with it
turned off (-p no:shipped_concepts_plugin).
"""

from pathlib import Path

EXERCISES = Path(__file__).resolve().parent.parent / "exercises"


def _concepts() -> list:
    namespace: dict = {"__file__": str(EXERCISES / "conftest.py")}
    exec((EXERCISES / "conftest.py").read_text(encoding="utf-8"), namespace)
    return namespace["CONCEPTS"]


def pytest_grade_concepts(config):
    return _concepts()

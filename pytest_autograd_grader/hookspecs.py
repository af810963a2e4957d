"""Hooks through which a course extends the grader.

Registered with ``pytest_addhooks``; implement them in a ``conftest.py`` next
to the checks or in a plugin. Each has a default implementation in the plugin
marked ``trylast``, so a course's implementation runs first.
"""

from __future__ import annotations

from typing import Any

import pytest

# Concept, CheckResult and Gradebook are named in words, not imported: the
# hooks sit below concepts and scoring in the package's layers (pyproject.toml)


@pytest.hookspec
def pytest_grade_concepts(config: pytest.Config) -> list[Any] | None:
    """Return a list of :class:`pytest_autograd_grader.concepts.Concept` a
    course grades under (the grader knows none of its own).

    Every implementation is called and the lists are merged; when two name the
    same id, the first one called wins. A concept's title in reports is the
    course's message ``concept.<id>`` in the run's language when it gives one
    (``pytest_grade_messages``), else ``Concept.title``.
    """


@pytest.hookspec(historic=True)
def pytest_grade_messages(config: pytest.Config) -> dict[str, dict[str, str]] | None:
    """Return a course's messages, ``{language: {message id: text}}``, added
    to the grader's catalogue (``pytest_autograd_grader.i18n``).

    Ids must not be the grader's own (prefix them with the course's name);
    one id has the same ``{fields}`` in every language. An id is looked up in
    the run's language (``--grade-lang``), then in English, then in any
    language the course gave. Historic: a conftest.py found during
    collection is called too, when it is registered.
    """


@pytest.hookspec(firstresult=True)
def pytest_grade_check_result(item: pytest.Item, result: Any) -> Any:
    """Adjust one check's result before it is reported.

    ``result`` is a :class:`pytest_autograd_grader.scoring.CheckResult`.
    Return a result (the same object changed, or a new one) to stop further
    implementations; the default returns ``result`` unchanged. Runs where the
    check ran, so under pytest-xdist it runs in the worker.
    """


@pytest.hookspec
def pytest_grade_gradebook(config: pytest.Config, gradebook: Any) -> None:
    """Receive the finished :class:`pytest_autograd_grader.scoring.Gradebook`
    once at the end of a graded session (in the controller under xdist).

    The default implementation, which writes the report files, runs last.
    """

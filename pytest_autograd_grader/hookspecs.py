"""Hooks through which a course extends the grader.

Registered with ``pytest_addhooks``; implement them in a ``conftest.py`` next
to the checks or in a plugin. Each has a default implementation in the plugin
marked ``trylast``, so a course's implementation runs first.
"""

from __future__ import annotations

import pytest


@pytest.hookspec
def pytest_grade_concepts(config):
    """Return a list of :class:`pytest_autograd_grader.concepts.Concept` a
    course grades under, in addition to the built-in twelve.

    Every implementation is called and the lists are merged; when two name the
    same id, the first one called wins.
    """


@pytest.hookspec(firstresult=True)
def pytest_grade_check_result(item, result):
    """Adjust one check's result before it is reported.

    ``result`` is a :class:`pytest_autograd_grader.scoring.CheckResult`.
    Return a result (the same object changed, or a new one) to stop further
    implementations; the default returns ``result`` unchanged. Runs where the
    check ran, so under pytest-xdist it runs in the worker.
    """


@pytest.hookspec
def pytest_grade_gradebook(config, gradebook):
    """Receive the finished :class:`pytest_autograd_grader.scoring.Gradebook`
    once at the end of a graded session (in the controller under xdist).

    The default implementation, which writes the report files, runs last.
    """

"""Every use of pytest's private API, in one place: nothing else in the
package imports ``_pytest`` or touches an underscored attribute of a pytest
object. Everything else goes through pytest's and pluggy's public API
(hooks, ``config.get_terminal_writer()``, ``session.shouldstop``,
``pluginmanager.subset_hook_caller`` to run pytest's own test loop).

The private uses, and why no public API serves:

``item._report_sections`` (read: ``report_sections``)
    A failed graded check's report is made without pytest's traceback
    (plugin.py, ``_FeedbackReports``): formatting it parses the source of
    every frame, most of the time a stub submission takes to grade. The
    report must still carry the captured output, which pytest keeps only
    there (``TestReport.from_item_and_call`` reads it the same way).
``item._report_sections`` (cleared), ``Function._initrequest()`` (``forget_run``)
    The class runner's one session per worker (classroom/session_loop.py)
    runs every check again for each student: the item must forget the last
    student's captured output, fixture values and request. pytest has no
    public way to run an item twice.
``session._shouldstop``, ``session._shouldfail`` (``unstop``)
    A student graded with ``-x`` stops the run; the next student starts
    anew. The public setters refuse to unset them (a warning, nothing done).
``session._setupstate.teardown_exact(None)`` (``teardown_all``)
    Nothing one student's run set up (a session fixture holding their
    values) may outlive it. pytest tears everything down only in its own
    ``pytest_sessionfinish``, which must not run between students.

Supported: pytest >=8.0,<10 (``SUPPORTED``, the bound in pyproject.toml),
checked on 8.0.0, 9.0.3 and 9.2.0; CI runs the adapter's and the class
runner's tests on the oldest allowed and on the newest (.ci/run). A pytest
without one of these things is refused loudly, with its version and what to
install (``check_supported``, which looks for each in pytest's code, importing
``_pytest.runner``: the class and audit commands before grading, a
``--grade`` run at its start), never quietly graded a slower way.
"""

from __future__ import annotations

import pytest

from .i18n import msg

# The range the adapter was checked on; pyproject.toml's bound says the same
# (tests/test_pytest_internals.py holds them equal).
SUPPORTED = ">=8.0,<10"

# what a --grade run uses; the class runner's one session per worker uses all
LONE_RUN = ("item._report_sections",)
CLASS_RUNNER = (
    "item._report_sections",
    "Function._initrequest",
    "session._shouldstop",
    "session._shouldfail",
    "session._setupstate.teardown_exact",
)


class UnsupportedPytest(RuntimeError):
    """This pytest lacks a private thing the grader relies on."""


def _unsupported(missing: list[str]) -> UnsupportedPytest:
    return UnsupportedPytest(
        msg("usage.pytest_unsupported", version=pytest.__version__, missing=", ".join(missing), supported=SUPPORTED)
    )


def _names(function: object) -> set[str]:
    """The attribute names a function's code reads or writes."""
    code = getattr(function, "__code__", None)
    return set(code.co_names) if code is not None else set()


def _present() -> dict[str, bool]:
    """Whether each private thing is there, seen without a session: the
    attributes pytest sets on instances are looked for in the code that
    sets them."""
    from _pytest import runner

    setup_state = getattr(runner, "SetupState", None)
    return {
        "item._report_sections": "_report_sections" in _names(pytest.Item.__init__),
        "Function._initrequest": callable(getattr(pytest.Function, "_initrequest", None)),
        "session._shouldstop": "_shouldstop" in _names(getattr(pytest.Session.shouldstop, "fget", None)),
        "session._shouldfail": "_shouldfail" in _names(getattr(pytest.Session.shouldfail, "fget", None)),
        "session._setupstate.teardown_exact": (
            callable(getattr(setup_state, "teardown_exact", None))
            and "_setupstate" in _names(getattr(runner, "pytest_sessionstart", None))
        ),
    }


def missing(needed: tuple[str, ...] = CLASS_RUNNER) -> list[str]:
    """The private things of ``needed`` this pytest lacks."""
    present = _present()
    return [name for name in needed if not present.get(name, False)]


def check_supported(needed: tuple[str, ...] = CLASS_RUNNER) -> None:
    """Raise ``UnsupportedPytest`` (its text names this pytest's version,
    what it lacks and the range to install) where something is missing."""
    lacking = missing(needed)
    if lacking:
        raise _unsupported(lacking)


def _attribute(owner: object, name: str, label: str):
    try:
        return getattr(owner, name)
    except AttributeError:
        raise _unsupported([label]) from None


def report_sections(item: pytest.Item) -> list[tuple[str, str, str]]:
    """(when, key, content) of what pytest captured for ``item`` so far."""
    return list(_attribute(item, "_report_sections", "item._report_sections"))


def forget_run(item: pytest.Item) -> None:
    """The item as collection left it, to run again: no captured output,
    fixture values or request of its last run."""
    _attribute(item, "_report_sections", "item._report_sections")
    item._report_sections = []
    if isinstance(item, pytest.Function):
        _attribute(item, "_initrequest", "Function._initrequest")()


def unstop(session: pytest.Session) -> None:
    """The session runs on, though its last run stopped early (-x, --maxfail)."""
    for name in ("_shouldstop", "_shouldfail"):
        _attribute(session, name, f"session.{name}")
        setattr(session, name, False)


def teardown_all(session: pytest.Session) -> None:
    """Tear down every fixture and node set up so far, the session's included."""
    setup_state = _attribute(session, "_setupstate", "session._setupstate.teardown_exact")
    _attribute(setup_state, "teardown_exact", "session._setupstate.teardown_exact")(None)

"""One pytest session per grading worker: the checks are configured and
collected once, then run again for each student.

Configuring pytest (its plugins, options and fixtures) and collecting the
checks cost about a sixth of what a student costs, and neither depends on
the student. A class worker therefore runs a single ``pytest --grade``
session over the checks with a placeholder submission, and its run loop
(this plugin's ``pytest_runtestloop``) grades every student it is sent:
the student's settings are read by the same code from the same options a
lone run is given, a new gradebook starts (holding the collection's
errors), pytest's own run loop runs every check, a new sandbox executor
serves them, and the session's end (the executor closed, the gradebook
finished, the report written) follows as in a lone run.

pytest's own loop is reached through pluggy's public ``subset_hook_caller``
(the ``pytest_runtestloop`` hook without this plugin); running an item
again and ending a student's run inside the session need pytest's private
API, which only ../pytest_internals.py touches (``forget_run``, ``unstop``,
``teardown_all``). The class command refuses a pytest that lacks it
(``check_supported``) rather than grade a session per student, slower.

What a check keeps between students is what it kept when every student had
a session of its own in the same worker: the checks' modules stay imported
either way. A failure of this machinery ends the loop; the worker grades
the students left in a session each.
"""

from __future__ import annotations

import gc
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


class StudentLoop:
    """The pytest plugin of a class worker's one session (see the module)."""

    def __init__(self, next_task: Callable[[], tuple | None], began: Callable[[], None], finish: Callable[..., None]):
        self.next_task = next_task  # the next (student, seed); None: stop
        self.began = began  # a student's clock starts
        self.finish = finish  # (student, seed, private json, pytest's exit code, what went wrong)
        self.left: tuple | None = None  # a task taken but not graded, when the loop broke

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        from ..session_state import state_of

        config = session.config
        state = state_of(config)
        if state is None or state.gradebook is None:
            return None  # not a graded session: pytest's own loop goes on
        failed, template = session.testsfailed, _options(config)
        # pytest's own loop (and the wrappers of other plugins): the hook without this plugin
        run_checks = config.pluginmanager.subset_hook_caller("pytest_runtestloop", remove_plugins=[self])
        gc.collect()
        gc.freeze()  # the session, its plugins and checks live as long as the worker: out of every collection
        pristine = {item: list(item.user_properties) for item in session.items}
        while (task := self.next_task()) is not None:
            student, seed = task
            self.began()
            tmp = Path(tempfile.mkdtemp(prefix="class-grade-"))
            private = tmp / "report.json"
            try:
                code, said = self._grade(session, run_checks, student, seed, private, failed, pristine, template[3])
            except Exception as exc:  # the grader's own failure: the rest get a session each
                shutil.rmtree(tmp, ignore_errors=True)
                self.left = task
                return _give_up(session, template, exc)
            try:
                self.finish(student, seed, private, code, said)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        _restore(config, template)
        return True

    def _grade(
        self,
        session: pytest.Session,
        run_checks: Callable,
        student,
        seed: int,
        private: Path,
        failed: int,
        pristine: dict,
        template_maxfail: int = 0,
    ) -> tuple[int, str]:
        """pytest's exit code for the student's run, and what it said of a
        run it refused (a lone run's error message)."""
        from ..pytest_internals import teardown_all, unstop

        config = session.config
        try:
            _take_student(config, student, seed, private)
            # a student graded with -x stops at its first failure past the collection's (Student.stop_first)
            config.option.maxfail = failed + 1 if student.stop_first else template_maxfail
        except pytest.UsageError as exc:
            return int(pytest.ExitCode.USAGE_ERROR), f"ERROR: {exc}"  # as a lone run: no report
        session.testsfailed = failed
        unstop(session)
        for item, properties in pristine.items():
            _fresh(item, properties)
        exitstatus = pytest.ExitCode.OK
        try:
            run_checks(session=session)
        except (session.Interrupted, session.Failed):
            exitstatus = pytest.ExitCode.INTERRUPTED  # --maxfail or -x in the checks' ini: stopped early
        finally:
            # nothing this student's run set up (a session fixture holding
            # their values) outlives it: pytest tears all down when it stops
            # a run itself, not when something else ends the loop
            teardown_all(session)
        if exitstatus == pytest.ExitCode.OK:
            exitstatus = (
                pytest.ExitCode.TESTS_FAILED
                if session.testsfailed
                else pytest.ExitCode.NO_TESTS_COLLECTED
                if not session.testscollected
                else pytest.ExitCode.OK
            )
        session.exitstatus = exitstatus
        _end(session, exitstatus)
        return int(session.exitstatus), ""


def _options(config: pytest.Config) -> tuple:
    option = config.option
    return option.grade_submission, option.grade_seed, option.grade_json_private, option.maxfail


def _restore(config: pytest.Config, template: tuple) -> None:
    """The placeholder's settings again, for the session's own end."""
    from .. import options
    from ..session_state import SETTINGS, state_of

    option = config.option
    option.grade_submission, option.grade_seed, option.grade_json_private, option.maxfail = template
    state = state_of(config)
    assert state is not None  # a session the class runner drives grades
    state.settings = config.stash[SETTINGS] = options.read_settings(config)


def _grade_session(config: pytest.Config) -> Any:
    """The plugin's session object (plugin.py registers it as "grade-session")."""
    plugin = config.pluginmanager.get_plugin("grade-session")
    assert plugin is not None  # registered by --grade, which every class session is given
    return plugin


def _give_up(session: pytest.Session, template: tuple, exc: Exception) -> bool:
    session.shouldstop = f"the class runner's session loop failed: {type(exc).__name__}: {exc}"
    try:
        _restore(session.config, template)
    except Exception:
        pass
    return True


def _take_student(config: pytest.Config, student, seed: int, private: Path) -> None:
    """The student's settings, read from the options as a lone run reads
    them (UsageError where a lone run would stop with one), a new sandbox
    executor and a new gradebook."""
    from .. import options
    from ..fixtures import forget_executor
    from ..session_state import SETTINGS, state_of

    config.option.grade_submission = str(student.modules)
    config.option.grade_seed = str(seed)
    config.option.grade_json_private = str(private)
    state = state_of(config)
    assert state is not None  # a session the class runner drives grades
    state.settings = config.stash[SETTINGS] = options.read_settings(config)
    forget_executor(config)
    _grade_session(config).start_gradebook()


def _fresh(item: pytest.Item, properties: list) -> None:
    """The item as collection left it: no fixture values, captured output,
    credit or place of the last student's run."""
    from ..boundary.blame import forget_student_values
    from ..pytest_internals import forget_run
    from ..session_state import CREDIT, PLACE

    forget_run(item)  # captured output, fixture values and request
    item.user_properties = list(properties)
    keys: tuple[pytest.StashKey[Any], ...] = (CREDIT, PLACE)
    for key in keys:
        if key in item.stash:
            del item.stash[key]
    forget_student_values(item)


def _end(session: pytest.Session, exitstatus: int) -> None:
    """The end of a lone session: every worker stopped, then the gradebook
    finished and the reports written (and --grade-fail-under applied)."""
    from ..fixtures import forget_executor

    forget_executor(session.config)
    _grade_session(session.config).finish_gradebook(session, exitstatus)

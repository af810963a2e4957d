"""The pytest11 entry point: options, the ``grade`` marker and the hooks that
turn test reports into check results (what a check declares is read by
``declarations``, a report's result built by ``check_results``; the
gradebook and report files are ``sessions``').

This module imports neither torch nor numpy; they are imported only once a
graded session or a grading fixture needs them.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from . import hookspecs, i18n, options
from .boundary.untrusted import FEEDBACK_LIMIT, guarded, quoted, shown
from .check_results import result_for
from .concepts import Concept
from .declarations import MARKER_HELP, concept_title, spec_of
from .fixtures import autograd, executor_for, grade_device, grade_rng, submission  # noqa: F401  (fixtures)
from .i18n import msg
from .outcomes import CheckError, GradeFailure, GraderError
from .protocol import STUDENT_FAILED, Status
from .pytest_internals import LONE_RUN, UnsupportedPytest, check_supported, report_sections
from .scoring import CheckResult, Gradebook
from .session_state import CREDIT, NOTED, SETTINGS, STATE, GradeState, state_of
from .sessions import GradeTableLast, GradingSession, PlainSession, header_lines, in_github_log, write_reports

# -- set-up ---------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    _save_language(early_config)  # before a conftest can add messages (set_language at import)


def _save_language(config: pytest.Config) -> None:
    """Put back the messages in use now when the run ends: a pytest run
    inside another (pytester's) leaves neither its language nor its
    course's messages to the outer one or the next."""
    if _LANGUAGE_SAVED not in config.stash:
        config.stash[_LANGUAGE_SAVED] = True
        config.add_cleanup(i18n.saved_language())


_LANGUAGE_SAVED = pytest.StashKey[bool]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    # Feedback speaks the student's language with or without --grade.
    _save_language(config)
    i18n.use_language(options.read_language(config))
    # historic: a conftest.py registered later (found during collection) is called then
    config.hook.pytest_grade_messages.call_historic(kwargs=dict(config=config), result_callback=_add_messages)
    settings = options.read_settings(config)
    config.stash[SETTINGS] = settings
    config.pluginmanager.register(_FeedbackReports(), "grade-feedback-reports")
    if not options.grading_enabled(config):
        # A plain run: graded checks still run student code in the sandbox,
        # fail with their feedback, and the run ends saying how to score them.
        config.pluginmanager.register(PlainSession(config), "grade-plain-session")
        return
    _start_grading(config, settings)


def _start_grading(config: pytest.Config, settings: options.Settings) -> None:
    """A graded run: its state, isolation, session hooks, and the sandbox
    started early where checks will run."""
    try:
        check_supported(LONE_RUN)  # a pytest that lacks it is named, not found out check by check
    except UnsupportedPytest as exc:
        raise pytest.UsageError(str(exc)) from None
    state = GradeState(settings=settings, is_worker=hasattr(config, "workerinput"))
    if not settings.inline:
        from .sandbox import Unavailable, isolation_for

        try:
            state.isolation = isolation_for(settings.isolation)
        except Unavailable as exc:
            raise pytest.UsageError(str(exc)) from None
    config.stash[STATE] = state
    # One broken checks file must not stop the others from being graded.
    config.option.continue_on_collection_errors = True
    config.pluginmanager.register(GradingSession(config, state), "grade-session")
    config.pluginmanager.register(GradeTableLast(config, state), "grade-table-last")
    if not state.is_worker and getattr(config.option, "reportchars", None) == "fE":
        # pytest's default list of failed checks would repeat each one under
        # the feedback already shown; -r still asks for it
        config.option.reportchars = ""
    xdist_controller = not state.is_worker and getattr(config.option, "dist", "no") != "no"
    if not settings.inline and not xdist_controller and not config.option.collectonly:
        # Start the sandbox's zygote now, where checks will run: its torch
        # import then overlaps ours and collection instead of delaying the
        # first check.
        executor_for(config).start()
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistSeed(settings), "grade-xdist-seed")
    if settings.manifest_path is not None:
        from .platforms.manifest_guard import register_guard

        # edited or missing check files fail their checks (and are never imported)
        register_guard(config, state)


def _add_messages(messages: object) -> None:
    try:
        i18n.add_course_messages(messages)
    except i18n.CourseMessageError as exc:
        raise pytest.UsageError(str(exc)) from None


class _XdistSeed:
    def __init__(self, settings: options.Settings):
        self.settings = settings

    def pytest_configure_node(self, node: Any) -> None:  # xdist's WorkerController
        node.workerinput["grade_seed"] = self.settings.seed
        node.workerinput["grade_seed_was_random"] = self.settings.seed_was_random


@pytest.hookimpl(trylast=True)
def pytest_grade_concepts(config: pytest.Config) -> list[Concept]:
    return []  # the grader has no concepts of its own: a course gives them (exercises/conftest.py)


@pytest.hookimpl(trylast=True)
def pytest_grade_check_result(item: pytest.Item, result: CheckResult) -> CheckResult:
    return result


@pytest.hookimpl(trylast=True)
def pytest_grade_gradebook(config: pytest.Config, gradebook: Gradebook) -> None:
    write_reports(config, gradebook, final=True)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = state_of(config)
    return header_lines(state) if state is not None else None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "grade_device" in metafunc.fixturenames:
        from .checking.devices import device_params

        setting = options.read_device(metafunc.config)
        params = device_params(setting if setting in options.DEVICES else options.DEFAULTS["grade_device"])
        metafunc.parametrize("grade_device", params, ids=params, indirect=True)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if state_of(item.config) is None:
        return
    spec = spec_of(item)
    if spec.problem:
        raise CheckError(spec.problem)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    # the diagnoses the check formats or is given, for its report (check_results)
    with i18n.noting_diagnoses() as noted:
        pyfuncitem.stash[NOTED] = noted
        return (yield from _credited(pyfuncitem))


def _credited(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    try:
        result = yield
    except GradeFailure as raised:
        credit = pyfuncitem.stash.get(CREDIT, None)
        failure = credit.failure(raised) if credit is not None else raised
        if failure is None or failure is raised:
            raise
        raise failure from None
    credit = pyfuncitem.stash.get(CREDIT, None)
    failure = credit.failure() if credit is not None else None
    if failure is not None:
        raise failure
    return result


# -- reports --------------------------------------------------------------


class _FeedbackReports:
    """Registered for every run, graded or not."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport | None:
        """The report of a check the student failed (or that the grader's
        own machinery could not run), made without pytest's traceback: its
        text is replaced by the feedback anyway, and formatting it parses
        the source of every frame (about 0.2 s per failed check, most of the
        time a stub submission takes to grade)."""
        if call.excinfo is None or not isinstance(call.excinfo.value, (GradeFailure, GraderError)):
            return None
        sections = [(f"Captured {key} {when}", content) for when, key, content in report_sections(item)]
        when = call.when
        assert when != "collect", "an item's call is never its collection"
        return pytest.TestReport(
            item.nodeid,
            item.location,
            {name: 1 for name in item.keywords},
            "failed",
            call.excinfo.value.feedback,
            when,
            sections,
            call.duration,
            call.start,
            call.stop,
            user_properties=item.user_properties,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    from .boundary.blame import STUDENT_VALUES, forget_student_values, redact, redact_report

    report = yield
    values = item.stash.get(STUDENT_VALUES, None)
    if report.when == "teardown":
        forget_student_values(item)  # keep no student tensor alive past its check
    state = state_of(item.config)
    if state is None:
        _plain_feedback(item, call, report)
        return report
    result = result_for(item, call, report)
    result = item.config.hook.pytest_grade_check_result(item=item, result=result)
    if result.status == Status.ERROR:
        # What a broken check says reaches instructors, TAs and their tools:
        # none of it may be text the student's code chose.
        result.feedback = redact(result.feedback, values)
        redact_report(report, values)
    _show_safely(result, report)
    graded = result.to_dict()
    # an attribute of ours on pytest's report (xdist carries it to the controller)
    vars(report)["grade"] = graded
    if report.when == "call" or (report.failed and report.when == "setup"):
        properties = [
            ("grade_concept", result.concept),
            ("grade_score", result.score),
            ("grade_max_score", result.max_score),
            ("grade_status", graded["status"]),
        ]
        report.user_properties.extend(properties)
        # junitxml writes the properties of the teardown report, which
        # copies item.user_properties when it is made
        item.user_properties.extend(properties)
    if result.hidden and report.failed:
        # A hidden check shows nothing of itself, not even its traceback.
        report.longrepr = result.feedback or msg("feedback.hidden", title=concept_title(item.config, result.concept))
        report.sections = []
    elif report.failed and result.status in STUDENT_FAILED:
        # The student needs the feedback once, not a traceback into the grader.
        report.longrepr = result.feedback
    if in_github_log(state):
        from .reporters.github_escaping import defuse_commands

        # GitHub's runner reads workflow commands from the job's log: text the
        # student's code chose must not fake annotations or outputs there
        if isinstance(report.longrepr, str):
            report.longrepr = defuse_commands(report.longrepr)
        report.sections = [(title, defuse_commands(content)) for title, content in report.sections]
    return report


def _plain_feedback(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> None:
    """Without --grade: a graded check the student failed shows its feedback,
    as in a graded run, never a traceback into the grader."""
    exc = call.excinfo.value if call.excinfo is not None else None
    if (
        not report.failed
        or not isinstance(exc, (GradeFailure, GraderError))
        or item.get_closest_marker("grade") is None
    ):
        return
    spec = spec_of(item)
    title = concept_title(item.config, spec.concept)
    report.longrepr = guarded(
        shown(
            msg("feedback.hidden", title=title)
            if spec.hidden
            else msg("feedback.header", title=title, what=exc.feedback)
        )
    )


def _show_safely(result: CheckResult, report: pytest.TestReport) -> None:
    """Text the student's code chose, in the feedback, in a traceback of a
    check's own error or in captured output, reaches the reports and the
    terminal with its control characters escaped (boundary/untrusted.py).
    After redaction: the redacted strings are the student's raw ones."""
    result.feedback = guarded(shown(result.feedback))
    result.private_feedback = guarded(shown(result.private_feedback))
    result.diagnoses = [
        {"id": guarded(shown(str(d.get("id", "")))), "text": guarded(shown(str(d.get("text", ""))))}
        for d in result.diagnoses or ()
        if isinstance(d, dict)
    ]
    if report.longrepr is not None and not isinstance(report.longrepr, tuple):
        text = str(report.longrepr)
        safe = guarded(shown(text, limit=max(len(text), FEEDBACK_LIMIT)))
        if safe != text:
            report.longrepr = safe
    # what was printed during the check, each line behind the gutter under pytest's "Captured ..." line
    report.sections = [(title, quoted(shown(content), block=True)) for title, content in report.sections]

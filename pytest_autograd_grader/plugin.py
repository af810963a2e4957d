"""The pytest11 entry point: options, the ``grade`` marker and the hooks that
turn test reports into a gradebook.

This module imports neither torch nor numpy; they are imported only once a
graded session or a grading fixture needs them.
"""

from __future__ import annotations

import re
import time

import pytest

from . import hookspecs, messages, options
from .concepts import BUILTIN_CONCEPTS, Concept, merge_concepts
from .fixtures import autograd, executor_for, grade_device, grade_rng, submission  # noqa: F401  (fixtures)
from .messages import msg
from .outcomes import CheckError, GradeFailure, GraderError, status_of
from .reporters import gradescope_results, table_lines, write_json_atomic
from .scoring import CheckResult, CheckSpec, Gradebook
from .state import CREDIT, PLACE, PLAIN_CHECKS, SETTINGS, SPEC, STATE, GradeState, state_of

MARKER_HELP = (
    "grade(concept, points=1, hidden=False, timeout=None): a graded check of an autograd concept; "
    "hidden=True (or 'after_published', 'after_due_date') keeps its feedback from students; "
    "timeout overrides --grade-timeout; also usable as a module-level pytestmark"
)
HIDDEN_VISIBILITY = {False: "visible", True: "hidden", "after_published": "after_published",
                     "after_due_date": "after_due_date"}
JSON_REWRITE_INTERVAL_S = 1.0


# -- set-up ---------------------------------------------------------------

def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    # Feedback speaks the student's language with or without --grade.
    config.add_cleanup(messages.saved_language())
    messages.use_language(options.read_language(config))
    settings = options.read_settings(config)
    config.stash[SETTINGS] = settings
    config.pluginmanager.register(_FeedbackReports(), "grade-feedback-reports")
    if not options.grading_enabled(config):
        # A plain run: graded checks still run student code in the sandbox,
        # fail with their feedback, and the run ends saying how to score them.
        config.pluginmanager.register(PlainSession(config), "grade-plain-session")
        return
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
    xdist_controller = not state.is_worker and getattr(config.option, "dist", "no") != "no"
    if not settings.inline and not xdist_controller and not config.option.collectonly:
        # Start the sandbox's zygote now, where checks will run: its torch
        # import then overlaps ours and collection instead of delaying the
        # first check.
        executor_for(config).start()
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistSeed(settings), "grade-xdist-seed")
    if settings.manifest_path is not None:
        from .manifest import register_guard

        # edited or missing check files fail their checks (and are never imported)
        register_guard(config, state)


class _XdistSeed:
    def __init__(self, settings: options.Settings):
        self.settings = settings

    def pytest_configure_node(self, node) -> None:
        node.workerinput["grade_seed"] = self.settings.seed
        node.workerinput["grade_seed_was_random"] = self.settings.seed_was_random


def known_concepts(config: pytest.Config) -> dict[str, Concept]:
    state = state_of(config)
    if state is not None and state.concepts is not None:
        return state.concepts
    concepts = merge_concepts(config.hook.pytest_grade_concepts(config=config))
    if state is not None:
        state.concepts = concepts
    return concepts


def concept_title(config: pytest.Config, concept_id: str) -> str:
    """A concept's title in the run's language; its id when unknown."""
    concept = known_concepts(config).get(concept_id)
    return concept.title if concept is not None else concept_id


@pytest.hookimpl(trylast=True)
def pytest_grade_concepts(config: pytest.Config) -> list[Concept]:
    # titles in the language of the run (the concept.<id> messages)
    return [Concept(c.id, msg(f"concept.{c.id}"), c.description) for c in BUILTIN_CONCEPTS]


@pytest.hookimpl(trylast=True)
def pytest_grade_check_result(item: pytest.Item, result: CheckResult) -> CheckResult:
    return result


@pytest.hookimpl(trylast=True)
def pytest_grade_gradebook(config: pytest.Config, gradebook: Gradebook) -> None:
    _write_reports(config, gradebook, final=True)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = state_of(config)
    if state is None:
        return None
    s = state.settings
    lines = [msg("header", seed=s.seed, device=s.device,
                 submission=str(s.submission) if s.submission else msg("header.beside_checks"),
                 isolation=isolation_name(state))]
    lines += [msg("header.missing", what=what) for what in isolation_missing(state)]
    if state.isolation is not None:
        from .sandbox.probe import describe

        # each stronger mode once, with why it was not used and what would make it work
        lines += [msg("header.fallback", mode=f.mode, reason=describe(f)) for f in state.isolation.fallbacks]
    return lines


def isolation_name(state: GradeState) -> str:
    return state.isolation.mode if state.isolation is not None else "inline"


def isolation_missing(state: GradeState) -> list[str]:
    """The protections the run lacks, in words for the header and reports."""
    if state.isolation is None:
        return [msg("isolation.inline")]
    return list(state.isolation.missing)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "grade_device" in metafunc.fixturenames:
        from .devices import device_params

        setting = (options._value(metafunc.config, "grade_device") or "cpu").lower()
        params = device_params(setting if setting in options.DEVICES else "cpu")
        metafunc.parametrize("grade_device", params, ids=params, indirect=True)


# -- the marker -----------------------------------------------------------

def spec_of(item: pytest.Item) -> CheckSpec:
    """The check's concept, points and visibility, merged from every ``grade``
    marker on it (the closest one wins per keyword)."""
    cached = item.stash.get(SPEC, None)
    if cached is not None:
        return cached
    where = item.nodeid
    kwargs: dict = {}
    problem = None
    for mark in reversed(list(item.iter_markers("grade"))):
        if mark.args:
            problem = msg("marker.positional", where=where)
        kwargs.update(mark.kwargs)
    concepts = known_concepts(item.config)
    known = ", ".join(concepts)
    concept = kwargs.get("concept")
    points = kwargs.get("points", 1)
    hidden = kwargs.get("hidden", False)
    timeout = kwargs.get("timeout", None)
    valid_timeout = timeout is None or (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
                                        and timeout > 0 and timeout == timeout)
    if problem is None:
        if not concept:
            problem = msg("marker.no_concept", where=where, known=known)
        elif concept not in concepts:
            problem = msg("marker.unknown_concept", where=where, concept=concept, known=known)
        elif isinstance(points, bool) or not isinstance(points, (int, float)) or not points > 0:
            problem = msg("marker.bad_points", where=where, points=points)
        elif not isinstance(hidden, (bool, str)) or hidden not in HIDDEN_VISIBILITY:
            problem = msg("marker.bad_hidden", where=where, hidden=hidden)
        elif not valid_timeout:
            problem = msg("marker.bad_timeout", where=where, timeout=timeout)
    valid_points = isinstance(points, (int, float)) and not isinstance(points, bool) and points > 0
    visibility = HIDDEN_VISIBILITY.get(hidden, "visible") if isinstance(hidden, (bool, str)) else "visible"
    spec = CheckSpec(concept=str(concept or ""), points=float(points) if valid_points else 0.0,
                     hidden=visibility != "visible", problem=problem, visibility=visibility,
                     timeout=float(timeout) if valid_timeout and timeout is not None else None)
    item.stash[SPEC] = spec
    return spec


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if state_of(item.config) is None:
        return
    spec = spec_of(item)
    if spec.problem:
        raise CheckError(spec.problem)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    result = yield
    credit = pyfuncitem.stash.get(CREDIT, None)
    failure = credit.failure() if credit is not None else None
    if failure is not None:
        raise failure
    return result


# -- results --------------------------------------------------------------

def _device_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("grade_device") if callspec is not None else None


def _crash_line(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    return str(report.longrepr or "").strip().splitlines()[-1] if report.longrepr else ""


def topic_of(item: pytest.Item) -> str:
    """The topic a check belongs to: its checks file's name without the
    test_ prefix (exercises/test_engine.py -> "engine")."""
    return item.path.stem.removeprefix("test_").removesuffix("_test")


def title_of(item: pytest.Item) -> str:
    """A check's readable name: the first line of its docstring, else its
    name in words ("test_which_are_leaves" -> "which are leaves"), with its
    parameters ("[cpu]") kept."""
    doc = getattr(getattr(item, "obj", None), "__doc__", None)
    first = doc.strip().splitlines()[0].strip() if isinstance(doc, str) and doc.strip() else ""
    name = getattr(item, "originalname", None) or item.name.split("[")[0]
    title = first or name.removeprefix("test_").replace("_", " ")
    callspec = getattr(item, "callspec", None)
    return f"{title} [{callspec.id}]" if callspec is not None and callspec.id else title


def _result_for(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> CheckResult:
    spec = spec_of(item)
    file, line = item.stash[PLACE].best() if PLACE in item.stash else (None, None)
    result = CheckResult(id=item.nodeid, concept=spec.concept, score=0.0, max_score=spec.points,
                         status=None, hidden=spec.hidden, device=_device_of(item),
                         duration_s=round(report.duration, 6), topic=topic_of(item), title=title_of(item),
                         file=file, line=line, visibility=spec.visibility)
    exc = call.excinfo.value if call.excinfo is not None else None
    if report.skipped:
        result.status = "skipped"
        result.max_score = 0.0
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
        result.feedback = reason.removeprefix("Skipped: ")
    elif report.failed:
        result.status = status_of(exc) if exc is not None else "error"
        if report.when != "call" and result.status == "failed":
            result.status = "error"  # a fixture's assert is the check's problem, not the student's
        fraction = getattr(exc, "fraction", None) or 0.0
        result.score = round(spec.points * fraction, 6)
        result.feedback = getattr(exc, "feedback", None) or (spec.problem if isinstance(exc, CheckError) else _crash_line(report))
        if result.status == "error" and report.when == "call" and exc is not None and not isinstance(exc, GraderError):
            from .blame import STUDENT_VALUES, blame_student

            # The check tripped over the form of the student's answer: the
            # student's failure, not the instructor's bug.
            blamed = blame_student(exc, item.stash.get(STUDENT_VALUES, None))
            if blamed is not None:
                result.status, result.feedback = "failed", blamed
    elif report.when == "call":
        result.status = "passed"
        result.score = spec.points
    if result.feedback and result.status in ("failed", "timeout", "crashed"):
        title = concept_title(item.config, spec.concept)
        result.feedback = msg("feedback.header", title=title, what=result.feedback)
        if spec.hidden:
            # the reason goes only where instructors read (see CheckResult.public)
            result.private_feedback, result.feedback = result.feedback, msg("feedback.hidden", title=title)
    return result


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
        sections = [(f"Captured {key} {when}", content) for when, key, content in item._report_sections]
        return pytest.TestReport(item.nodeid, item.location, {name: 1 for name in item.keywords}, "failed",
                                 call.excinfo.value.feedback, call.when, sections, call.duration, call.start,
                                 call.stop, user_properties=item.user_properties)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    from .blame import STUDENT_VALUES, forget_student_values, redact, redact_report

    report = yield
    values = item.stash.get(STUDENT_VALUES, None)
    if report.when == "teardown":
        forget_student_values(item)  # keep no student tensor alive past its check
    if state_of(item.config) is None:
        _plain_feedback(item, call, report)
        return report
    result = _result_for(item, call, report)
    result = item.config.hook.pytest_grade_check_result(item=item, result=result)
    if result.status == "error":
        # What a broken check says reaches instructors, TAs and their tools:
        # none of it may be text the student's code chose.
        result.feedback = redact(result.feedback, values)
        redact_report(report, values)
    report.grade = result.to_dict()
    if report.when == "call" or (report.failed and report.when == "setup"):
        properties = [("grade_concept", result.concept), ("grade_score", result.score),
                      ("grade_max_score", result.max_score), ("grade_status", result.status)]
        report.user_properties.extend(properties)
        # junitxml writes the properties of the teardown report, which
        # copies item.user_properties when it is made
        item.user_properties.extend(properties)
    if result.hidden and report.failed:
        # A hidden check shows nothing of itself, not even its traceback.
        report.longrepr = result.feedback or msg("feedback.hidden", title=concept_title(item.config, result.concept))
        report.sections = []
    elif report.failed and result.status in ("failed", "timeout", "crashed"):
        # The student needs the feedback once, not a traceback into the grader.
        report.longrepr = result.feedback
    if isinstance(report.longrepr, str) and state_of(item.config).settings.github:
        from .reporters.github import defuse_commands

        # GitHub's runner reads workflow commands from the job's log: text the
        # student's code chose must not fake annotations or outputs there
        report.longrepr = defuse_commands(report.longrepr)
    return report


def _plain_feedback(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> None:
    """Without --grade: a graded check the student failed shows its feedback,
    as in a graded run, never a traceback into the grader."""
    exc = call.excinfo.value if call.excinfo is not None else None
    if not report.failed or not isinstance(exc, (GradeFailure, GraderError)) or item.get_closest_marker("grade") is None:
        return
    spec = spec_of(item)
    title = concept_title(item.config, spec.concept)
    report.longrepr = msg("feedback.hidden", title=title) if spec.hidden else msg("feedback.header", title=title,
                                                                                    what=exc.feedback)


class PlainSession:
    """A run without --grade that collects graded checks ends with one line
    saying how to get their scores."""

    def __init__(self, config: pytest.Config):
        self.config = config

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # the items that will run (after -k and -m); --collect-only runs none
        if not self.config.option.collectonly:
            self.config.stash[PLAIN_CHECKS] = sum(1 for item in session.items if item.get_closest_marker("grade"))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.config.stash.get(PLAIN_CHECKS, 0):
            import shlex

            command = shlex.join(["pytest", "--grade", *self.config.invocation_params.args])
            terminalreporter.write_line(msg("summary.plain", count=self.config.stash[PLAIN_CHECKS], command=command),
                                        bold=True)


class GradingSession:
    """The session-wide hooks of a graded run, bound to its config (the
    collection and log-report hooks receive no config of their own)."""

    def __init__(self, config: pytest.Config, state: GradeState):
        self.config = config
        self.state = state

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        import torch

        freeze_imports()
        if self.state.is_worker:
            return

        from .devices import graded_devices

        self.state.gradebook = Gradebook(
            seed=self.state.settings.seed, devices=graded_devices(self.state.settings.device),
            torch=torch.__version__.split("+")[0], concepts=known_concepts(self.config),
            isolation=isolation_name(self.state), isolation_missing=isolation_missing(self.state),
            lang=self.state.settings.lang)
        _write_reports(self.config, self.state.gradebook)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and self.state.gradebook is not None:
            detail = str(report.longrepr).strip()
            self.state.gradebook.add_error(report.nodeid or "<collection>", msg(
                "collect.error", path=report.nodeid, cause=_collect_cause(detail), detail=detail))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        gradebook = self.state.gradebook
        if gradebook is None:
            return
        longrepr = str(report.longrepr) if report.longrepr else ""
        gradebook.record(report.nodeid, report.when, getattr(report, "grade", None), report.outcome, longrepr)
        now = time.monotonic()
        if report.when == "teardown" and now - self.state.last_write > JSON_REWRITE_INTERVAL_S:
            # Keep the report on disk current, so a grader killed now still
            # leaves every score earned so far (marked incomplete).
            self.state.last_write = now
            _write_reports(self.config, gradebook)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        gradebook = self.state.gradebook
        if gradebook is None:
            return
        stopped = bool(session.shouldstop or session.shouldfail) or exitstatus in (
            pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR)
        gradebook.finish(complete=not stopped)
        self.config.hook.pytest_grade_gradebook(config=self.config, gradebook=gradebook)
        required = self.state.settings.fail_under
        if required is not None and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.OK if gradebook.percent >= required else pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        if self.state.gradebook is not None:
            _summarize(terminalreporter, self.state, self.state.gradebook)


def freeze_imports() -> None:
    """Keep what is alive now (torch's objects, which live as long as the
    process) out of every later garbage collection, once per process:
    gc.collect then gets cheap (pytest calls it five times at the end of a
    session, 0.1 s each over torch's heap; a stub submission's grading took
    a second longer). Once only: a later freeze would also pin whatever
    garbage an earlier session left (pytester, the class runner)."""
    import gc

    import pytest_autograd_grader as package  # kept where pytester's runs do not unload it

    if not package.__dict__.get("_imports_frozen"):
        package._imports_frozen = True
        gc.freeze()


def _collect_cause(detail: str) -> str:
    """'line 4: SyntaxError: invalid syntax' from a collection error's text."""
    errors = [line[1:].strip() for line in detail.splitlines() if line.startswith("E ")]
    error = next((e for e in reversed(errors) if re.match(r"\w+(Error|Exception)\b", e)), errors[-1] if errors else "")
    lines = re.findall(r"line (\d+)", detail) or re.findall(r"\.py:(\d+):", detail)
    return f"line {lines[-1] if lines else '?'}: {error}" if error else f"line {lines[-1] if lines else '?'}"


def _report_files(state: GradeState, gradebook: Gradebook):
    """(option, path, content) of every report file the run writes."""
    s = state.settings
    return (("--grade-json", s.json_path, gradebook.to_json),
            ("--grade-json-private", s.json_private_path, lambda: gradebook.to_json(private=True)),
            ("--grade-gradescope", s.gradescope_path, lambda: gradescope_results(gradebook)))


def _write_reports(config: pytest.Config, gradebook: Gradebook, final: bool = False) -> None:
    """Write each report file on its own: one that fails stops neither the
    other nor the grading. Its reason is kept for the terminal summary and
    the write is tried again next time (the final write included). The
    ``final`` write also appends GitHub Actions' outputs, once."""
    from .reporters import REPORT_FAILURES

    state = state_of(config)
    failures = config.stash.setdefault(REPORT_FAILURES, {})
    for option, path, content in _report_files(state, gradebook):
        if path is None:
            continue
        try:
            write_json_atomic(path, content())
        except Exception as exc:  # never a traceback instead of the grades
            reason = str(exc) or type(exc).__name__
            failures[option] = msg("report.write_failed", option=option, path=path, reason=reason)
        else:
            failures.pop(option, None)
    if final and state.settings.github:
        from .reporters.github import write_github_outputs

        # problems in words (an unwritable $GITHUB_OUTPUT, ...), never a traceback
        for problem in write_github_outputs(gradebook, submission=state.settings.submission):
            failures[f"--grade-github {problem}"] = problem


def _summarize(tr, state: GradeState, gradebook: Gradebook) -> None:
    tr.section(msg("summary.title"), sep="=", bold=True)
    for line in table_lines(gradebook):
        tr.write_line(line)
    errors = [c for c in gradebook.checks.values() if c.status == "error"]
    if errors:
        tr.write_line("")
        tr.write_line(msg("summary.errors", count=len(errors)), red=True)
        for check in errors:
            first = check.feedback.strip().splitlines()[0] if check.feedback.strip() else ""
            tr.write_line(f"  {check.id}: {first}")
    if state.settings.fail_under is not None:
        passed = gradebook.percent >= state.settings.fail_under
        tr.write_line(msg("summary.fail_under", percent=gradebook.percent,
                          relation=msg("summary.at_or_above" if passed else "summary.below"), required=state.settings.fail_under),
                      green=passed, red=not passed)
    from .reporters import REPORT_FAILURES

    failures = tr.config.stash.get(REPORT_FAILURES, {})
    for option, path, _ in _report_files(state, gradebook):
        if path is not None and option not in failures:
            tr.write_line(msg("summary.json", path=path))
    for failure in failures.values():
        tr.write_line(failure, red=True)
    if state.settings.github:
        from .reporters.github import annotation_lines

        # workflow commands: GitHub Actions reads them from the job's output
        for line in annotation_lines(gradebook, submission=state.settings.submission):
            tr.write_line(line)

"""The session-wide side of a run: the gradebook kept while checks report,
the report files written as it grows, and the terminal summary at the end.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from .declarations import collect_cause, known_concepts
from .i18n import msg
from .protocol import Status
from .reporters import gradescope_results, next_step, table_lines, write_json_atomic
from .reporters.terminal import separator
from .scoring import Gradebook
from .session_state import PLAIN_CHECKS, GradeState, state_of

JSON_REWRITE_INTERVAL_S = 1.0


def submission_notes(state: GradeState) -> list[str]:
    """What is said once of the submission, its notebooks (boundary/notebook_modules.py):
    read once a run, for the header and the report alike."""
    if state.notes is None:
        from .boundary.notebook_modules import notes

        submission = state.settings.submission
        state.notes = notes(submission) if submission is not None else []
    return state.notes


def isolation_name(state: GradeState) -> str:
    isolation = state.isolation
    return isolation.mode if isolation is not None else "inline"


def isolation_missing(state: GradeState) -> list[str]:
    """The protections the run lacks, in words for the header and reports."""
    isolation = state.isolation
    if isolation is None:
        return [msg("isolation.inline")]
    return list(isolation.missing)


def header_lines(state: GradeState) -> list[str]:
    """The lines a graded run adds to pytest's header: seed, device,
    submission, isolation and what it lacks, notes on the submission."""
    s = state.settings
    lines = [
        msg(
            "header",
            seed=s.seed,
            device=s.device,
            submission=str(s.submission) if s.submission else msg("header.beside_checks"),
            isolation=isolation_name(state),
        )
    ]
    lines += [msg("header.missing", what=what) for what in isolation_missing(state)]
    isolation = state.isolation
    if isolation is not None:
        from .sandbox.probe import describe

        # each stronger mode once, with why it was not used and what would make it work
        lines += [msg("header.fallback", mode=f.mode, reason=describe(f)) for f in isolation.fallbacks]
    # a note names the student's files and lines: never at the start of a line
    notes = [msg("header.note", note=note) for note in submission_notes(state)]
    if in_github_log(state):
        from .reporters.github_escaping import defuse_commands

        notes = [defuse_commands(note) for note in notes]
    return lines + notes


def in_github_log(state: GradeState) -> bool:
    """Whether what pytest prints lands in a GitHub Actions job's log: with
    GitHub's outputs on, or on GitHub's runner even with them off."""
    return state.settings.github or os.environ.get("GITHUB_ACTIONS") == "true"


class PlainSession:
    """A run without --grade that collects graded checks ends with one line
    saying how to get their scores: the last line, after pytest's list of
    failed checks and its closing counts (where a graded run puts its table)."""

    def __init__(self, config: pytest.Config):
        self.config = config

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # the items that will run (after -k and -m); --collect-only runs none
        if not self.config.option.collectonly:
            self.config.stash[PLAIN_CHECKS] = sum(1 for item in session.items if item.get_closest_marker("grade"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Generator[None, object, object]:
        result = yield  # the terminal reporter's own: the summary, "=== 38 failed in 3.1s ==="
        terminalreporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminalreporter is not None and self.config.stash.get(PLAIN_CHECKS, 0):
            import shlex

            command = shlex.join(["pytest", "--grade", *self.config.invocation_params.args])
            terminalreporter.write_line(
                msg("summary.plain", count=self.config.stash[PLAIN_CHECKS], command=command), bold=True
            )
        return result


class GradingSession:
    """The session-wide hooks of a graded run, bound to its config (the
    collection and log-report hooks receive no config of their own)."""

    def __init__(self, config: pytest.Config, state: GradeState):
        self.config = config
        self.state = state
        self.collect_errors: list[
            tuple[str, str, str]
        ] = []  # (node id, feedback, the instructor's) of files that did not collect

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        import torch  # noqa: F401  (before the freeze, which is what keeps torch's heap out of collections)

        freeze_imports()
        if not self.state.is_worker:
            self.start_gradebook()

    def start_gradebook(self) -> None:
        """A new gradebook for the settings as they stand, holding the
        collection errors seen so far, written at once. The class runner's
        one session per worker (classroom/session_loop.py) starts one for
        each student, after collection, with that student's settings."""
        import torch

        from .checking.devices import graded_devices

        self.state.notes = None
        self.state.last_write = 0.0
        self.state.gradebook = Gradebook(
            seed=self.state.settings.seed,
            devices=graded_devices(self.state.settings.device),
            torch=torch.__version__.split("+")[0],
            concepts=known_concepts(self.config),
            isolation=isolation_name(self.state),
            isolation_missing=isolation_missing(self.state),
            lang=self.state.settings.lang,
            notes=list(submission_notes(self.state)),
        )
        for error in self.collect_errors:
            self._add_collect_error(*error)
        write_reports(self.config, self.state.gradebook)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # a conftest.py found while collecting (a course's checks folder) may
        # have added concepts, and their titles in its messages
        self.state.concepts = None
        if self.state.gradebook is not None:
            self.state.gradebook.concepts = known_concepts(self.config)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and self.state.gradebook is not None:
            detail = str(report.longrepr).strip()
            cause = collect_cause(detail)
            # students (Gradescope, Classroom) read the cause; pytest's traceback is the instructor's
            error = (
                report.nodeid or "<collection>",
                msg("collect.broken", path=report.nodeid, cause=cause),
                msg("collect.error", path=report.nodeid, cause=cause, detail=detail),
            )
            self.collect_errors.append(error)
            self._add_collect_error(*error)

    def _add_collect_error(self, nodeid: str, feedback: str, private: str) -> None:
        gradebook = self.state.gradebook
        assert gradebook is not None, "a collection error is added to a started gradebook"
        gradebook.add_error(nodeid, feedback)
        gradebook.checks[nodeid].private_feedback = private

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
            write_reports(self.config, gradebook)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.finish_gradebook(session, exitstatus)

    def finish_gradebook(self, session: pytest.Session, exitstatus: int) -> None:
        """The gradebook finished and the reports written (--grade-fail-under
        applied): at the session's end, and at the end of each student's run
        in the class runner's one session per worker."""
        gradebook = self.state.gradebook
        if gradebook is None:
            return
        stopped = bool(session.shouldstop or session.shouldfail) or exitstatus in (
            pytest.ExitCode.INTERRUPTED,
            pytest.ExitCode.INTERNAL_ERROR,
            pytest.ExitCode.USAGE_ERROR,
        )
        gradebook.finish(complete=not stopped)
        self.config.hook.pytest_grade_gradebook(config=self.config, gradebook=gradebook)
        required = self.state.settings.fail_under
        if required is not None and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.OK if gradebook.percent >= required else pytest.ExitCode.TESTS_FAILED


class GradeTableLast:
    """The grade table, printed after everything pytest prints at the end
    (its outermost sessionfinish wrapper), so a student reads it and the
    next step without scrolling."""

    def __init__(self, config: pytest.Config, state: GradeState):
        self.config = config
        self.state = state

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Generator[None, object, object]:
        result = yield
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None and self.state.gradebook is not None:
            _summarize(tr, self.state, self.state.gradebook, partial_reasons(self.config, session))
        return result


def partial_reasons(config: pytest.Config, session: pytest.Session) -> list[str]:
    """Why the total covers only some of the checks: a selection (-k, -m,
    --deselect, --lf), a run stopped early (-x), files named one by one."""
    option = config.option
    reasons = []
    chosen = [
        name
        for name, on in (
            ("-k", option.keyword),
            ("-m", option.markexpr),
            ("--deselect", getattr(option, "deselect", None)),
            ("--lf", getattr(option, "lf", False)),
        )
        if on
    ]
    if chosen:
        reasons.append(msg("summary.partial.selected", options=", ".join(chosen)))
    if session.shouldstop or session.shouldfail:
        reasons.append(msg("summary.partial.stopped"))
    files = [arg for arg in config.args if "::" in arg or os.path.isfile(arg)]
    if files:
        reasons.append(msg("summary.partial.files", files=", ".join(files)))
    return reasons


def freeze_imports() -> None:
    """Keep what is alive now (torch's objects, which live as long as the
    process) out of every later garbage collection, once per process:
    gc.collect then gets cheap (pytest calls it five times at the end of a
    session, 0.1 s each over torch's heap; a stub submission's grading took
    a second longer). Once only: a later freeze would also pin whatever
    garbage an earlier session left (pytester, the class runner)."""
    import atexit
    import gc

    from .process_state import PROCESS

    if not PROCESS.imports_frozen:
        PROCESS.imports_frozen = True
        gc.freeze()
        # Once more as the interpreter ends: its last collections walk every
        # object still alive (about 0.1 s of a student's run, measured),
        # and nothing needs freeing then. A notebook's kernel runs this only
        # when it shuts down.
        atexit.register(gc.freeze)


def _report_files(
    state: GradeState, gradebook: Gradebook
) -> tuple[tuple[str, Path | None, Callable[[], dict[str, Any]]], ...]:
    """(option, path, content) of every report file the run writes."""
    s = state.settings
    return (
        ("--grade-json", s.json_path, gradebook.to_json),
        ("--grade-json-private", s.json_private_path, lambda: gradebook.to_json(private=True)),
        ("--grade-gradescope", s.gradescope_path, lambda: gradescope_results(gradebook)),
    )


def write_reports(config: pytest.Config, gradebook: Gradebook, final: bool = False) -> None:
    """Write each report file on its own: one that fails stops neither the
    other nor the grading. Its reason is kept for the terminal summary and
    the write is tried again next time (the final write included). The
    ``final`` write also appends GitHub Actions' outputs, once."""
    from .reporters import REPORT_FAILURES

    state = state_of(config)
    if state is None:  # not a graded run: no report files
        return
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


def _summarize(tr: pytest.TerminalReporter, state: GradeState, gradebook: Gradebook, partial: list[str]) -> None:
    """The end of a graded run's output: annotations for GitHub, where the
    reports went, broken checks, the table, and what to do next."""
    if state.settings.github:
        _write_annotations(tr, state, gradebook)
    tr.write_line(separator(msg("summary.title"), tr.config.get_terminal_writer().fullwidth), bold=True)
    _write_report_places(tr, state, gradebook)
    _write_broken_checks(tr, gradebook)
    for line in table_lines(gradebook):
        tr.write_line(line)
    if partial:
        _write_partial(tr, partial)
    if state.settings.fail_under is not None:
        _write_fail_under(tr, gradebook, state.settings.fail_under)
    step = next_step(gradebook, partial=bool(partial))
    if step:
        tr.write_line(step, bold=True)


def _write_annotations(tr: pytest.TerminalReporter, state: GradeState, gradebook: Gradebook) -> None:
    from .reporters.github import annotation_lines

    # workflow commands: GitHub Actions reads them from the job's output
    for line in annotation_lines(gradebook, submission=state.settings.submission):
        tr.write_line(line)


def _write_report_places(tr: pytest.TerminalReporter, state: GradeState, gradebook: Gradebook) -> None:
    """Each report file written, then each that could not be, with why."""
    from .reporters import REPORT_FAILURES

    failures = tr.config.stash.get(REPORT_FAILURES, {})
    for option, path, _ in _report_files(state, gradebook):
        if path is not None and option not in failures:
            tr.write_line(msg("summary.json", path=path))
    for failure in failures.values():
        tr.write_line(failure, red=True)


def _write_broken_checks(tr: pytest.TerminalReporter, gradebook: Gradebook) -> None:
    errors = [c for c in gradebook.checks.values() if c.status == Status.ERROR]
    if not errors:
        return
    tr.write_line(msg("summary.errors", count=len(errors)), red=True)
    for check in errors:
        first = check.feedback.strip().splitlines()[0] if check.feedback.strip() else ""
        tr.write_line(f"  {check.id}: {first}")
    tr.write_line("")


def _write_partial(tr: pytest.TerminalReporter, partial: list[str]) -> None:
    """Why the total covers only some checks, and the command for all."""
    import shlex

    # the folders of the files named (a node id's file, a checks file): the whole score's run
    paths = (arg.split("::")[0] for arg in tr.config.args)
    folders = sorted({(os.path.dirname(p) or ".") if p.endswith(".py") else p for p in paths})
    command = shlex.join(["pytest", "--grade", *folders])
    tr.write_line(msg("summary.partial", why="; ".join(partial), command=command), yellow=True)


def _write_fail_under(tr: pytest.TerminalReporter, gradebook: Gradebook, required: float) -> None:
    passed = gradebook.percent >= required
    tr.write_line(
        msg(
            "summary.fail_under",
            percent=gradebook.percent,
            relation=msg("summary.at_or_above" if passed else "summary.below"),
            required=required,
        ),
        green=passed,
        red=not passed,
    )

"""A check's ``CheckResult`` from one phase's pytest report: its status,
score, the instruction's part, the input classes it drew, and its feedback
framed for the student (``plugin``'s ``pytest_runtest_makereport`` calls
``result_for``, then lets ``pytest_grade_check_result`` adjust it).

What a check declares is read by ``declarations``; the arithmetic is
``scoring``'s.
"""

from __future__ import annotations

import pytest

from .declarations import concept_title, spec_of, title_of, topic_of
from .i18n import msg
from .outcomes import CheckError, GraderError, status_of
from .protocol import STUDENT_FAILED, Status
from .scoring import CheckResult, CheckSpec, shown_diagnoses
from .session_state import CREDIT, NOTED, PLACE, Credit


def _device_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("grade_device") if callspec is not None else None


def _crash_line(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    return str(report.longrepr or "").strip().splitlines()[-1] if report.longrepr else ""


def result_for(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> CheckResult:
    """The check's result from one phase's report: status, score, the
    instruction's part, the input classes drawn, and feedback in words."""
    spec = spec_of(item)
    result = _blank_result(item, spec, report)
    exc = call.excinfo.value if call.excinfo is not None else None
    if report.skipped:
        _mark_skipped(result, report)
    elif report.failed:
        _mark_failed(item, spec, result, report, exc)
    elif report.when == "call":
        result.status = Status.PASSED
        result.score = spec.points
    if result.status != Status.SKIPPED:
        # declared on the marker, or taken on by a check that looked at an instruction
        credit = item.stash.get(CREDIT, None) or Credit(points=spec.points, share=spec.instruction_share)
        result.instruction = credit.instruction_part(result.score)
        _note_inputs(item, spec, result)
    if result.feedback and result.status in STUDENT_FAILED:
        _frame_student_feedback(item, spec, result)
    return result


def _blank_result(item: pytest.Item, spec: CheckSpec, report: pytest.TestReport) -> CheckResult:
    """The check's result before its outcome: what it declares and where."""
    file, line, cell = item.stash[PLACE].best() if PLACE in item.stash else (None, None, None)
    return CheckResult(
        id=item.nodeid,
        concept=spec.concept,
        score=0.0,
        max_score=spec.points,
        status=None,
        hidden=spec.hidden,
        device=_device_of(item),
        duration_s=round(report.duration, 6),
        topic=topic_of(item),
        title=title_of(item),
        file=file,
        line=line,
        cell=cell,
        visibility=spec.visibility,
    )


def _mark_skipped(result: CheckResult, report: pytest.TestReport) -> None:
    result.status = Status.SKIPPED
    result.max_score = 0.0
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
    result.feedback = reason.removeprefix("Skipped: ")


def _mark_failed(
    item: pytest.Item, spec: CheckSpec, result: CheckResult, report: pytest.TestReport, exc: BaseException | None
) -> None:
    result.status = status_of(exc) if exc is not None else Status.ERROR
    if report.when != "call" and result.status == Status.FAILED:
        result.status = Status.ERROR  # a fixture's assert is the check's problem, not the student's
    fraction = getattr(exc, "fraction", None) or 0.0
    result.score = round(spec.points * fraction, 6)
    given = getattr(exc, "feedback", None)
    result.feedback = given or ((spec.problem or "") if isinstance(exc, CheckError) else _crash_line(report))
    if result.status == Status.ERROR and report.when == "call" and exc is not None and not isinstance(exc, GraderError):
        from .boundary.blame import STUDENT_VALUES, blame_student

        # The check tripped over the form of the student's answer: the
        # student's failure, not the instructor's bug.
        blamed = blame_student(exc, item.stash.get(STUDENT_VALUES, None))
        if blamed is not None:
            result.status, result.feedback = Status.FAILED, blamed


def _frame_student_feedback(item: pytest.Item, spec: CheckSpec, result: CheckResult) -> None:
    """Feedback the student failed: the place's remarks, the concept's
    header, the diagnoses given; a hidden check's only where instructors read."""
    remarks = item.stash[PLACE].remarks if PLACE in item.stash else {}
    result.feedback += "".join("\n" + remark for remark in remarks)
    title = concept_title(item.config, spec.concept)
    result.feedback = msg("feedback.header", title=title, what=result.feedback)
    # the diagnoses it gave (a broken check, status error, gives none: its text is no diagnosis)
    result.diagnoses = shown_diagnoses(item.stash.get(NOTED, []), result.feedback)
    if spec.hidden:
        # the reason goes only where instructors read (see CheckResult.public)
        result.private_feedback, result.feedback = result.feedback, msg("feedback.hidden", title=title)


def _note_inputs(item: pytest.Item, spec: CheckSpec, result: CheckResult) -> None:
    """The input classes the check drew, and those it declared and did not
    draw (a check that failed early may not have drawn them all)."""
    from .checking.input_classes import missing_classes, ordered

    rng = getattr(item, "funcargs", {}).get("grade_rng")
    drawn = getattr(rng, "drawn", None)
    if isinstance(drawn, set) and (drawn or spec.inputs):
        result.inputs = ordered(drawn)
        result.inputs_missing = missing_classes(spec.inputs, drawn) if spec.inputs else None

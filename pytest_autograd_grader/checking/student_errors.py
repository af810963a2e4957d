"""What an error of the student's code means to a check: an expected
autograd error that must be PyTorch's own (``Autograd.expect_error``), an
error after an update told as the update that led to it
(``Autograd.call_update``), and an error told in the terms of the task
(``Autograd.hints``).
"""

from __future__ import annotations

from typing import Any

from ..boundary.records import ErrorRecord
from ..boundary.tracing import Trace
from ..i18n import msg
from ..outcomes import CheckError, GradeFailure, StudentFailure
from ..protocol import Status
from .compare import hint_text, kind_of
from .malformed import why_not_one, with_reason
from .misconceptions import (
    AUTOGRAD_ERRORS,
    Context,
    diagnose_error,
    diagnose_update,
    diagnose_zero_none,
    error_name,
    torch_wording,
)
from .provenance import ForgedError, error_problem


def expected_error(
    name: str, produced: Any, args: tuple[Any, ...], what: str | None, hint: str | None, trace: Trace | None
) -> ErrorRecord:
    """``produced`` (or, a student function, what it hands back for
    ``args``) as the autograd error ``name`` that PyTorch raised: the
    ErrorRecord, or GradeFailure for another answer and ForgedError for
    an error PyTorch did not raise. ``hint`` follows any complaint."""
    if name not in AUTOGRAD_ERRORS:
        raise CheckError(f"expect_error: unknown error {name!r}; use one of {', '.join(AUTOGRAD_ERRORS)}")
    text = AUTOGRAD_ERRORS[name][0][0]
    what = what or name
    hint = f"\n{hint_text(hint)}" if hint else ""
    if hasattr(produced, "capture"):
        what = what if what != name else produced.qualname
        produced = produced.capture(*args)
        if not isinstance(produced, ErrorRecord):
            raise GradeFailure(msg("cmp.no_error", what=what, text=text) + hint)
    if not isinstance(produced, ErrorRecord):
        raise GradeFailure(
            with_reason(
                msg("cmp.not_error", what=what, text=text, got=kind_of(produced)), why_not_one(produced, tensor=False)
            )
            + hint
        )
    if error_name(produced.message) != name:
        raise GradeFailure(
            msg("cmp.wrong_error", what=what, text=text, type=produced.type, message=produced.message) + hint
        )
    _raised_by_pytorch(name, produced, what, hint, trace)
    return produced


def _raised_by_pytorch(name: str, produced: ErrorRecord, what: str, hint: str, trace: Trace | None) -> None:
    """ForgedError unless PyTorch raised ``produced``: its words alone, from
    torch's code, out of a torch call of the trace that raises it."""
    if not torch_wording(name, produced.type, produced.message):
        # PyTorch's words inside other text (int(TEXT)): the grader reads that from the text itself
        raise ForgedError(msg("cmp.error_forged", what=what, type=produced.type, how=msg("cmp.forged_quoted")) + hint)
    # The text is PyTorch's, but was the error? Who raised it
    # (encode.raised_by) and the torch call it came out of are the
    # student process's own claims: each must agree with the trace.
    if produced.raised_by != "library":
        how = "cmp.forged_never_raised" if produced.raised_by == "nobody" else "cmp.forged_student"
        raise ForgedError(msg("cmp.error_forged", what=what, type=produced.type, how=msg(how)) + hint)
    why = error_problem(name, produced, trace if trace is not None else produced.trace)
    if why is not None:
        raise ForgedError(msg("cmp.error_not_from_call", what=what, type=produced.type, why=why) + hint)


def update_diagnosis(
    failure: StudentFailure, function: Any, probe_args: tuple[Any, ...] | None, name: str, what: str
) -> str | None:
    """The feedback for ``failure`` of a function that updates the
    parameter ``name``, when an update explains it: a zeroed .grad that
    is None, or one step alone on ``probe_args`` (None: not run) leaving
    the parameter a non-leaf or without requires_grad. None: the failure
    stands as it is."""
    if failure.grade_status != Status.FAILED or failure.error_type in ("", "NotImplementedError"):
        return None
    diagnosed = diagnose_zero_none(failure, name)
    if diagnosed is not None:
        return diagnosed
    if probe_args is None:
        return None
    probe = function.capture(*probe_args)
    hint = diagnose_update(probe[0] if isinstance(probe, (list, tuple)) and probe else probe, name)
    if hint is None:
        return None
    return msg("diag.accumulation.failed_after_update", what=what, name=name) + "\n" + hint


def told_for_task(failure: StudentFailure, context: Context) -> StudentFailure | None:
    """``failure`` with the diagnosis that fits the task (``context``) in
    place of the generic one; None when the task changes nothing."""
    generic, fitting = diagnose_error(failure.message), diagnose_error(failure.message, context)
    if fitting is None or fitting == generic:
        return None
    feedback = failure.feedback.replace(generic, fitting) if generic else f"{failure.feedback}\n{fitting}"
    return StudentFailure(feedback, status=failure.grade_status, error_type=failure.error_type, message=failure.message)

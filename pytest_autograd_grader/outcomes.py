"""Exceptions that decide a check's status.

``GradeFailure`` (an AssertionError) means the student's answer is wrong;
its subclass ``StudentFailure`` carries ``timeout`` or ``crashed`` when the
student's code hung or died. ``GraderError`` is the grader's own machinery
failing (``error``, said in words). Any other exception escaping a check is the
check's own bug and makes it ``error`` (``CheckError`` says so explicitly),
unless ``blame.blame_student`` finds the check tripped over the form of the
student's answer (``for g in got`` on an int): then it is ``failed``.
"""

from __future__ import annotations

from .protocol import NOT_PASSED, Status


class GradeFailure(AssertionError):
    """The student's answer is wrong: the check is ``failed`` (or the
    ``status`` given) with ``feedback``, earning ``fraction`` of its points
    when partial credit applies (None: nothing)."""

    grade_status: str = Status.FAILED

    def __init__(self, feedback: str, *, status: str = Status.FAILED, fraction: float | None = None):
        super().__init__(feedback)
        self.feedback = feedback
        self.grade_status = status
        self.fraction = fraction  # partial credit earned despite failing


class StudentFailure(GradeFailure):
    """The student's code could not be loaded, raised, hung or crashed."""

    def __init__(self, feedback: str, *, status: str = Status.FAILED, error_type: str = "", message: str = ""):
        super().__init__(feedback, status=status)
        self.error_type = error_type
        self.message = message


class GraderError(Exception):
    """The grader's own machinery failed (the sandbox could not start a
    worker): neither the student's doing nor the check's. ``error``, with
    feedback that says so and no traceback of the grader's."""

    grade_status: str = Status.ERROR

    def __init__(self, feedback: str):
        super().__init__(feedback)
        self.feedback = feedback


class CheckError(Exception):
    """The check itself is wrong (an instructor's or exercise author's bug)."""

    grade_status: str = Status.ERROR

    def __init__(self, feedback: str = ""):
        super().__init__(feedback)
        self.feedback = str(feedback)  # what the report says, for every CheckError


NOT_A_STUDENT_VALUE = object()


class CheckValueError(CheckError):
    """A value the check gave the grader cannot be used: an expected value
    that is no number or array, an argument that cannot be handed to the
    sandbox. The check's own mistake, said to its author, unless ``value``
    came from student code (a check that compares two of the student's
    answers, or hands one back): ``blame.blame_student`` then makes it the
    student's failure, told with ``student_error``."""

    def __init__(self, feedback: str, value: object = NOT_A_STUDENT_VALUE, student_error: str = ""):
        super().__init__(feedback)
        self.value = value
        self.student_error = student_error


def status_of(exc: BaseException) -> Status:
    status = getattr(exc, "grade_status", None)
    if isinstance(status, str) and status in NOT_PASSED:
        return Status(status)
    return Status.FAILED if isinstance(exc, AssertionError) else Status.ERROR

"""A check's answer before its values are compared: whether it has the
form of the expected tensor (not None, a tensor, on its device, finite, of
its shape and dtype), and the check author's own diagnosis of a wrong one,
which is asked for every kind of wrong answer and replaces the generic one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..i18n import msg, note_diagnosis
from ..outcomes import CheckError, GradeFailure, GraderError
from .compare import describe, matched_expected
from .misconceptions import Context, diagnose_none, diagnose_values


def answer_form(
    produced: Any,
    expected,
    what: str,
    context: Context,
    check_dtype: bool,
    to_tensor: Callable[[Any, Any, str], Any],
    own: tuple[bool, bool] = (True, True),
) -> tuple[Any, Any, str | None, Callable[[], str | None] | None]:
    """``produced`` as a tensor comparable with ``expected``: (tensor,
    expected, None, None), or (None, expected, what is wrong with its form,
    the generic diagnosis's function or None). ``own``: whether
    ``expected`` states its own dtype and device (a number does neither:
    it is then compared in the answer's)."""
    import torch

    if produced is None:
        return None, expected, msg("cmp.none", what=what), lambda: diagnose_none(context)
    try:
        got = to_tensor(produced, expected, what)  # GradeFailure for what is no tensor
    except GradeFailure as failure:
        return None, expected, failure.feedback, None
    expected = matched_expected(expected, got, *own)
    if got.device.type != expected.device.type:
        return None, expected, msg("cmp.device", what=what, expected=expected.device.type, got=got.device.type), None
    if got.is_floating_point() and not bool(torch.isfinite(got).all()) and bool(torch.isfinite(expected).all()):
        kind = msg("kind.nan" if bool(torch.isnan(got).any()) else "kind.infinite")
        nonfinite = msg("cmp.nonfinite", what=what, kind=kind) + "\n" + msg("cmp.produced", desc=describe(got))
        return None, expected, nonfinite, None
    if got.shape != expected.shape:
        return (
            None,
            expected,
            msg("cmp.shape", what=what, expected=tuple(expected.shape), got=tuple(got.shape)),
            lambda: diagnose_values(got.double().cpu(), expected.double().cpu(), context),
        )
    if check_dtype and got.dtype != expected.dtype:
        dtypes = {"expected": str(expected.dtype).removeprefix("torch."), "got": str(got.dtype).removeprefix("torch.")}
        return None, expected, msg("cmp.dtype", what=what, **dtypes), None
    return got, expected, None, None


def author_diagnosis(diagnose: Callable[[], str | None] | None, what: str) -> str | None:
    """The text a check's own ``diagnose()`` gives (None: it knows no better
    than the generic diagnoses), noted as the student's diagnosis. Its
    failure to give one is the check's error, never the student's."""
    if diagnose is None:
        return None
    name = getattr(diagnose, "__qualname__", None) or type(diagnose).__name__
    try:
        text = diagnose()
    except (GradeFailure, GraderError, CheckError):
        raise  # the student's code, called again to diagnose, failed; the sandbox; the check said so itself
    except Exception as exc:  # noqa: BLE001  (whatever the author's code raised)
        raise CheckError(
            msg("cmp.diagnose_raised", name=name, what=what, error=f"{type(exc).__name__}: {exc}")
        ) from exc
    if text is not None and not isinstance(text, str):
        raise CheckError(msg("cmp.diagnose_not_text", name=name, what=what, got=type(text).__name__))
    if text:
        note_diagnosis(text, text)
    return text or None

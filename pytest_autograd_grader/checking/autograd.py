"""The ``autograd`` fixture: references from torch.autograd, comparisons that
explain themselves, and partial credit.

Every verdict is computed here, in the pytest process, from plain records; a
mismatch raises ``GradeFailure`` with expected against produced and, when a
known misconception fits, its diagnosis.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..boundary.records import ErrorRecord, TensorRecord
from ..boundary.tracing import Trace
from ..i18n import msg, note_diagnosis
from ..outcomes import CheckError, GradeFailure, StudentFailure
from .answers import answer_form, author_diagnosis
from .compare import describe, difference_lines, expected_tensor, hint_text, kind_of, message_text, values
from .grad_options import GradOptions, aligned_answers
from .gradcheck import run_gradcheck
from .malformed import why_not_sequence, with_reason
from .misconceptions import Context, Divisor
from .parts import CheckCredit, Part, Parts
from .provenance import calls_added
from .reference import reference_grad
from .student_errors import expected_error, told_for_task, update_diagnosis
from .tensor_answers import as_tensor, assert_values, meta_problem

if TYPE_CHECKING:
    from torch import Tensor

# the share of a check's points for instructions read from the student's own
# trace, where its marker declares none (grade(instruction_share=...))
DEFAULT_INSTRUCTION_SHARE = 0.25


class Autograd:
    """Compare a student's gradients with torch.autograd and explain misses."""

    def __init__(self, device: str = "cpu", credit: CheckCredit | None = None) -> None:
        self.device = device
        self._credit = credit

    # -- references --------------------------------------------------------
    def grad(
        self,
        fn: Callable[..., Any],
        inputs: Sequence[Any],
        grad_outputs: Any = None,
        *,
        wrt: Sequence[int] | None = None,
        order: int = 1,
    ) -> tuple[Tensor, ...]:
        """Gradients of ``fn(*inputs)`` with respect to ``inputs[i]`` for i in
        ``wrt`` (default: every floating tensor), computed in float64 and
        returned in each input's dtype. ``grad_outputs`` gives the vector of
        a vector-Jacobian product; ``order=2`` differentiates the (summed)
        first gradient once more."""
        return reference_grad(fn, inputs, grad_outputs, wrt, order)

    # -- comparisons ---------------------------------------------------------
    def assert_grad(
        self,
        produced: Any,
        expected: Any,
        what: str,
        *,
        context: Context | None = None,
        check_dtype: bool = True,
        rtol: float | None = None,
        atol: float | None = None,
        diagnose: Callable[[], str | None] | None = None,
    ) -> None:
        """Compare one produced gradient (a record, tensor, number or None)
        with the expected tensor; raise GradeFailure explaining any miss.
        ``diagnose()``, called for any wrong answer (wrong values, None,
        NaN or inf, a wrong shape, dtype, device or form), may name the
        mistake better than the generic diagnoses: its text then replaces
        theirs. Should it raise, the check is broken (``error``)."""
        # a number or numpy array as expected is compared in the answer's
        # terms; a value that cannot be compared is the check's error
        expected, own_dtype, own_device = expected_tensor(expected, what)
        check_dtype = check_dtype and own_dtype
        context = context or Context()
        if isinstance(produced, TensorRecord) and context.holder is produced:
            produced = produced.grad  # the tensor itself was passed: compare its .grad
        got, expected, problem, generic = answer_form(
            produced, expected, what, context, check_dtype, as_tensor, own=(own_dtype, own_device)
        )
        if problem is not None:
            hint = author_diagnosis(diagnose, what) or (generic() if generic is not None else None)
            raise GradeFailure(problem + (("\n" + hint) if hint else ""))
        assert_values(got, expected, what, context, (rtol, atol), diagnose)

    def assert_close(self, produced: Any, expected: Any, what: str, **kwargs: Any) -> None:
        """Compare values that are not gradients (outputs, intermediates)."""
        self.assert_grad(produced, expected, what, **kwargs)

    def check_grad(  # noqa: PLR0913  (public API: the documented keywords)
        self,
        produced: Any,
        fn: Callable[..., Any],
        inputs: Sequence[Any],
        *,
        grad_outputs: Any = None,
        wrt: Sequence[int] | None = None,
        order: int = 1,
        names: Sequence[str] | None = None,
        mean_over: int | None = None,
        calls: int | None = None,
        holders: Sequence[Any] | None = None,
        role: str | None = None,
        scale: float = 1.0,
        previous: Sequence[Tensor] = (),
        trace: Trace | None = None,
        grad_of: str = "x",
        divisors: Sequence[Divisor] = (),
    ) -> None:
        """The student's gradient(s) of ``fn`` at ``inputs`` against
        torch.autograd's. ``produced`` is one gradient or a sequence aligned
        with ``wrt``; ``scale`` multiplies the reference (e.g. k backward
        calls that should accumulate); ``previous`` holds the expected
        gradients of a loop's earlier steps, to recognise a running sum;
        ``trace`` (``submission.trace``) lets diagnoses count the backward
        calls the student really made; ``grad_of`` names the tensor whose
        ``.grad`` it is in advice ("zero w.grad"); ``divisors`` (``Divisor``
        entries) name the reductions the task divides by and likely slips."""
        options = GradOptions(
            grad_outputs=grad_outputs,
            wrt=wrt,
            order=order,
            names=names,
            mean_over=mean_over,
            calls=calls,
            holders=holders,
            role=role,
            scale=scale,
            previous=previous,
            trace=trace,
            grad_of=grad_of,
            divisors=divisors,
        )
        expected = self.grad(fn, inputs, grad_outputs, wrt=wrt, order=order)
        ones = self._ones_vjps(fn, inputs, options)
        items = aligned_answers(produced, len(expected), names)
        for i, (got, want) in enumerate(zip(items, expected)):
            self.assert_grad(got, want * scale, options.what(i), context=options.context(i, ones))

    def _ones_vjps(
        self, fn: Callable[..., Any], inputs: Sequence[Any], options: GradOptions
    ) -> tuple[Tensor, ...] | None:
        """The VJPs with vectors of ones where ``grad_outputs`` were given:
        the answer of a student who ignored them."""
        if options.grad_outputs is None:
            return None
        import torch

        gos = options.grad_outputs if isinstance(options.grad_outputs, (tuple, list)) else (options.grad_outputs,)
        return self.grad(fn, inputs, tuple(torch.ones_like(g) for g in gos), wrt=options.wrt, order=options.order)

    def assert_equal(
        self, produced: Any, expected: Any, what: str, *, labels: Sequence[str] | None = None, hint: str | None = None
    ) -> None:
        """Plain values: booleans, names, numbers, None, lists and dicts of
        them. Every wrong item of a sequence is listed (named by ``labels``
        when given); ``hint`` (a message id or text) is added to any failure."""
        lines = difference_lines(produced, expected, what, labels)
        if lines:
            raise GradeFailure("\n".join(lines + ([hint_text(hint)] if hint else [])))

    def fail_with(self, what: str, produced: Any, expected: Tensor, diagnosis: str) -> None:
        """Fail as a wrong value of ``what`` with the check's own diagnosis
        (a text), for a mistake the check recognised (``first_suspect``):
        expected against produced, then the diagnosis."""
        shown = values(produced)
        note_diagnosis(diagnosis, diagnosis)
        raise GradeFailure(
            "\n".join(
                [
                    msg("cmp.mismatch", what=what),
                    msg("cmp.expected", desc=describe(expected)),
                    msg("cmp.produced", desc=describe(shown) if shown is not None else kind_of(produced)),
                    diagnosis,
                ]
            )
        )

    def call_update(self, function: Any, probe_args: tuple[Any, ...] | None, name: str, what: str, *args: Any) -> Any:
        """Call a student function that updates the parameter ``name`` step by
        step. When it fails with an error, run one step alone on
        ``probe_args`` (None: do not): if that step left the parameter a
        non-leaf or a tensor without requires_grad, the feedback names that
        update rather than the error it led to later."""
        try:
            return function(*args)
        except StudentFailure as failure:
            diagnosed = update_diagnosis(failure, function, probe_args, name, what)
            if diagnosed is None:
                raise
            raise GradeFailure(diagnosed) from None

    def require(self, ok: bool, message: str, **fields: Any) -> None:
        """A requirement the grader can see for itself (the form of an
        answer, an error the student's function let escape): when ``ok`` is
        false the check fails with ``message`` (a message id, whose
        ``{fields}`` are filled in, or plain text). For what only the
        student's trace shows, use ``instruction``."""
        if not ok:
            raise GradeFailure(hint_text(message, **fields))

    def instruction(self, ok: bool, message: str, **fields: Any) -> None:
        """An instruction of the task that values cannot show ("by hand",
        "one backward per loss"), decided from ``submission.trace`` or
        from who raised an error: what the student's process says about
        itself, which its code can forge. So breaking it costs the share of
        the points the marker declares (``instruction_share``), never the
        check: the check goes on, and the values the grader recomputes keep
        the rest. ``message``: a message id (its ``{fields}`` filled in) or
        plain text. A marker that declares no share gets
        ``DEFAULT_INSTRUCTION_SHARE``; outside a graded check (no credit to
        keep) a broken instruction fails at once."""
        text = hint_text(message, **fields) if not ok else message_text(message, **fields)
        credit = self._credit
        if credit is None:
            if not ok:
                raise GradeFailure(text)
            return
        credit.instruction(ok, text, DEFAULT_INSTRUCTION_SHARE)

    def unpack(self, produced: Any, n: int, what: str) -> list[Any]:
        """``produced`` as a list of ``n`` values. Unpack student returns with
        this rather than ``a, b = ...``: a malformed return is then the
        student's failed check, not a ValueError that marks the check broken."""
        if not isinstance(produced, (list, tuple)):
            raise GradeFailure(
                with_reason(
                    msg("cmp.container", what=what, expected=msg("kind.sequence", n=n), got=kind_of(produced)),
                    why_not_sequence(produced, n),
                )
            )
        if len(produced) != n:
            raise GradeFailure(
                with_reason(msg("cmp.count", what=what, expected=n, got=len(produced)), why_not_sequence(produced, n))
            )
        return list(produced)

    def assert_meta(self, record: Any, what: str, *, hint: str | None = None, **expected: Any) -> None:
        """Autograd metadata of a returned tensor: ``is_leaf``, ``grad_fn``
        (a class name or None), ``requires_grad``, ``retains_grad`` and
        ``has_grad`` (whether .grad holds a tensor). ``hint`` (a message id
        or text) replaces the built-in diagnosis."""
        problem = meta_problem(record, what, hint, expected)
        if problem is not None:
            raise GradeFailure(problem)

    def expect_error(
        self,
        name: str,
        produced: Any,
        *args: Any,
        what: str | None = None,
        hint: str | None = None,
        trace: Trace | None = None,
    ) -> ErrorRecord:
        """``produced`` must be the autograd error ``name`` (see
        ``AUTOGRAD_ERRORS``): an ErrorRecord the student returned, or a student
        function to call with ``args`` that must raise it. ``hint`` (a
        diagnosis) follows any complaint.

        PyTorch must have raised it: in PyTorch's own words, from torch's
        code, and out of a torch call in the trace of the student call that
        handed it back (``trace``, by default the record's own) that raises
        this error given what the trace recorded of it (``backward_twice``:
        a backward or autograd.grad call through a graph an earlier call
        freed; ``implicit_grad``: one given no gradient for a non-scalar;
        ``inplace_leaf``: an in-place op on a leaf that requires grad; ...),
        never from the student's own code that call ran (a hook, a custom
        Function's backward). A made-up error ends the check with no
        points, even inside ``part``."""
        error = expected_error(name, produced, args, what, hint, trace)
        self.instruction(True, "")
        return error

    def calls_added(
        self, trace: Trace, expected: Sequence[Tensor], argument: int = 0, *, kind: str | None = None
    ) -> bool:
        """Whether each backward (and autograd.grad) call that completed in
        ``trace`` did its share: exactly one call per entry of ``expected``
        (the gradients the calls should add, e.g. one per micro-batch), each
        adding its entry's gradient to positional argument ``argument``'s
        ``.grad`` (an autograd.grad call: returning it), in any order, up to
        one positive factor common to all calls. A dummy backward on a
        throw-away graph adds nothing there and fails it. ``kind``:
        "backward" or "grad" counts only those calls. For
        ``autograd.instruction``."""
        return calls_added(trace, expected, argument, kind=kind)

    def gradcheck(
        self,
        student_fn: Any,
        inputs: Sequence[Tensor],
        what: str | None = None,
        *,
        names: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """``torch.autograd.gradcheck`` on a student function (for example a
        custom Function's ``apply``), run from the grader: the forward and the
        student's backward are called through the proxy, so the verdict is
        the grader's own. A failure is told as which input, which entry of
        its Jacobian (finite differences of the forward against the
        student's backward) and the likely mistake, never as raw matrices;
        ``names`` names the inputs (default "input 1", "input 2", ...);
        other keywords go to torch.autograd.gradcheck. (Its fast mode is
        not the default: a random projection of the Jacobians can let a
        wrong backward pass when its errors cancel, e.g. over inputs of both
        signs.) The summary reuses the calls gradcheck made, so a failure
        costs the student's code almost no extra calls."""
        what = what or str(getattr(student_fn, "qualname", "function"))
        run_gradcheck(student_fn, inputs, what, names, as_tensor, **kwargs)

    @contextlib.contextmanager
    def hints(self, **task: Any) -> Iterator[Context]:
        """Tell the grader what the task is about (``Context`` fields, e.g.
        ``order=2``), so an error the student's code raises inside this block
        gets the diagnosis that fits the task rather than the generic one."""
        context = Context(**task)
        try:
            yield context
        except StudentFailure as failure:
            refit = told_for_task(failure, context)
            if refit is None:
                raise
            raise refit from None

    # -- partial credit --------------------------------------------------------
    def part(self, weight: float = 1.0, name: str | None = None, needs: Part | Sequence[Part] | None = None) -> Part:
        """A part of the check worth ``weight`` relative to its siblings: a
        wrong answer (or a student error) inside it costs only this part.
        Used as ``with autograd.part(2):``, parts nest and split their
        parent's weight. Used as a decorator on a function of no arguments,
        it runs the function at once, or, when a part it ``needs`` (a handle
        or a sequence of them) is not wholly right, skips it: no points, one
        line of feedback. ``name`` (text or a message id; by default the
        function's name, else "part N") names it in the feedback. Returns
        the part's handle, for a later ``needs=``. The rules: the course
        authors' page "Partial credit" (docs/authors/partial-credit.md)."""
        return self._parts().new(weight, name, needs)

    def parts(self, total: float) -> None:
        """Declare the total weight of the check's top-level parts, so that a
        failure outside every part keeps the credit of the parts passed (the
        parts not reached count as wrong). Without it such a failure earns
        nothing; a check that ends with parts weighing other than ``total``
        is an error of the check."""
        self._parts().declare(total)

    def _parts(self) -> Parts:
        if self._credit is None:
            raise CheckError("autograd.part: partial credit needs the autograd fixture of a graded check")
        return self._credit.parts

    def credit(self, fraction: float, feedback: str = "") -> None:
        """Award ``fraction`` (0 to 1) of the check's points; below 1 the check
        is reported failed with ``feedback``."""
        if not 0 <= fraction <= 1:
            raise CheckError(f"autograd.credit: fraction must be between 0 and 1, got {fraction!r}")
        credit = self._credit
        if credit is None:  # an Autograd() of a test's own, not the fixture
            raise CheckError("autograd.credit: partial credit needs the autograd fixture of a graded check")
        credit.explicit = float(fraction)
        credit.explicit_feedback = feedback

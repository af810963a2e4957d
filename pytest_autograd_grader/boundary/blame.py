"""Whose fault is an exception that escapes a check: the student's answer, or
the check itself?

Any exception other than a ``GradeFailure`` makes a check ``error`` ("ask
your instructor"). That is wrong when the check tripped over a malformed
answer: ``for g in got`` on an int, ``a, b = got`` on a 3-tuple, ``got[0]``
on None. So every value student code hands back to a check is remembered by
identity (``StudentValues``), and when a check dies of an error a wrong value
can cause, the instruction that failed is looked up: if it used one of those
values, the check is ``failed`` instead (``blame_student``).

The same registry keeps text from student code out of what an ``error``
check says (``redact``): that feedback reaches instructors' tools and TAs, and
a student must not be able to write into it.
"""

from __future__ import annotations

import ast
import itertools
import json
import linecache
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import pytest

from ..i18n import msg
from ..outcomes import NOT_A_STUDENT_VALUE, CheckError, CheckValueError
from .author_code import is_author_file as _is_author_file
from .records import ErrorRecord, ObjectRecord, TensorRecord
from .shortening import shorten

# Errors a value of the wrong form causes. Not NameError, ImportError,
# SyntaxError, UnboundLocalError...: those are always the check's own.
WRONG_VALUE_ERRORS = (
    TypeError,
    ValueError,
    AttributeError,
    IndexError,
    KeyError,
    RuntimeError,
    StopIteration,
    ZeroDivisionError,
    OverflowError,
)
NEVER_THE_VALUE = (RecursionError, NotImplementedError)  # RuntimeErrors of the check's own making

# A TypeError from calling with the wrong arguments is the caller's mistake,
# whatever values it passed (``autograd.assert_grad(got, e, "x", tol=1)``).
_SIGNATURE_ERROR = re.compile(
    r"unexpected keyword argument|missing \d+ required|takes (from )?\d+ (to \d+ )?positional argument"
    r"|got multiple values for argument|takes no (keyword )?arguments|is an invalid keyword argument"
    r"|positional-only arguments passed as keyword"
)

REDACT_MIN_LENGTH = 3
_PREFIX = 32  # a long string is also found cut short, as in ValueError's %.200R
_SHORT = 8  # strings this short are redacted only as whole words
_MISSING = object()
_STUDENT_ANSWER = object()  # the value of a call into student code
_COMPREHENSIONS = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")


@dataclass
class StudentValues:
    """Everything student code handed back to one check, by identity."""

    objects: dict[int, Any] = field(default_factory=dict)  # id -> object; holding it keeps the id unique
    # None and booleans are shared by all code, so identity cannot tell whose
    # they are; remember only that the student's answer contained them.
    singletons: list = field(default_factory=list)
    strings: set[str] = field(default_factory=set)  # for redaction

    def add(self, value: Any) -> None:
        """Record ``value`` and everything inside it (the ``on_value`` callback)."""
        stack = [(value, True)]  # (object, part of the answer's structure)
        while stack:
            obj, structural = stack.pop()
            if obj is None or type(obj) is bool:
                # A TensorRecord's grad=None is normal; a None the student
                # returned (or put in a list) is an answer of the wrong form.
                if structural and not any(obj is s for s in self.singletons):
                    self.singletons.append(obj)
                continue
            if id(obj) in self.objects:
                continue
            self.objects[id(obj)] = obj
            if type(obj) is str:
                self.strings.add(obj)
            stack.extend(_parts(obj))

    def owns(self, value: Any) -> bool:
        if value is None or type(value) is bool:
            return any(value is s for s in self.singletons)
        return id(value) in self.objects

    def __bool__(self) -> bool:
        return bool(self.objects or self.singletons)


def _parts(obj: Any) -> Iterable[tuple[Any, bool]]:
    """What ``obj`` holds, each with whether it is part of the answer's
    structure (an item) or a record's field."""
    kind = type(obj)
    if kind in (list, tuple):
        return ((item, True) for item in obj)
    if kind is dict:
        return ((item, True) for pair in obj.items() for item in pair)
    if kind is TensorRecord:
        # dtype, device and shape are read from the tensor by the grader
        return ((item, False) for item in (obj.data, obj.grad, obj.grad_fn))
    if kind is ErrorRecord:
        return ((item, False) for item in (obj.type, obj.message, obj.file, obj.code, obj.raised_by))
    if kind is ObjectRecord:
        return ((item, False) for item in (obj.type, obj.repr))
    return ()


STUDENT_VALUES = pytest.StashKey[StudentValues]()


def student_values(item: pytest.Item) -> StudentValues:
    """The registry of ``item``'s check (created on first use)."""
    return item.stash.setdefault(STUDENT_VALUES, StudentValues())


def forget_student_values(item: pytest.Item) -> None:
    """Drop the registry, so no student tensor outlives its check."""
    if STUDENT_VALUES in item.stash:
        del item.stash[STUDENT_VALUES]


# -- blame ----------------------------------------------------------------


def blame_student(exc: BaseException, values: StudentValues | None) -> str | None:
    """The feedback of a check that failed because of the form of the
    student's answer, or None when the exception is the check's own bug."""
    if isinstance(exc, CheckValueError):
        return _blame_value(exc, values)
    if (
        not values
        or not isinstance(exc, WRONG_VALUE_ERRORS)
        or isinstance(exc, NEVER_THE_VALUE)
        or isinstance(exc, (AssertionError, CheckError))
    ):
        return None
    try:
        if not _student_value_used(exc, values):
            return None
        text = str(exc).strip()
    except Exception:  # noqa: BLE001  when in doubt, the check stays an error
        return None
    error = type(exc).__name__ + (f": {shorten(text.splitlines()[0], 300)}" if text else "")
    return msg("blame.malformed", error=redact(error, values))


def _blame_value(exc: CheckValueError, values: StudentValues | None) -> str | None:
    """A value the check could not use (an expected value, an argument) is
    the student's doing only when it came from student code: the other
    operands of the same call (the student's answer beside an expected
    value of the wrong type) decide nothing."""
    if not values or exc.value is NOT_A_STUDENT_VALUE or not _is_students(exc.value, values):
        return None
    return msg("blame.malformed", error=redact(exc.student_error, values))


def _student_value_used(exc: BaseException, values: StudentValues) -> bool:
    """Whether the instruction that raised ``exc`` in the check author's
    code worked on a value from student code."""
    where = _failing_frame(exc.__traceback__)
    if where is None:
        return False
    frame, lasti, lineno, outer = where
    found = _operands(frame.f_code, lasti, lineno)
    if found is None:
        return False
    operands, failed = found
    if isinstance(exc, TypeError) and _SIGNATURE_ERROR.search(str(exc)):
        # Wrong arguments are the caller's fault, unless the student's value
        # decided how many there were (``f(*got)``).
        operands = [
            n.value
            for node in operands
            for n in ast.walk(node)
            if isinstance(n, ast.Starred) or (isinstance(n, ast.keyword) and n.arg is None)
        ]
    scopes = [frame.f_locals, frame.f_globals]
    if outer is not None and frame.f_code.co_name in _COMPREHENSIONS:
        scopes += [outer.f_locals, outer.f_globals]  # the iterable was evaluated outside
    return any(_is_students(value, values) for value in _values_used(operands, scopes, failed))


def _is_students(value: Any, values: StudentValues) -> bool:
    if value is _STUDENT_ANSWER or values.owns(value):
        return True
    # the check's own list of student values: torch.stack(grads)
    if type(value) in (list, tuple):
        return any(values.owns(v) for v in value[:1000])
    if type(value) is dict:
        return any(values.owns(v) for v in itertools.islice(value.values(), 1000))
    return False


def _failing_frame(tb: TracebackType | None):
    """(frame, lasti, lineno, the frame that called it) of the innermost
    traceback entry in the check author's code."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    for i in range(len(entries) - 1, -1, -1):
        entry = entries[i]
        if _is_author_file(entry.tb_frame.f_code.co_filename):
            outer = entries[i - 1].tb_frame if i > 0 else None
            return entry.tb_frame, entry.tb_lasti, entry.tb_lineno, outer
    return None


def _span(code, lasti: int, lineno: int) -> tuple[int, int, int, int] | None:
    """Where the failed instruction is in the source: lines and UTF-8 columns."""
    positions = getattr(code, "co_positions", None)  # Python 3.11+
    if positions is not None and lasti >= 0:
        span = next(itertools.islice(positions(), lasti // 2, None), None)
        if span is not None and None not in span:
            return span
    return None if lineno is None else (lineno, lineno, 0, sys.maxsize)  # Python 3.10: the whole line


def _operands(code, lasti: int, lineno: int) -> tuple[list[ast.AST], ast.AST | None] | None:
    """The expressions the failed instruction worked on, and the node of the
    instruction itself when it is one of them."""
    span = _span(code, lasti, lineno)
    source = "".join(linecache.getlines(code.co_filename))
    if span is None or not source:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    parents: dict[ast.AST, ast.AST] = {}
    exact, inside = [], []
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
        where = (
            getattr(node, "lineno", None),
            getattr(node, "end_lineno", None),
            getattr(node, "col_offset", None),
            getattr(node, "end_col_offset", None),
        )
        if None in where:
            continue
        if where == span:
            exact.append(node)
        elif (where[0], where[2]) >= (span[0], span[2]) and (where[1], where[3]) <= (span[1], span[3]):
            inside.append(node)
    if exact:
        node = exact[-1]  # ast.walk goes outside in: the last is the innermost
        operand = _operand(node, parents)
        return [operand], (node if operand is node else None)
    return inside, None


def _operand(node: ast.AST, parents: dict) -> ast.AST:
    """For a loop (its whole statement is the failed GET_ITER) the iterable;
    for an unpacking target (``a, b`` in ``a, b = got``) the value unpacked."""
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return node.iter
    while isinstance(getattr(node, "ctx", None), ast.Store) and node in parents:
        parent = parents[node]
        if isinstance(parent, (ast.Assign, ast.AugAssign, ast.NamedExpr)):
            return parent.value
        if isinstance(parent, ast.AnnAssign) and parent.value is not None:  # ``x: int`` alone runs nothing
            return parent.value
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)):
            return parent.iter
        if isinstance(parent, ast.withitem):
            return parent.context_expr
        node = parent
    return node


def _values_used(operands: list[ast.AST], scopes: list[dict], failed: ast.AST | None) -> list[Any]:
    """The values of the names, attributes and constant subscripts in
    ``operands``, read without running any code of the objects; a call into
    student code stands for its answer (``a, b = submission("m").f(x)``),
    unless the call itself is what failed."""
    found = []
    for operand in operands:
        for node in ast.walk(operand):
            if isinstance(node, ast.Call) and node is not failed and _calls_student(node, scopes):
                found.append(_STUDENT_ANSWER)
            elif isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Store):
                value = _lookup(node, scopes)
                if value is not _MISSING:
                    found.append(value)
    return found


def _calls_student(call: ast.Call, scopes: list[dict]) -> bool:
    """``m.f(x)``, ``m.f.capture(x)``, ``submission("m").f(x)``: the root of
    the callee is a proxy to student code, or the ``submission`` fixture."""
    from .submission import StudentFunction, Submission, Submissions

    func = call.func
    while isinstance(func, (ast.Attribute, ast.Call)):
        func = func.value if isinstance(func, ast.Attribute) else func.func
    root = _lookup(func, scopes)
    return isinstance(root, (Submission, StudentFunction, Submissions))


def _lookup(node: ast.AST, scopes: list[dict]) -> Any:
    if isinstance(node, ast.Name):
        return next((scope[node.id] for scope in scopes if node.id in scope), _MISSING)
    if isinstance(node, ast.Attribute):
        base = _lookup(node.value, scopes)
        attributes = getattr(base, "__dict__", None) if base is not _MISSING else None
        return attributes.get(node.attr, _MISSING) if type(attributes) is dict else _MISSING
    if isinstance(node, ast.Subscript):
        base = _lookup(node.value, scopes)
        key = node.slice.value if isinstance(node.slice, ast.Constant) else _lookup(node.slice, scopes)
        if type(base) in (list, tuple, dict) and type(key) in (int, str):
            try:
                return base[key]
            except (LookupError, TypeError):
                return _MISSING
    return _MISSING


# -- redaction ------------------------------------------------------------


def redact(text: str, values: StudentValues | None) -> str:
    """``text`` with every string from student code (3+ characters, also as
    repr/JSON escapes it and cut short) replaced by a placeholder."""
    if not text or not values or not values.strings:
        return text
    spans = []
    for string in values.strings:
        if len(string) < REDACT_MIN_LENGTH:
            continue
        for form in {string, repr(string)[1:-1], ascii(string)[1:-1], json.dumps(string)[1:-1]}:
            if len(form) >= REDACT_MIN_LENGTH:
                spans.extend(_occurrences(text, form))
    if not spans:
        return text
    placeholder = msg("blame.redacted")
    parts, end = [], 0
    for start, stop in sorted(spans):
        if start < end:  # overlaps the previous one: merge
            if stop > end:
                end = stop
            continue
        parts += [text[end:start], placeholder]
        end = stop
    return "".join(parts) + text[end:]


def _occurrences(text: str, form: str) -> list[tuple[int, int]]:
    head = form[:_PREFIX]
    found = []
    start = text.find(head)
    while start >= 0:
        stop = start + len(head)
        while stop - start < len(form) and stop < len(text) and text[stop] == form[stop - start]:
            stop += 1
        if len(form) >= _SHORT or _whole_word(text, start, stop):
            found.append((start, stop))
        start = text.find(head, start + 1)
    return found


def _whole_word(text: str, start: int, stop: int) -> bool:
    """A short string ('sum') is not redacted inside a longer word ('summary')."""

    def word(c: str) -> bool:
        return c.isalnum() or c == "_"

    return not (start > 0 and word(text[start - 1]) and word(text[start])) and not (
        stop < len(text) and word(text[stop]) and word(text[stop - 1])
    )


def redact_report(report: pytest.TestReport, values: StudentValues | None) -> None:
    """Redact the traceback and captured output pytest shows for a check."""
    if not values or not values.strings:
        return
    if report.longrepr is not None and not isinstance(report.longrepr, tuple):
        text = str(report.longrepr)
        clean = redact(text, values)
        if clean != text:
            report.longrepr = clean
    report.sections = [(title, redact(content, values)) for title, content in report.sections]

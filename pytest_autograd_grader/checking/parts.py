"""Partial credit: the parts of a check, how much each earns and what the
student is told.

The rules (docs/authors/partial-credit.md):

- a part's weight is relative to its siblings; nested parts split their
  parent's weight in proportion to their own weights;
- a part ``needs=`` others: when one of them is not wholly right, the part
  is skipped, its body is not run, it earns nothing and the feedback says
  so once instead of failing a second time;
- a failure outside every part ends the check. The parts already passed
  keep their feedback; they keep their credit only when the check declared
  its total weight (``autograd.parts(total=...)``), the parts it did not
  reach then counting as wrong. Without a declared total it earns nothing:
  the weight still to come is unknown, and any credit would let a student
  gain by raising where a wrong answer would lose the rest;
- a made-up autograd error (``ForgedError``) costs the whole check.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..i18n import msg
from ..outcomes import CheckError, GradeFailure
from ..protocol import Status
from .compare import message_text
from .provenance import ForgedError

WHOLE = 1 - 1e-9  # a part earning this much is wholly right (weights are floats)


@dataclass(eq=False)
class Part:
    """One part of a check: a context manager (``with autograd.part(2):``)
    or a decorator that runs the function at once
    (``@autograd.part(2, needs=forward)``); either way the handle names the
    part for a later ``needs=``."""

    book: Parts
    weight: float
    name: str | None = None
    needs: tuple[Part, ...] = ()
    label: str = ""  # the name shown in feedback ("part 2" when unnamed)
    state: str = "new"  # new, open, done, skipped
    failure: GradeFailure | None = None  # what failed in its own body
    missing: Part | None = None  # the needed part that was not right, when skipped
    children: list[Part] = field(default_factory=list)

    # -- the two forms -------------------------------------------------------
    def __enter__(self) -> Part:
        if self.needs:
            raise CheckError(
                f"autograd.part({self.label!r}, needs=...): a part that needs another is written as "
                "a decorated function, @autograd.part(weight, needs=other) def body(): ..., so "
                "that the grader can skip its body; a with block cannot be skipped"
            )
        self.book.open(self)
        return self

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: Any) -> bool:
        self.book.close(self)
        if isinstance(exc, ForgedError) or not isinstance(exc, GradeFailure):
            return False  # a made-up error costs the whole check; the check's own bugs are errors
        self.failure = exc
        return True

    def __call__(self, body: Callable[[], Any]) -> Part:
        if self.name is None and getattr(body, "__name__", "<lambda>") != "<lambda>":
            self.name = body.__name__
        missing = next((need for need in self.needs if not self.book.right(need, self)), None)
        if missing is not None:
            self.book.attach(self)
            self.state, self.missing = "skipped", missing
            return self
        self.needs = ()
        with self:
            body()
        return self

    # -- what it earned ------------------------------------------------------
    def earned(self) -> float:
        """The share of this part's weight that it earned, 0 to 1."""
        if self.state != "done" or self.failure is not None:
            return 0.0
        return share_of(self.children) if self.children else 1.0


def share_of(parts: Sequence[Part]) -> float:
    total = sum(p.weight for p in parts)
    return sum(p.weight * p.earned() for p in parts) / total if total else 0.0


@dataclass
class Parts:
    """The parts a check recorded, as a tree, and its declared total."""

    children: list[Part] = field(default_factory=list)
    stack: list[Part] = field(default_factory=list)
    total: float | None = None

    def new(self, weight: Any, name: str | None, needs: Any) -> Part:
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight < math.inf:
            raise CheckError(f"autograd.part: weight must be a positive number, got {weight!r}")
        needs = (needs,) if isinstance(needs, Part) else tuple(needs or ())
        if any(not isinstance(need, Part) or need.book is not self for need in needs):
            raise CheckError(
                f"autograd.part: needs= takes parts of this check (what autograd.part returned), got {needs!r}"
            )
        return Part(self, float(weight), name, needs)

    def declare(self, total: Any) -> None:
        if isinstance(total, bool) or not isinstance(total, (int, float)) or not 0 < total < math.inf:
            raise CheckError(f"autograd.parts: total must be a positive number, got {total!r}")
        self.total = float(total)

    def attach(self, part: Part) -> None:
        if part.state != "new":
            raise CheckError(f"autograd.part: {part.label} was used twice; call autograd.part once per part")
        siblings = self.stack[-1].children if self.stack else self.children
        siblings.append(part)
        shown = part.name and message_text(part.name)
        part.label = shown or msg("cmp.part_n", n=len(siblings))

    def open(self, part: Part) -> None:
        self.attach(part)
        part.state = "open"
        self.stack.append(part)

    def close(self, part: Part) -> None:
        if self.stack and self.stack[-1] is part:
            self.stack.pop()
        part.state = "done"

    def right(self, need: Part, part: Part) -> bool:
        if need.state in ("new", "open"):
            raise CheckError(
                f"autograd.part({part.name or ''!r}): it needs a part that has not finished yet; "
                "a part can only need one that came before it"
            )
        return need.earned() >= WHOLE

    # -- the score -----------------------------------------------------------
    def weights(self) -> tuple[float, float]:
        """(earned, total) weight of the top-level parts."""
        return sum(p.weight * p.earned() for p in self.children), sum(p.weight for p in self.children)

    def fraction(self, stopped: bool) -> float | None:
        """The check's fraction from its parts; ``stopped``: a failure
        outside every part ended it. None without parts."""
        if not self.children:
            return None
        earned, total = self.weights()
        if self.total is not None and total > self.total * (1 + 1e-9):
            raise CheckError(f"autograd.parts(total={self.total:g}): the parts weigh {total:g}, more than the total")
        if stopped:
            return earned / self.total if self.total is not None else 0.0
        if self.total is not None and total < self.total * (1 - 1e-9):
            raise CheckError(
                f"autograd.parts(total={self.total:g}): the check ended with parts weighing only "
                f"{total:g}; declare the weight of every part it runs"
            )
        return earned / total

    # -- the feedback ----------------------------------------------------------
    def lines(self, raised: GradeFailure | None = None) -> list[str]:
        """The feedback: a count at the top level, then each part not wholly
        right, nested failures indented under their part, then ``raised``,
        the failure outside every part that stopped the check."""
        stopped = raised is not None
        earned, total = self.weights()
        whole = all(p.earned() <= 1 - WHOLE or p.earned() >= WHOLE for p in self.children)
        passed = sum(p.weight for p in self.children if p.earned() >= WHOLE) if whole else earned
        if stopped:
            key = "cmp.parts_stopped_total" if self.total is not None else "cmp.parts_stopped"
            head = msg(key, passed=passed, total=self.total or total)
        else:
            head = msg("cmp.parts" if whole else "cmp.parts_earned", passed=passed, total=total)
        out, seen = [head], set[str]()
        _part_lines(self.children, 0, out, seen)
        if raised is not None and raised.feedback not in seen:
            out.append(raised.feedback)
        return out


def _part_lines(parts: Sequence[Part], depth: int, out: list[str], seen: set[str]) -> None:
    pad = "  " * depth
    for part in parts:
        if part.state == "skipped" and part.missing is not None:  # a skipped part names what it needed
            key = "cmp.part_skipped_skipped" if part.missing.state == "skipped" else "cmp.part_skipped_failed"
            out.append(pad + msg(key, name=part.label, need=part.missing.label))
            continue
        if part.earned() >= WHOLE:
            continue
        if part.children:
            share = sum(p.weight for p in part.children if p.earned() >= WHOLE)
            out.append(
                pad + msg("cmp.part_within", name=part.label, passed=share, total=sum(p.weight for p in part.children))
            )
            _part_lines(part.children, depth + 1, out, seen)
        if part.failure is not None and part.failure.feedback not in seen:
            # A stub called in several parts fails each the same way: say it once.
            seen.add(part.failure.feedback)
            titled = part.name is not None and not part.children  # a parent's line is already above
            if titled:
                out.append(pad + msg("cmp.part_named", name=part.label))
            inner = pad + ("  " if part.children or titled else "")
            out.extend(inner + line if line else line for line in part.failure.feedback.splitlines())


def worst_status(parts: Sequence[Part]) -> str:
    """timeout or crashed when a part's student call hung or died, else failed."""
    for part in parts:
        if part.failure is not None and part.failure.grade_status != Status.FAILED:
            return part.failure.grade_status
        status = worst_status(part.children)
        if status != Status.FAILED:
            return status
    return Status.FAILED


class CheckCredit(Protocol):
    """What the ``autograd`` fixture needs of the check's credit
    (``session_state.Credit``, which checking may not import): its parts,
    an explicit fraction, and the instructions read from the trace."""

    parts: Parts
    explicit: float | None
    explicit_feedback: str

    def instruction(self, ok: bool, text: str, default_share: float) -> None: ...

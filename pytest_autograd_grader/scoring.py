"""Check results and the gradebook that sums them per concept.

A check's result is computed where the check ran and travels on pytest's test
report as a plain dict, so the controller of a pytest-xdist run adds up exactly
what a single process would.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from .concepts import Concept
from .i18n import msg
from .protocol import Status

SCHEMA = "pytest-autograd-grader/1"
DIAGNOSES_PER_CHECK = 20  # more would say nothing a class report can rank


@dataclass
class CheckSpec:
    """What the ``grade`` marker says about one check."""

    concept: str
    points: float
    hidden: bool
    problem: str | None = None  # set when the marker is unusable
    # where a hidden check's feedback shows on Gradescope: "hidden" (never to
    # students), "after_published" or "after_due_date"; "visible" otherwise
    visibility: str = "visible"
    timeout: float | None = None  # seconds for this check's student code; None: --grade-timeout
    # The share of the points that rests on the student process's own account
    # of how it worked (its trace, who raised an error): that account can be
    # forged, so it never carries more than a small part. None: nothing does.
    instruction_share: float | None = None
    # the input classes (checking/input_classes.py) the check draws on every seed
    inputs: tuple[str, ...] = ()


@dataclass
class CheckResult:
    id: str
    concept: str
    score: float
    max_score: float
    status: str | None  # a Status; None while only the setup phase has been seen
    feedback: str = ""
    hidden: bool = False
    device: str | None = None
    duration_s: float = 0.0
    topic: str | None = None  # the checks file's topic (test_engine.py -> "engine"), for per-track views
    title: str = ""  # readable name: the check's docstring's first line, else its name in words
    # the student's file (relative to the submission) and line the check
    # concerns: the line that raised, else the function it called
    file: str | None = None
    line: int | None = None
    cell: int | None = None  # where ``file`` is a notebook: the cell, counted from 1; ``line`` is in that cell
    visibility: str = "visible"  # Gradescope's: visible, hidden, after_published, after_due_date
    # A hidden check's real feedback, for instructors only: Gradescope's
    # hidden tests and --grade-json-private; ``feedback`` says only that it failed.
    private_feedback: str = ""
    # The part of the points for following the check's instruction, known
    # only from the student's trace: {"share", "score", "max_score",
    # "followed"} (followed: true, false, or null when never looked at).
    instruction: dict[str, Any] | None = None
    # The input classes the check drew on this seed (grade_rng's), and those
    # its marker's inputs= declares but it never drew: a course author's gap
    inputs: list[str] | None = None
    inputs_missing: list[str] | None = None
    # The diagnoses the feedback gives, whatever their source: {"id", "text"}
    # each, the id a diag.* message's or, for an author's plain text, that text
    # (see ``shown_diagnoses``). A hidden check's are for instructors only.
    diagnoses: list[dict[str, str]] = field(default_factory=list)

    PRIVATE = ("private_feedback",)  # fields only instructors' reports carry

    def to_dict(self) -> dict[str, Any]:
        # every field is a plain value but ``instruction``, a flat dict:
        # copied by hand at a tenth of dataclasses.asdict's deep copy (a
        # result is turned into a dict for each of a check's reports)
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        # a plain string, as pytest-xdist's serializer and every report want it
        data["status"] = None if self.status is None else str(self.status)
        if self.instruction is not None:
            data["instruction"] = dict(self.instruction)
        data["diagnoses"] = [dict(d) for d in self.diagnoses or ()]
        return data

    def public(self) -> dict[str, Any]:
        """What a student may read: a hidden check without its reasons or
        the place in their code it looked at."""
        data = {k: v for k, v in self.to_dict().items() if k not in self.PRIVATE}
        if self.hidden:
            data["file"] = data["line"] = data["cell"] = None
            data["diagnoses"] = []  # as its feedback: only that it failed
        return data

    def known_status(self) -> Status | None:
        """The status as a ``Status``; None for none yet or a word that names
        none (a report read back from a file may carry anything)."""
        if self.status is None:
            return None
        try:
            return Status(self.status)
        except ValueError:
            return None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckResult:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def shown_diagnoses(noted: list[tuple[str, str]], feedback: str) -> list[dict[str, str]]:
    """The diagnoses noted while a check ran (``i18n.noting_diagnoses``) that
    the student got: those whose text its final ``feedback`` holds (one
    computed and then discarded is not), less fragments, a diagnosis whose
    text lies inside another's (formatted to be a field of that one)."""
    shown = [(key, text) for key, text in dict.fromkeys(noted) if text and text in feedback]
    whole = [(key, text) for key, text in shown if not any(text in other and text != other for _, other in shown)]
    return [{"id": key, "text": text} for key, text in whole[:DIAGNOSES_PER_CHECK]]


@dataclass
class ConceptTotal:
    id: str
    title: str
    score: float
    max_score: float
    checks: int
    passed: int


def _round(x: float) -> float:
    # Scores are sums of fractions of points; rounding keeps totals identical
    # whatever order the checks were added in.
    return round(x + 0.0, 6)


@dataclass
class Gradebook:
    seed: int
    devices: list[str]
    torch: str
    concepts: dict[str, Concept] = field(default_factory=dict)
    checks: dict[str, CheckResult] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    duration_s: float = 0.0
    complete: bool = False
    isolation: str = "inline"  # the sandbox's isolation mode
    isolation_missing: list[str] = field(default_factory=list)  # protections that mode lacks
    lang: str = "en"  # the language of every message (--grade-lang)
    notes: list[str] = field(default_factory=list)  # said once of the submission (its notebooks)

    # -- filling it in -------------------------------------------------
    def record(self, nodeid: str, when: str, grade: dict | None, outcome: str, longrepr: str) -> None:
        """Merge one phase's report into the check it belongs to."""
        current = self.checks.get(nodeid)
        if grade is None:
            # A report we did not make: the xdist controller's report for an
            # item whose worker died. The setup report told us what it was worth.
            if current is not None and outcome == "failed" and current.status in (None, Status.PASSED):
                current.status = Status.CRASHED
                current.score = 0.0
                current.feedback = longrepr or msg("feedback.process_died")
            return
        result = CheckResult.from_dict(grade)
        if current is None or when == "setup":
            self.checks[nodeid] = result
            return
        if when == "call":
            result.duration_s = _round(current.duration_s + result.duration_s)
            self.checks[nodeid] = result
        elif (
            when == "teardown"
            and result.status not in (None, Status.PASSED)
            and current.status in (None, Status.PASSED)
        ):
            self.checks[nodeid] = result

    def add_error(self, nodeid: str, feedback: str, concept: str = "", max_score: float = 0.0) -> None:
        self.checks[nodeid] = CheckResult(
            id=nodeid,
            concept=concept,
            score=0.0,
            max_score=max_score,
            status=Status.ERROR,
            feedback=feedback,
        )

    # -- reading it ----------------------------------------------------
    def graded(self) -> list[CheckResult]:
        return [c for c in self.checks.values() if c.status != Status.SKIPPED]

    @property
    def score(self) -> float:
        return _round(sum(c.score for c in self.graded()))

    @property
    def max_score(self) -> float:
        return _round(sum(c.max_score for c in self.graded()))

    @property
    def percent(self) -> float:
        return _round(100.0 * self.score / self.max_score) if self.max_score else 0.0

    def concept_title(self, check: CheckResult) -> str:
        concept = self.concepts.get(check.concept)
        return concept.title if concept else check.concept

    def display_name(self, check: CheckResult) -> str:
        """ "Leaf tensors › which are leaves [cpu]": the concept's title and
        the check's readable name (the test's name where it has none), as
        course platforms list tests."""
        title = check.title or check.id.rpartition("::")[2] or check.id
        return f"{self.concept_title(check)} \u203a {title}" if check.concept else title

    def concept_totals(self) -> list[ConceptTotal]:
        totals: dict[str, ConceptTotal] = {}
        order = list(self.concepts)
        for check in self.graded():
            if not check.concept:
                continue
            concept = self.concepts.get(check.concept)
            title = concept.title if concept else check.concept
            total = totals.setdefault(check.concept, ConceptTotal(check.concept, title, 0.0, 0.0, 0, 0))
            total.score = _round(total.score + check.score)
            total.max_score = _round(total.max_score + check.max_score)
            total.checks += 1
            total.passed += check.status == Status.PASSED
        return sorted(totals.values(), key=lambda t: (order.index(t.id) if t.id in order else len(order), t.id))

    def finish(self, complete: bool = True) -> None:
        """Close the book; ``complete`` is False when the run stopped early
        (interrupted, -x, an internal error), so readers know checks are missing."""
        for check in self.checks.values():
            if check.status is None:
                # Set up but never reported a call: it did not run to the end.
                check.status = Status.ERROR
                check.score = 0.0
                check.feedback = check.feedback or msg("feedback.did_not_finish")
        self.duration_s = _round(time.monotonic() - self.started)
        self.complete = complete

    def to_json(self, private: bool = False) -> dict[str, Any]:
        """The JSON report; ``private`` adds what only instructors may read
        (hidden checks' real feedback, ``--grade-json-private``)."""
        return {
            "schema": SCHEMA,
            "complete": self.complete,
            "score": self.score,
            "max_score": self.max_score,
            "percent": self.percent,
            "seed": self.seed,
            "devices": list(self.devices),
            "torch": self.torch,
            "isolation": self.isolation,
            "isolation_missing": list(self.isolation_missing),
            "notes": list(self.notes),
            "lang": self.lang,
            "duration_s": self.duration_s if self.complete else _round(time.monotonic() - self.started),
            "concepts": [asdict(t) for t in self.concept_totals()],
            "checks": [c.to_dict() if private else c.public() for c in self.checks.values()],
        }

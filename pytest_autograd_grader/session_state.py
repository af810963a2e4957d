"""What a graded session keeps in ``config.stash`` and ``item.stash``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

from .checking.parts import WHOLE, Parts, worst_status
from .checking.provenance import ForgedError
from .concepts import Concept
from .i18n import msg
from .options import Settings
from .outcomes import GradeFailure
from .protocol import Status
from .scoring import CheckSpec, Gradebook

if TYPE_CHECKING:
    # read at type-check time only: a session that never runs student code
    # does not import the sandbox
    from .boundary.submission import InlineExecutor
    from .sandbox import SandboxExecutor
    from .sandbox.isolation import Isolation

    RunExecutor = SandboxExecutor | InlineExecutor


@dataclass
class GradeState:
    settings: Settings
    is_worker: bool
    gradebook: Gradebook | None = None
    concepts: dict[str, Concept] | None = None
    last_write: float = 0.0
    isolation: Isolation | None = None  # None when student code runs inline
    notes: list[str] | None = None  # what is said once of the submission (sessions.submission_notes)


@dataclass
class Credit:
    """Partial credit a check collected through the ``autograd`` fixture,
    and the instructions it checked from the student's own trace."""

    explicit: float | None = None
    explicit_feedback: str = ""
    parts: Parts = field(default_factory=Parts)
    points: float = 0.0
    share: float | None = None  # the marker's instruction_share
    broken: list[str] = field(default_factory=list)  # instructions not followed, as feedback
    looked: bool = False  # whether the check looked at any instruction

    def instruction(self, ok: bool, text: str, default_share: float) -> None:
        """Note an instruction read from the student's own trace; a check
        whose marker declares no share takes ``default_share``."""
        if self.share is None:
            self.share = default_share
        self.looked = True
        if not ok:
            self.broken.append(text)

    def followed(self) -> bool | None:
        """Whether the instructions were followed; None when none was looked at."""
        return False if self.broken else (True if self.looked else None)

    def _values_failure(self, raised: GradeFailure | None) -> GradeFailure | None:
        """The check's failure from its parts (see checking.parts for the
        rules), ``raised`` being a failure outside every part that ended it."""
        stopped = raised is not None
        if stopped and (isinstance(raised, ForgedError) or not self.parts.children):
            return raised  # a made-up error costs the whole check
        # autograd.credit decides a check that ran to its end; one that stopped never reached its verdict
        fraction = self.parts.fraction(stopped) if stopped or self.explicit is None else self.explicit
        whole = all(p.earned() >= WHOLE for p in self.parts.children)
        if not stopped and whole and (fraction is None or fraction >= 1):
            return None
        lines = self.parts.lines(raised) if self.parts.children else []
        if not stopped and self.explicit is not None:
            lines.insert(0, self.explicit_feedback or msg("cmp.credit", fraction=self.explicit))
        status = raised.grade_status if raised is not None else worst_status(self.parts.children)
        return GradeFailure("\n".join(lines), status=status, fraction=fraction or 0.0)

    def failure(self, raised: GradeFailure | None = None) -> GradeFailure | None:
        """The failure to raise at the end of a check that earned less than
        all: ``raised`` (the failure that ended the check) or its unfinished
        parts, with the instruction's share taken off when one was broken."""
        failure = self._values_failure(raised)
        values = 1.0 if failure is None else (failure.fraction or 0.0)
        if not self.broken:
            return failure
        lost = self.points * (self.share or 0.0)
        lines = [failure.feedback] if failure is not None else []
        # with nothing earned it costs nothing more, but often says why the values are wrong
        lines.append(
            msg("cmp.instruction_broken", lost=lost, points=self.points) if values else msg("cmp.instruction_also")
        )
        lines += ["  " + line for text in dict.fromkeys(self.broken) for line in text.splitlines()]
        status = failure.grade_status if failure is not None else Status.FAILED
        return GradeFailure("\n".join(lines), status=status, fraction=values * (1 - (self.share or 0.0)))

    def instruction_part(self, score: float) -> dict[str, float | bool | None] | None:
        """The instruction's part of a check that scored ``score``, for the report."""
        if self.share is None:
            return None
        most = round(self.points * self.share, 6)
        followed = self.followed()
        # followed, the part is earned in proportion to the values' (score = points x values)
        earned = 0.0 if followed is False or not self.points else round(most * score / self.points, 6)
        return {"share": self.share, "score": earned, "max_score": most, "followed": followed}


@dataclass
class Place:
    """The place in the student's files a check concerns (for annotations):
    the last line that raised in the student's code, else the first student
    function the check called. Files are relative to the submission."""

    # (file, line, cell): in a notebook the line is counted in the cell
    called: tuple[str, int | None, int | None] | None = None
    raised: tuple[str, int | None, int | None] | None = None
    # lines for the feedback, should the check fail: which of a notebook's definitions was graded
    remarks: dict[str, None] = field(default_factory=dict)

    def remark(self, text: str) -> None:
        self.remarks[text] = None

    def note(self, file: str, line: int | None, raised: bool, cell: int | None = None) -> None:
        if raised:
            self.raised = (file, line, cell)
        elif self.called is None:
            self.called = (file, line, cell)

    def best(self) -> tuple[str | None, int | None, int | None]:
        return self.raised or self.called or (None, None, None)


STATE = pytest.StashKey[GradeState]()
PLACE = pytest.StashKey[Place]()
SPEC = pytest.StashKey[CheckSpec]()
CREDIT = pytest.StashKey[Credit]()
# the (id, text) of each diagnosis formatted or given while the check ran (i18n.noting_diagnoses)
NOTED = pytest.StashKey[list[tuple[str, str]]]()
# the run's executor (fixtures.executor_for), one per pytest process
EXECUTOR = pytest.StashKey["RunExecutor"]()
# the run's settings, with or without --grade (plain runs sandbox student code too)
SETTINGS = pytest.StashKey[Settings]()
# graded checks a plain run (no --grade) collected: it ends saying how to get their scores
PLAIN_CHECKS = pytest.StashKey[int]()


def state_of(config: pytest.Config) -> GradeState | None:
    return config.stash.get(STATE, None)


def settings_of(config: pytest.Config) -> Settings:
    state = state_of(config)
    return state.settings if state is not None else config.stash[SETTINGS]

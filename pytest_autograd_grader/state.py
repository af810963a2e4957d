"""What a graded session keeps in ``config.stash`` and ``item.stash``."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from .concepts import Concept
from .i18n import msg
from .options import Settings
from .outcomes import GradeFailure
from .scoring import CheckSpec, Gradebook


@dataclass
class GradeState:
    settings: Settings
    is_worker: bool
    gradebook: Gradebook | None = None
    concepts: dict[str, Concept] | None = None
    last_write: float = 0.0
    isolation: object = None  # sandbox.Isolation; None when student code runs inline

@dataclass
class Credit:
    """Partial credit a check collected through the ``autograd`` fixture."""

    explicit: float | None = None
    explicit_feedback: str = ""
    parts: list[tuple[float, GradeFailure | None]] = field(default_factory=list)

    def fraction(self) -> float | None:
        if self.explicit is not None:
            return self.explicit
        if not self.parts:
            return None
        total = sum(w for w, _ in self.parts)
        return sum(w for w, failure in self.parts if failure is None) / total if total else 0.0

    def failure(self) -> GradeFailure | None:
        """The failure to raise at the end of a check that earned less than all."""
        failures = [f for _, f in self.parts if f is not None]
        fraction = self.fraction()
        if not failures and (fraction is None or fraction >= 1):
            return None
        # A stub called in several parts fails each the same way: say it once.
        lines = list(dict.fromkeys(f.feedback for f in failures))
        if self.parts:
            total = sum(w for w, _ in self.parts)
            passed = sum(w for w, f in self.parts if f is None)
            lines.insert(0, msg("cmp.parts", passed=passed, total=total))
        if self.explicit is not None:
            lines.insert(0, self.explicit_feedback or msg("cmp.credit", fraction=self.explicit))
        worst = next((f.grade_status for f in failures if f.grade_status != "failed"), "failed")
        return GradeFailure("\n".join(lines), status=worst, fraction=fraction or 0.0)

@dataclass
class Place:
    """The place in the student's files a check concerns (for annotations):
    the last line that raised in the student's code, else the first student
    function the check called. Files are relative to the submission."""

    called: tuple[str, int | None] | None = None
    raised: tuple[str, int | None] | None = None

    def note(self, file: str, line: int | None, raised: bool) -> None:
        if raised:
            self.raised = (file, line)
        elif self.called is None:
            self.called = (file, line)

    def best(self) -> tuple[str | None, int | None]:
        return self.raised or self.called or (None, None)

STATE = pytest.StashKey[GradeState]()
PLACE = pytest.StashKey[Place]()
SPEC = pytest.StashKey[CheckSpec]()
CREDIT = pytest.StashKey[Credit]()
EXECUTOR = pytest.StashKey[object]()
# the run's settings, with or without --grade (plain runs sandbox student code too)
SETTINGS = pytest.StashKey[Settings]()
# graded checks a plain run (no --grade) collected: it ends saying how to get their scores
PLAIN_CHECKS = pytest.StashKey[int]()

def state_of(config: pytest.Config) -> GradeState | None:
    return config.stash.get(STATE, None)


def settings_of(config: pytest.Config) -> Settings:
    state = state_of(config)
    return state.settings if state is not None else config.stash[SETTINGS]

"""The concepts a check can be graded under (DESIGN section 6).

The grader knows none of its own: a course gives its concepts through the
``pytest_grade_concepts`` hook (the shipped course in ``exercises/conftest.py``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Concept:
    id: str
    title: str
    description: str = ""


def merge_concepts(groups: list[list[Concept]]) -> dict[str, Concept]:
    """Combine the hook results; the first plugin to name an id wins."""
    known: dict[str, Concept] = {}
    for group in groups:
        for concept in group or ():
            if not isinstance(concept, Concept):
                concept = Concept(*concept) if isinstance(concept, (tuple, list)) else Concept(str(concept), str(concept))
            known.setdefault(concept.id, concept)
    return known

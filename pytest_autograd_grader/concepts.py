"""The concepts a check can be graded under (DESIGN section 6).

The grader knows none of its own: a course gives its concepts through the
``pytest_grade_concepts`` hook (the shipped course in ``exercises/conftest.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A concept id names the concept in markers, reports and message ids
# (``concept.<id>``): lower-case letters, digits and underscores, starting
# with a letter, as every concept of the shipped course is.
CONCEPT_ID = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Concept:
    id: str
    title: str
    description: str = ""


def is_concept_id(text: str) -> bool:
    """Whether ``text`` is a well-formed concept id (``CONCEPT_ID``)."""
    return isinstance(text, str) and CONCEPT_ID.fullmatch(text) is not None


def merge_concepts(groups: list[list[Concept]]) -> dict[str, Concept]:
    """Combine the hook results; the first plugin to name an id wins."""
    known: dict[str, Concept] = {}
    for group in groups:
        for concept in group or ():
            if not isinstance(concept, Concept):
                concept = (
                    Concept(*concept) if isinstance(concept, (tuple, list)) else Concept(str(concept), str(concept))
                )
            known.setdefault(concept.id, concept)
    return known

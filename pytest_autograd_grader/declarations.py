"""What a check declares and how the grader reads it: the ``grade`` marker
(concept, points, visibility, timeout, input classes), the concepts known to the run,
and a check's topic and title.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, TypeGuard

import pytest

from .checking.input_classes import INPUT_CLASSES, unknown_classes
from .concepts import Concept, merge_concepts
from .i18n import has_message, msg
from .scoring import CheckSpec
from .session_state import SPEC, state_of

MARKER_HELP = (
    "grade(concept, points=1, hidden=False, timeout=None, instruction_share=None, inputs=()): a graded check of an "
    "autograd concept; hidden=True (or 'after_published', 'after_due_date') keeps its feedback from students; "
    "timeout overrides --grade-timeout; instruction_share (above 0, at most 0.5) is the share of the points "
    "for instructions checked from the student's own trace (autograd.instruction); "
    "inputs=(...) names the input classes (rank 1, size-1 axis, one element, negative, zero, ...) the check "
    "draws on every seed, and its report says which it did not; "
    "also usable as a module-level pytestmark"
)
MAX_INSTRUCTION_SHARE = 0.5
HIDDEN_VISIBILITY = {
    False: "visible",
    True: "hidden",
    "after_published": "after_published",
    "after_due_date": "after_due_date",
}


def known_concepts(config: pytest.Config) -> dict[str, Concept]:
    state = state_of(config)
    if state is not None and state.concepts is not None:
        return state.concepts
    concepts = {
        id: _in_run_language(concept)
        for id, concept in merge_concepts(config.hook.pytest_grade_concepts(config=config)).items()
    }
    if state is not None:
        state.concepts = concepts
    return concepts


def _in_run_language(concept: Concept) -> Concept:
    """The concept titled by the course's message ``concept.<id>`` when it
    gives one (so --grade-lang translates it), else by its own title."""
    key = f"concept.{concept.id}"
    return replace(concept, title=msg(key)) if has_message(key) else concept


def concept_title(config: pytest.Config, concept_id: str) -> str:
    """A concept's title in the run's language; its id when unknown."""
    concept = known_concepts(config).get(concept_id)
    return concept.title if concept is not None else concept_id


# -- the marker -----------------------------------------------------------


def spec_of(item: pytest.Item) -> CheckSpec:
    """The check's concept, points and visibility, merged from every ``grade``
    marker on it (the closest one wins per keyword)."""
    cached = item.stash.get(SPEC, None)
    if cached is not None:
        return cached
    kwargs, positional = _merged_marks(item)
    if positional:
        problem: str | None = msg("marker.positional", where=item.nodeid)
    else:
        problem = _marker_problem(item.nodeid, kwargs, known_concepts(item.config))
    spec = _spec_from(kwargs, problem)
    item.stash[SPEC] = spec
    return spec


def _merged_marks(item: pytest.Item) -> tuple[dict[str, Any], bool]:
    """The keywords of every ``grade`` marker, the closest winning, and
    whether any marker was given positional arguments."""
    kwargs: dict[str, Any] = {}
    positional = False
    for mark in reversed(list(item.iter_markers("grade"))):
        positional = positional or bool(mark.args)
        kwargs.update(mark.kwargs)
    return kwargs, positional


def _is_number(value: object) -> TypeGuard[float]:
    # bool is an int to Python, never a number of points or seconds to us
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _valid_points(points: object) -> bool:
    return _is_number(points) and points > 0


def _valid_timeout(timeout: object) -> bool:
    # timeout == timeout refuses NaN
    return timeout is None or (_is_number(timeout) and timeout > 0 and timeout == timeout)


def _valid_share(share: object) -> bool:
    return share is None or (_is_number(share) and 0 < share <= MAX_INSTRUCTION_SHARE)


def _inputs(kwargs: dict[str, Any]) -> Any:
    inputs = kwargs.get("inputs", ())
    return (inputs,) if isinstance(inputs, str) else inputs


def _valid_inputs(inputs: object) -> bool:
    return isinstance(inputs, (tuple, list)) and not unknown_classes(inputs)


def _visibility(hidden: object) -> str | None:
    """The visibility ``hidden=`` names; None when it names none."""
    return HIDDEN_VISIBILITY.get(hidden) if isinstance(hidden, (bool, str)) else None


def _marker_problem(where: str, kwargs: dict[str, Any], concepts: dict[str, Concept]) -> str | None:
    """What is wrong with the merged marker, the first thing only."""
    known = ", ".join(concepts) or msg("marker.none_known")
    concept, points, hidden = kwargs.get("concept"), kwargs.get("points", 1), kwargs.get("hidden", False)
    timeout, share, inputs = kwargs.get("timeout"), kwargs.get("instruction_share"), _inputs(kwargs)
    if not concept:
        return msg("marker.no_concept", where=where, known=known)
    if concept not in concepts:
        return msg("marker.unknown_concept", where=where, concept=concept, known=known)
    if not _valid_points(points):
        return msg("marker.bad_points", where=where, points=points)
    if _visibility(hidden) is None:
        return msg("marker.bad_hidden", where=where, hidden=hidden)
    if not _valid_timeout(timeout):
        return msg("marker.bad_timeout", where=where, timeout=timeout)
    if not _valid_share(share):
        return msg("marker.bad_instruction_share", where=where, share=share, most=MAX_INSTRUCTION_SHARE)
    if not _valid_inputs(inputs):
        return msg("marker.bad_inputs", where=where, inputs=inputs, known=", ".join(INPUT_CLASSES))
    return None


def _spec_from(kwargs: dict[str, Any], problem: str | None) -> CheckSpec:
    """The spec a marker declares; an invalid keyword gives its harmless
    value (0 points, visible, no timeout) beside the problem."""
    points, timeout = kwargs.get("points", 1), kwargs.get("timeout")
    share, inputs = kwargs.get("instruction_share"), _inputs(kwargs)
    visibility = _visibility(kwargs.get("hidden", False)) or "visible"
    return CheckSpec(
        concept=str(kwargs.get("concept") or ""),
        points=float(points) if _valid_points(points) else 0.0,
        hidden=visibility != "visible",
        problem=problem,
        visibility=visibility,
        timeout=float(timeout) if _valid_timeout(timeout) and timeout is not None else None,
        instruction_share=float(share) if _valid_share(share) and share is not None else None,
        inputs=tuple(inputs) if _valid_inputs(inputs) else (),
    )


def topic_of(item: pytest.Item) -> str:
    """The topic a check belongs to: its checks file's name without the
    test_ prefix (exercises/test_engine.py -> "engine")."""
    return item.path.stem.removeprefix("test_").removesuffix("_test")


def title_of(item: pytest.Item) -> str:
    """A check's readable name: the first paragraph of its docstring (write
    a short title there, the details after a blank line), else its name in
    words ("test_which_are_leaves" -> "which are leaves"), with its
    parameters ("[cpu]") kept."""
    doc = getattr(getattr(item, "obj", None), "__doc__", None)
    # the first paragraph, whole: a sentence that wraps onto a second line is not cut
    paragraph = doc.strip().split("\n\n")[0] if isinstance(doc, str) and doc.strip() else ""
    first = " ".join(line.strip() for line in paragraph.splitlines()).rstrip(".")
    name = getattr(item, "originalname", None) or item.name.split("[")[0]
    title = first or name.removeprefix("test_").replace("_", " ")
    callspec = getattr(item, "callspec", None)
    return f"{title} [{callspec.id}]" if callspec is not None and callspec.id else title


def collect_cause(detail: str) -> str:
    """'line 4: SyntaxError: invalid syntax' from a collection error's text."""
    errors = [line[1:].strip() for line in detail.splitlines() if line.startswith("E ")]
    error = next((e for e in reversed(errors) if re.match(r"\w+(Error|Exception)\b", e)), errors[-1] if errors else "")
    lines = re.findall(r"line (\d+)", detail) or re.findall(r"\.py:(\d+):", detail)
    return f"line {lines[-1] if lines else '?'}: {error}" if error else f"line {lines[-1] if lines else '?'}"

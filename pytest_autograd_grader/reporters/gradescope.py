"""Gradescope's results.json.

One Gradescope test per graded check, named "concept title › check title"
and numbered by concept ("1.1", "1.2", "2.1", ...). Gradescope knows only
passed and failed, so a timeout, a crash or a broken check says so in words
at the start of the test's output.

Hidden checks carry their real feedback with Gradescope's own visibility
("hidden", "after_published", "after_due_date"): Gradescope shows those tests
to instructors at once, and to students never ("hidden"), once the grades
are published or after the due date. What students see right away (the
top-level output) counts visible checks only and says which is which.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..i18n import msg
from ..protocol import Status
from ..scoring import CheckResult, Gradebook
from .terminal import isolation_lines, table_lines

# Gradescope's statuses are passed and failed; these say what really happened.
STATUS_LEADS = {
    Status.TIMEOUT: "gradescope.status.timeout",
    Status.CRASHED: "gradescope.status.crashed",
    Status.ERROR: "gradescope.status.error",
}
# what a lead says when the check left no feedback of its own
_DEFAULT_FEEDBACK = {
    Status.TIMEOUT: "feedback.did_not_finish",
    Status.CRASHED: "feedback.process_died",
    Status.ERROR: "feedback.did_not_finish",
}


def gradescope_results(gradebook: Gradebook) -> dict[str, Any]:
    """Gradescope's results.json for ``gradebook`` (skipped checks left out)."""
    hidden = [c for c in gradebook.graded() if c.hidden]
    output = []
    if not gradebook.complete:
        output.append(msg("gradescope.incomplete"))
    output += table_lines(visible_only(gradebook))
    if hidden:
        # what Gradescope really does with each visibility, counted
        counts = {v: sum(_visibility(c) == v for c in hidden) for v in ("hidden", "after_published", "after_due_date")}
        when = ", ".join(msg(f"gradescope.when.{v}", count=n) for v, n in counts.items() if n)
        output.append(msg("gradescope.hidden_checks", count=len(hidden), when=when))
    output += list(gradebook.notes)  # a notebook's left-out lines, said once
    output += isolation_lines(gradebook)
    return {
        # the total of all checks, hidden ones included: Gradescope hides the
        # total from students while any test is hidden
        "score": gradebook.score,
        "execution_time": gradebook.duration_s,
        "output": "\n".join(output),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [_test(check, number, gradebook) for number, check in numbered(gradebook)],
        "extra_data": {
            "percent": gradebook.percent,
            "seed": gradebook.seed,
            "complete": gradebook.complete,
            "isolation": gradebook.isolation,
        },
    }


def visible_only(gradebook: Gradebook) -> Gradebook:
    """A copy of ``gradebook`` without its hidden checks: the totals a student
    may see before the instructor publishes the hidden ones."""
    checks = {key: check for key, check in gradebook.checks.items() if not check.hidden}
    return dataclasses.replace(gradebook, checks=checks)


def numbered(gradebook: Gradebook) -> list[tuple[str, CheckResult]]:
    """The graded checks grouped by concept, in the order of the concept
    table, each with its number "concept.check"; checks without a concept
    (a checks file that failed to load) come last."""
    order = [total.id for total in gradebook.concept_totals()]
    groups: dict[str, list[CheckResult]] = {concept: [] for concept in order}
    for check in gradebook.graded():
        groups.setdefault(check.concept or "", []).append(check)
    result = []
    for group, (_, checks) in enumerate(sorted(groups.items(), key=lambda g: g[0] not in order), start=1):
        result += [(f"{group}.{index}", check) for index, check in enumerate(checks, start=1)]
    return result


def _output(check: CheckResult) -> str:
    # A hidden check's test is shown only as its visibility allows, to
    # students; instructors see it at once, with the real reason.
    feedback = (check.private_feedback or check.feedback) if check.hidden else check.feedback
    status = check.known_status()
    if status not in STATUS_LEADS:
        return feedback
    return msg(STATUS_LEADS[status], feedback=feedback or msg(_DEFAULT_FEEDBACK[status]))


def _visibility(check: CheckResult) -> str:
    if not check.hidden:
        return "visible"
    # a hidden check never goes out as "visible", whatever its record says
    return check.visibility if check.visibility in ("hidden", "after_published", "after_due_date") else "hidden"


def _test(check: CheckResult, number: str, gradebook: Gradebook) -> dict[str, Any]:
    return {
        "name": gradebook.display_name(check),
        "number": number,
        "score": check.score,
        "max_score": check.max_score,
        "status": "passed" if check.status == Status.PASSED else "failed",  # Gradescope's own two
        "output": _output(check),
        "output_format": "text",
        "tags": [check.concept] if check.concept else [],
        "visibility": _visibility(check),
        "extra_data": {"grader_status": check.status, "id": check.id, "device": check.device},
    }

"""GitHub Actions' outputs: the step summary, error annotations and the
GitHub Classroom result.

Three readers, three formats, one rule: text that a student's code may have
chosen (feedback quotes exception messages and printed output) is escaped
for the format it lands in, so it can neither break the Markdown and HTML
of the step summary nor start a workflow command in the job's log
(``github_escaping``).

- ``write_github_outputs``: appends Markdown to ``$GITHUB_STEP_SUMMARY`` and
  ``result=<base64>`` to ``$GITHUB_OUTPUT`` (what GitHub Classroom's
  autograding reporter reads from ``<ID>_RESULTS``);
- ``annotation_lines``: one ``::error`` line per visible check that did not
  pass. Hidden checks get none: an annotation exists to point at a place in
  the student's code, which a hidden check must not reveal; the step summary
  and the Classroom result list them under a neutral name.
"""

from __future__ import annotations

import base64
import html
import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..i18n import msg
from ..protocol import NOT_PASSED, Status
from ..scoring import CheckResult, Gradebook
from .github_escaping import (
    bounded,
    clean,
    code_span,
    defuse_commands,
    escape_data,
    escape_property,
    fenced,
    table_cell,
)
from .order import course_order
from .terminal import place, points

# Annotations: GitHub shows a short message; the job's log has all of it.
ANNOTATION_LINES = 20
ANNOTATION_CHARS = 4000
# Step summary: GitHub refuses a step's summary over 1 MiB, so each check's
# feedback is bounded and the list of checks stops well before that.
SUMMARY_FEEDBACK_LINES = 200
SUMMARY_FEEDBACK_CHARS = 16000
SUMMARY_BUDGET = 900_000
# Classroom result: the reporter receives it in an environment variable,
# and Linux refuses a single one over 128 KiB (MAX_ARG_STRLEN).
RESULT_BUDGET = 120_000
RESULT_MESSAGE_CHARS = (2000, 300, 0)  # tried in turn until the result fits


# -- names and places ----------------------------------------------------


@dataclass
class _Shown:
    """What a student may see of one check."""

    check: CheckResult
    name: str
    message: str  # feedback: the generic sentence for a hidden check
    file: str | None  # relative to the repository root
    line: int | None


def _workspace() -> Path:
    return Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd())


def repository_path(file: str | None, submission: Path | None, check_id: str = "") -> str | None:
    """``file`` (relative to the submission) relative to the root of the
    repository it belongs to, as GitHub's annotations and Classroom want it.

    The workspace is ``$GITHUB_WORKSPACE`` (else the current directory). A
    workflow may check the student's repository out into a folder of the
    workspace (``student/``): the nearest directory at or below the
    workspace that holds a ``.git`` is then the repository's root
    (``exercises/leaf.py``); without one, the path is relative to the
    workspace (``student/exercises/leaf.py``). Without a submission the
    student's modules sit beside the checks file, whose directory the
    check's id names relative to pytest's root (taken to be the current
    directory). A file outside the workspace is given as it is."""
    if not file:
        return None
    try:
        return _repository_path(file, submission, check_id)
    except (OSError, RuntimeError, ValueError):  # an unreadable folder, a symlink loop: the file as it is
        return file


def _repository_path(file: str, submission: Path | None, check_id: str) -> str:
    base = (
        Path(submission)
        if submission is not None
        else Path(os.getcwd()) / PurePosixPath(check_id.split("::")[0]).parent
    )
    path = Path(os.path.normpath(base / file))
    workspace = _workspace()
    for root, candidate in (
        (Path(os.path.normpath(workspace.absolute())), path),
        (workspace.resolve(), path.resolve()),
    ):
        try:
            relative = candidate.relative_to(root)
        except ValueError:
            continue
        # from the file's folder up to the workspace's child folders
        for depth in range(len(relative.parts) - 1, 0, -1):
            if (root.joinpath(*relative.parts[:depth]) / ".git").exists():
                return PurePosixPath(*relative.parts[depth:]).as_posix()
        return relative.as_posix()
    return file


def _shown(gradebook: Gradebook, submission: Path | None) -> list[_Shown]:
    """Every graded check as students may see it: a hidden one under a
    neutral name ("hidden check 2 of Leaf tensors"), with the generic
    sentence for its message and no place in the code."""
    shown: list[_Shown] = []
    hidden_count: dict[str, int] = {}
    for check in gradebook.graded():
        concept = gradebook.concept_title(check)
        if check.hidden:
            hidden_count[check.concept] = hidden_count.get(check.concept, 0) + 1
            name = msg("github.hidden_name", number=hidden_count[check.concept], concept=concept)
            message = "" if check.status == Status.PASSED else msg("feedback.hidden", title=concept)
            shown.append(_Shown(check, name, message, None, None))
        else:
            name = gradebook.display_name(check)
            file = repository_path(check.file, submission, check.id)
            # a notebook's line counts in its cell: GitHub would point at a line of the JSON file
            line = check.line if file and isinstance(check.line, int) and check.line > 0 and not check.cell else None
            shown.append(_Shown(check, name, check.feedback or "", file, line))
    return shown


def next_steps(gradebook: Gradebook, items: list[_Shown]) -> list[_Shown]:
    """``items`` in the order a student works through them (``course_order``)."""
    place = {id(check): index for index, check in enumerate(course_order(gradebook, [i.check for i in items]))}
    return sorted(items, key=lambda item: place[id(item.check)])


# -- annotations ---------------------------------------------------------

ANNOTATIONS_SHOWN = 10  # GitHub shows this many error annotations of a step, drops the rest


def annotation_lines(gradebook: Gradebook, submission: Path | None = None) -> list[str]:
    """``::error file=F,line=L,title=T::MESSAGE``, one per visible check that
    did not pass, in the order of ``next_steps``; the last one GitHub shows
    says how many more there are. Each is exactly one line whatever the
    feedback holds."""
    items = [
        item for item in _shown(gradebook, submission) if not item.check.hidden and item.check.status in NOT_PASSED
    ]
    items = next_steps(gradebook, items)
    lines = []
    for index, item in enumerate(items, start=1):
        properties = []
        if item.file:
            properties.append(f"file={escape_property(item.file)}")
            if item.line is not None:
                properties.append(f"line={item.line}")
        title = msg(
            "github.check_label",
            name=item.name,
            score=points(item.check.score),
            max_score=points(item.check.max_score),
            status=msg(f"github.status.{item.check.status}"),
        )
        properties.append(f"title={escape_property(title)}")
        message = bounded(item.message.strip(), ANNOTATION_LINES, ANNOTATION_CHARS) or title
        if index == ANNOTATIONS_SHOWN and len(items) > ANNOTATIONS_SHOWN:
            message += "\n\n" + msg("github.more_annotations", count=len(items) - ANNOTATIONS_SHOWN)
        lines.append(f"::error {','.join(properties)}::{escape_data(message)}")
    return lines


# -- the step summary ----------------------------------------------------


def step_summary(gradebook: Gradebook, submission: Path | None = None) -> str:
    """The Markdown for ``$GITHUB_STEP_SUMMARY``: a table per concept, the
    total, then every check that did not pass with its feedback folded."""
    # a blank line first: the step's earlier Markdown may end in a paragraph or a table
    out = [
        "",
        f"## {table_cell(msg('github.heading', score=points(gradebook.score), max_score=points(gradebook.max_score), percent=gradebook.percent))}",
        "",
    ]
    if not gradebook.complete:
        out += [f"> {table_cell(msg('github.incomplete'))}", ""]
    out += [
        f"| {table_cell(msg('github.col_concept'))} | {table_cell(msg('github.col_score'))} | "
        f"{table_cell(msg('github.col_passed'))} | {table_cell(msg('github.col_percent'))} |",
        "|---|---:|---:|---:|",
    ]
    for total in gradebook.concept_totals():
        percent = 100.0 * total.score / total.max_score if total.max_score else 0.0
        out.append(
            f"| {table_cell(total.title)} | {points(total.score)}/{points(total.max_score)} | "
            f"{table_cell(msg('summary.passed', passed=total.passed, checks=total.checks))} | {percent:.1f}% |"
        )
    out.append(
        f"| **{table_cell(msg('summary.total'))}** | **{points(gradebook.score)}/{points(gradebook.max_score)}** | "
        f"| **{gradebook.percent:.1f}%** |"
    )
    shown = _shown(gradebook, submission)
    not_passed = next_steps(gradebook, [item for item in shown if item.check.status in NOT_PASSED])
    if any(item.check.hidden for item in shown):
        out += ["", table_cell(msg("github.hidden_note"))]
    # a notebook's left-out lines and file names: the student's text, quoted
    out += [line for note in gradebook.notes for line in ("", f"> {code_span(note)}")]
    if not_passed:
        out += ["", f"### {table_cell(msg('github.not_passed', count=len(not_passed)))}", ""]
    size = sum(len(line.encode()) + 1 for line in out)
    for index, item in enumerate(not_passed):
        check = item.check
        # a hidden check's kind of failure (a timeout, say) is a hint too
        status = Status.FAILED if check.hidden else check.status
        label = msg(
            "github.check_label",
            name=item.name,
            score=points(check.score),
            max_score=points(check.max_score),
            status=msg(f"github.status.{status}"),
        )
        if item.file:
            label += f" ({place(item.file, check.line if check.cell else item.line, check.cell)})"
        block = [f"<details><summary>{html.escape(' '.join(clean(label).split()))}</summary>", ""]
        message = bounded(item.message.strip(), SUMMARY_FEEDBACK_LINES, SUMMARY_FEEDBACK_CHARS)
        block += (fenced(message) if message else [html.escape(msg("github.no_feedback"))]) + ["", "</details>", ""]
        block_size = sum(len(line.encode()) + 1 for line in block)
        if size + block_size > SUMMARY_BUDGET:
            out.append(table_cell(msg("github.summary_full", count=len(not_passed) - index)))
            break
        out += block
        size += block_size
    return "\n".join(out).rstrip("\n") + "\n\n"


# -- the GitHub Classroom result -----------------------------------------

_CLASSROOM_STATUS = {
    Status.PASSED: "pass",
    Status.FAILED: "fail",
    Status.TIMEOUT: "fail",
    Status.CRASHED: "fail",
    Status.ERROR: "error",
}


def classroom_result(
    gradebook: Gradebook, submission: Path | None = None, message_chars: int = RESULT_MESSAGE_CHARS[0]
) -> dict[str, Any]:
    """What GitHub Classroom's autograding reporter reads: one test per
    graded check with its own (partial) score; hidden checks count under a
    neutral name with the generic message (Classroom has no hidden tests)."""
    tests = []
    for item in _shown(gradebook, submission):
        check = item.check
        message = item.message.strip()
        message = bounded(message, SUMMARY_FEEDBACK_LINES, message_chars) if message_chars else ""
        tests.append(
            {
                "name": defuse_commands(item.name),
                "status": _CLASSROOM_STATUS.get(check.known_status() or Status.ERROR, "error"),
                "score": check.score,
                "message": defuse_commands(message),
                # the reporter prints " - line N" unless line_no is 0
                "line_no": item.line or 0,
                "filename": item.file or "",
                "test_code": "" if check.hidden else defuse_commands(check.id),
                "duration": round(check.duration_s * 1000),  # milliseconds, as GitHub's runners give it
            }
        )
    statuses = {test["status"] for test in tests}
    status = "error" if not gradebook.complete or "error" in statuses else "fail" if statuses - {"pass"} else "pass"
    return {"version": 1, "status": status, "max_score": gradebook.max_score, "tests": tests}


def _encoded(result: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(result, ensure_ascii=False).encode("utf-8")).decode("ascii")


def classroom_output(gradebook: Gradebook, submission: Path | None = None) -> str:
    """``result=<base64>``: one line for ``$GITHUB_OUTPUT``, small enough to
    pass through an environment variable (messages are shortened first).

    Also the three runners the workflow's reporter reads (``points_runners``):
    ``checks=``, ``earned=``, ``missed=``. ``result`` stays as it was for
    workflows written before them."""
    for chars in RESULT_MESSAGE_CHARS:
        result = classroom_result(gradebook, submission, chars)
        encoded = _encoded(result)
        if len(encoded) <= RESULT_BUDGET:
            break
    runners = points_runners(gradebook, result)
    return "\n".join([f"result={encoded}"] + [f"{name}={_encoded(data)}" for name, data in runners.items()])


def points_runners(gradebook: Gradebook, result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What Classroom's reporter (autograding-grading-reporter v1) can show
    without contradicting itself. Its table gives a runner
    ``max_score * tests passed / tests`` while its notice, the points
    Classroom records, sums ``tests[].score``: with partial credit the two
    differ. So the points travel in two runners whose tests are all passed
    (``earned``: the score out of itself) or all failed (``missed``: 0 out
    of the rest), where both ways of counting agree; ``checks`` lists every
    check with max_score 0, which the reporter leaves out of both sums."""
    score, max_score = gradebook.score, gradebook.max_score
    missed = _round_points(max_score - score)
    earned_test = {
        "name": msg("github.points_earned", score=points(score), max_score=points(max_score)),
        "status": "pass",
        "score": score,
        "message": "",
        "line_no": 0,
        "filename": "",
        "test_code": "",
        "duration": 0,
    }
    missed_test = {
        **earned_test,
        "name": msg("github.points_missed", missed=points(missed)),
        "status": "fail" if missed else "pass",
        "score": 0.0,
    }
    return {
        "checks": {**result, "max_score": 0},
        "earned": {"version": 1, "status": "pass", "max_score": score, "tests": [earned_test]},
        "missed": {"version": 1, "status": missed_test["status"], "max_score": missed, "tests": [missed_test]},
    }


def _round_points(x: float) -> float:
    # the gradebook's own rounding: 113 - 20.000001 must not show 92.999999
    return round(x + 0.0, 6)


def _append(path: str, text: str) -> None:
    """Append ``text`` to ``path`` on a line of its own: other steps' lines
    stay, and the file may not end with a newline."""
    with open(path, "ab+") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell():
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                text = "\n" + text
        handle.write(text.encode("utf-8"))


def write_github_outputs(gradebook: Gradebook, submission: Path | None = None) -> list[str]:
    """Append the step summary and the Classroom result to the files GitHub
    Actions names; return what could not be done, in words (never raise)."""
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY", "").strip()
    output_path = os.environ.get("GITHUB_OUTPUT", "").strip()
    if not summary_path and not output_path:
        return [msg("github.no_environment")]
    problems = []
    writes = (
        ("GITHUB_STEP_SUMMARY", summary_path, step_summary, "github.no_summary", "github.summary_failed"),
        (
            "GITHUB_OUTPUT",
            output_path,
            lambda g, s: classroom_output(g, s) + "\n",
            "github.no_output",
            "github.output_failed",
        ),
    )
    for variable, path, content, unset, failed in writes:
        if not path:
            problems.append(msg(unset))
            continue
        try:
            _append(path, content(gradebook, submission))
        except Exception as exc:  # the grades stand whatever the file does
            problems.append(msg(failed, variable=variable, path=path, reason=str(exc) or type(exc).__name__))
    return problems

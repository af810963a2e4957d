"""What an author reads in the terminal after ``autograd-grader audit``,
drawn from the audit's JSON document (``verdicts``' schema) alone.

In order: the run, the baseline, the per-check table, the mutation score
per topic, the planted mistakes that got through, each surviving mutant as
its diff, the accepted survivors, what could not be graded, and last the
verdict. Everything taken from the document (file names, ids, diffs,
errors) is text from files and passes through ``shown``: a control
character in a mutated file cannot redraw the author's terminal. Columns
are measured in display columns (CJK characters take two) and padded to the
widest cell of the column, so every row lines up whatever its ids.
"""

from __future__ import annotations

from typing import Any, TextIO

from ..boundary.untrusted import shown
from ..i18n import msg
from ..reporters.terminal import width_of

INDENT = "  "
DIFF_INDENT = "    "


def _s(value: Any) -> str:
    """A value of the document, made safe to print."""
    return shown("" if value is None else str(value))


def seeds_text(seeds: Any) -> str:
    """Seeds as an author reads them: ``1, 2, 5``, a run of three or more
    as ``1-10``; ``-`` for none."""
    seeds = list(seeds or ())
    if not seeds:
        return msg("audit.report.none")
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        return ", ".join(_s(s) for s in seeds)
    runs: list[list[int]] = []
    for seed in seeds:
        if runs and seed == runs[-1][-1] + 1:
            runs[-1].append(seed)
        else:
            runs.append([seed])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) >= 3 else ", ".join(map(str, r)) for r in runs)


def percent_text(value: Any) -> str:
    """``87.5``, ``100``, or ``-`` where there is none."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return msg("audit.report.none")
    return f"{value:.1f}".removesuffix(".0")


def _pad(text: str, width: int, right: bool = False) -> str:
    fill = " " * max(0, width - width_of(text))
    return fill + text if right else text + fill


def lines_of(text: Any) -> list[str]:
    """``text``'s lines, split at line feeds only: a carriage return or a
    line separator inside is shown as its escape, it breaks no line."""
    text = str(text or "").strip("\n")
    return text.split("\n") if text else []


def _items(value: Any) -> list:
    return [item for item in (value or ()) if isinstance(item, dict)] if isinstance(value, list) else []


# -- the run and its baseline -------------------------------------------------------


def run_lines(document: dict) -> list[str]:
    seeds = document.get("seeds") or []
    lines = [
        msg(
            "audit.report.run",
            checks=_s(document.get("checks_dir")),
            solutions=_s(document.get("solutions_dir")),
            mistakes=_s(document.get("mistakes_dir") or msg("audit.report.none")),
            seeds=seeds_text(seeds),
        )
    ]
    seconds, rate = document.get("seconds"), document.get("mutants_per_second")
    if isinstance(seconds, (int, float)):
        key = "audit.report.speed" if isinstance(rate, (int, float)) else "audit.report.speed_no_rate"
        lines.append(
            msg(key, seconds=f"{seconds:.1f}", rate=f"{rate or 0:.2f}", mutants=len(_items(document.get("mutants"))))
        )
    return lines


def _seed_order(key: Any) -> tuple:
    return (0, int(key), "") if str(key).lstrip("-").isdigit() else (1, 0, str(key))


def _percents(percent: Any, wanted: float) -> str:
    """``seed 3: 87.5 %, seed 5: 90 %``: the seeds whose percent is not
    ``wanted``, in order (JSON made them strings); empty when none."""
    if not isinstance(percent, dict):
        return ""
    return msg("audit.report.separator").join(
        msg("audit.report.seed_percent", seed=_s(k), percent=percent_text(percent[k]))
        for k in sorted(percent, key=_seed_order)
        if percent[k] != wanted
    )


def baseline_lines(document: dict) -> list[str]:
    baseline = document.get("baseline") or {}
    count = len(document.get("seeds") or [])
    solutions, stubs = baseline.get("solutions") or {}, baseline.get("stubs") or {}
    lines = []
    if solutions.get("ok"):
        lines.append(msg("audit.report.solutions_ok", count=count))
    else:
        percents = _percents(solutions.get("percent"), 100.0)
        lines.append(
            msg("audit.report.solutions_bad", percents=percents)
            if percents
            else msg("audit.report.solutions_bad_checks")
        )
        lines += [
            INDENT + msg("audit.report.solutions_failed", check=_s(c)) for c in solutions.get("failed_checks") or ()
        ]
    if stubs.get("ok"):
        lines.append(msg("audit.report.stubs_ok", count=count))
    else:
        percents = _percents(stubs.get("percent"), 0.0)
        lines.append(
            msg("audit.report.stubs_bad", percents=percents) if percents else msg("audit.report.stubs_bad_feedback")
        )
        for item in _items(stubs.get("unexpected")):
            first = (lines_of(item.get("feedback")) or [""])[0]
            lines.append(INDENT + msg("audit.report.stubs_unexpected", check=_s(item.get("check")), feedback=_s(first)))
    return lines


# -- the per-check table and the scores ----------------------------------------------

COLUMNS = (
    ("check", False),
    ("topic", False),
    ("mistakes_killed", True),
    ("mutants_killed", True),
    ("survivors_passed", True),
)


def table_rows(document: dict) -> list[list[str]]:
    """The table's cells, header first, every one a printable string."""
    rows = [[msg(f"audit.report.col.{name}") for name, _ in COLUMNS]]
    for check in _items(document.get("checks")):
        rows.append([_s(check.get(name)) if not numeric else _s(check.get(name, 0)) for name, numeric in COLUMNS])
    return rows


def table_lines(document: dict) -> list[str]:
    """One line per check, each column as wide as its widest cell (ids
    never cut: the author looks them up)."""
    rows = table_rows(document)
    if len(rows) == 1:
        return [msg("audit.report.no_checks")]
    widths = [max(width_of(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return ["  ".join(_pad(cell, widths[i], COLUMNS[i][1]) for i, cell in enumerate(row)).rstrip() for row in rows]


def topic_line(document: dict) -> str:
    parts = []
    for topic in _items(document.get("topics")):
        killed, survived = topic.get("killed") or 0, topic.get("survived") or 0
        if not killed + survived:
            parts.append(msg("audit.report.topic_no_mutants", topic=_s(topic.get("topic"))))
            continue
        parts.append(
            msg(
                "audit.report.topic_score",
                topic=_s(topic.get("topic")),
                killed=killed,
                total=killed + survived,
                percent=percent_text(topic.get("score")),
            )
        )
    scores = msg("audit.report.separator").join(parts) if parts else msg("audit.report.none")
    return msg("audit.report.topic_scores", scores=scores)


# -- what got through -------------------------------------------------------------------


def mistake_lines(document: dict) -> list[str]:
    mistakes = _items(document.get("mistakes"))
    if not document.get("mistakes_dir") and not mistakes:
        return [msg("audit.report.mistakes_none")]
    through = [m for m in mistakes if m.get("status") in ("survived", "unnamed")]
    if not through:
        graded = [m for m in mistakes if m.get("status") != "error"]
        return [msg("audit.report.mistakes_all", count=len(graded))]
    lines = [msg("audit.report.mistakes_bad", count=len(through), total=len(mistakes))]
    for m in through:
        lines.append(
            INDENT
            + msg(
                "audit.report.mistake",
                topic=_s(m.get("topic")),
                name=_s(m.get("name")),
                path=_s(m.get("path")),
                what=_s(m.get("what")),
            )
        )
        if m.get("seeds_passed"):
            lines.append(INDENT * 2 + msg("audit.report.mistake_passed", seeds=seeds_text(m["seeds_passed"])))
        if m.get("seeds_unnamed"):
            expected = ", ".join(_s(e) for e in m.get("expected") or ()) or msg("audit.report.none")
            lines.append(
                INDENT * 2
                + msg("audit.report.mistake_unnamed", seeds=seeds_text(m["seeds_unnamed"]), expected=expected)
            )
    return lines


def diff_lines(diff: Any) -> list[str]:
    """The mutant's unified diff, line by line, indented under its mutant."""
    return [DIFF_INDENT + _s(line) for line in lines_of(diff)]


def survivor_lines(document: dict) -> list[str]:
    survivors = [m for m in _items(document.get("mutants")) if m.get("status") == "survived"]
    if not survivors:
        return [msg("audit.report.no_survivors")]
    lines = [msg("audit.report.survivors", count=len(survivors))]
    for m in survivors:
        checks = msg("audit.report.separator").join(_s(c) for c in m.get("checks_passed") or ()) or msg(
            "audit.report.none"
        )
        lines += [
            "",
            INDENT
            + msg(
                "audit.report.mutant", id=_s(m.get("id")), line=_s(m.get("line")), description=_s(m.get("description"))
            ),
            INDENT * 2 + msg("audit.report.mutant_passed", seeds=seeds_text(m.get("seeds_passed")), checks=checks),
            *diff_lines(m.get("diff")),
        ]
    return lines


def accepted_lines(document: dict, verbose: bool) -> list[str]:
    accepted = [m for m in _items(document.get("mutants")) if m.get("status") == "accepted"]
    if not accepted:
        return []
    lines = [msg("audit.report.accepted", count=len(accepted))]
    if verbose:
        lines += [
            INDENT + msg("audit.report.accepted_reason", id=_s(m.get("id")), reason=_s(m.get("reason")))
            for m in accepted
        ]
    return lines


def error_lines(document: dict) -> list[str]:
    failed = [
        (f"{_s(m.get('topic'))}/{_s(m.get('name'))}", m)
        for m in _items(document.get("mistakes"))
        if m.get("status") == "error"
    ]
    failed += [(_s(m.get("id")), m) for m in _items(document.get("mutants")) if m.get("status") == "error"]
    if not failed:
        return []
    lines = [msg("audit.report.errors", count=len(failed))]
    for what, item in failed:
        error = lines_of(item.get("error")) or [""]
        lines.append(INDENT + msg("audit.report.error", what=what, error=_s(error[0])))
        lines += [INDENT * 2 + _s(line) for line in error[1:]]
    return lines


# -- the verdict ------------------------------------------------------------------------------


def score_text(document: dict) -> str:
    score = document.get("score") or {}
    percent, fail_under = score.get("percent"), document.get("fail_under")
    if not isinstance(percent, (int, float)) or isinstance(percent, bool):
        return msg("audit.report.no_score")
    fields = dict(
        percent=percent_text(percent),
        killed=score.get("killed") or 0,
        survived=score.get("survived") or 0,
        accepted=score.get("accepted") or 0,
    )
    if isinstance(fail_under, (int, float)) and not isinstance(fail_under, bool):
        return msg("audit.report.score_fail_under", fail_under=percent_text(fail_under), **fields)
    return msg("audit.report.score", **fields)


def verdict_line(document: dict) -> str:
    if document.get("passed"):
        return msg("audit.report.passed", score=score_text(document))
    problems = "; ".join(_s(p) for p in document.get("problems") or ()) or msg("audit.report.unknown_problem")
    return msg("audit.report.failed", problems=problems, score=score_text(document))


def report_lines(document: dict, verbose: bool = False) -> list[str]:
    """The whole report, line by line."""
    sections = [
        run_lines(document),
        baseline_lines(document),
        table_lines(document),
        [topic_line(document)],
        mistake_lines(document),
        survivor_lines(document),
        accepted_lines(document, verbose),
        error_lines(document),
    ]
    lines: list[str] = []
    for section in sections:
        if section:
            lines += [*section, ""]
    return lines + [verdict_line(document)]


def print_report(document: dict, stream: TextIO, verbose: bool = False) -> None:
    """Print the audit's report of ``document`` to ``stream``; ``verbose``
    adds each accepted survivor with its reason."""
    stream.write("\n".join(report_lines(document, verbose)) + "\n")

"""The synthetic class's reports read back: the baseline, each planted
mistake's and each mutant's verdict, the per-check table and the JSON
document (GUIDE's ``pytest-autograd-grader/audit-1`` schema)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..classroom.runner import _not_attempted
from ..i18n import msg
from ..protocol import Status
from .planted import Planted

SCHEMA = "pytest-autograd-grader/audit-1"


@dataclass
class Graded:
    """One variant's reports, seed by seed."""

    reports: dict[int, dict] = field(default_factory=dict)

    def broken(self) -> str:
        """Why the variant could not be graded at all (no check reported), or ''."""
        for report in self.reports.values():
            if not report.get("checks") and (report.get("status") == "error" or report.get("error")):
                return str(report.get("error") or "grading failed")
        return ""

    def lost_points(self, seed: int) -> bool:
        return any(_lost(check) for check in self.reports[seed].get("checks") or [])

    def seeds_passed(self) -> list[int]:
        return [seed for seed in sorted(self.reports) if not self.lost_points(seed)]

    def checks_where(self, lost: bool, seeds: list[int] | None = None) -> list[str]:
        """Node ids of the checks that lost (or kept) all their points on any of ``seeds``."""
        found: dict[str, None] = {}
        for seed in sorted(self.reports) if seeds is None else seeds:
            for check in self.reports[seed].get("checks") or []:
                if _lost(check) == lost:
                    found[str(check.get("id"))] = None
        return list(found)

    def named(self, seed: int) -> set[str]:
        return {
            str(d.get("id"))
            for check in self.reports[seed].get("checks") or []
            for d in check.get("diagnoses") or []
            if isinstance(d, dict)
        }


def _lost(check: dict) -> bool:
    return (
        float(check.get("score") or 0.0) < float(check.get("max_score") or 0.0) or check.get("status") == Status.ERROR
    )


def _percent(report: dict) -> float:
    top = float(report.get("max_score") or 0.0)
    return round(100.0 * float(report.get("score") or 0.0) / top, 2) if top else 0.0


def baseline(solutions: list[Graded], stubs: list[Graded], seeds: list[int]) -> dict:
    """Solutions at 100 % and stubs at 0 with only "not implemented", per seed
    (the topics' runs added up)."""

    def percent(graded: list[Graded], seed: int) -> float:
        score = sum(float(g.reports[seed].get("score") or 0.0) for g in graded)
        top = sum(float(g.reports[seed].get("max_score") or 0.0) for g in graded)
        return round(100.0 * score / top, 2) if top else 0.0

    failed = sorted({c for g in solutions for c in g.checks_where(lost=True)})
    errors = [g.broken() for g in solutions if g.broken()]
    solved = {
        "ok": not failed and not errors and all(percent(solutions, s) == 100.0 for s in seeds),
        "percent": {str(s): percent(solutions, s) for s in seeds},
        "failed_checks": failed,
    }
    unexpected: dict[str, str] = {}
    for graded in stubs:
        for seed in seeds:
            for check in graded.reports[seed].get("checks") or []:
                if float(check.get("score") or 0.0) or not _not_attempted({"checks": [check]}):
                    unexpected.setdefault(
                        str(check.get("id")), str(check.get("private_feedback") or check.get("feedback") or "")
                    )
    stub_errors = [g.broken() for g in stubs if g.broken()]
    for error in stub_errors:
        unexpected.setdefault("-", error)
    stubbed = {
        "ok": not unexpected and all(percent(stubs, s) == 0.0 for s in seeds),
        "percent": {str(s): percent(stubs, s) for s in seeds},
        "unexpected": [{"check": c, "feedback": f} for c, f in unexpected.items()],
    }
    return {"solutions": solved, "stubs": stubbed, "errors": errors}


def mistake_verdict(planted: Planted, graded: Graded | None) -> dict:
    """killed (points lost and every expected diagnosis named on every
    seed), survived, unnamed, or error (it could not be graded)."""
    entry = {
        "topic": planted.topic,
        "name": planted.name,
        "path": str(planted.path),
        "what": planted.what,
        "expected": list(planted.expected),
        "status": "error",
        "seeds_passed": [],
        "seeds_unnamed": [],
        "checks_failed": [],
        "checks_passed": [],
        "error": planted.error,
    }
    if graded is None or planted.error:
        return entry
    if graded.broken():
        return {**entry, "error": graded.broken()}
    passed = graded.seeds_passed()
    unnamed = [s for s in sorted(graded.reports) if s not in passed and not set(planted.expected) <= graded.named(s)]
    status = "survived" if passed else "unnamed" if unnamed else "killed"
    return {
        **entry,
        "status": status,
        "seeds_passed": passed,
        "seeds_unnamed": unnamed,
        "checks_failed": graded.checks_where(lost=True),
        "checks_passed": graded.checks_where(False, passed),
    }


def mutant_verdict(mutant, graded: Graded, accepted: dict[str, str]) -> dict:
    """killed (points lost on every seed), survived (with the seeds it got
    full marks on and the checks it passed there), accepted, or error."""
    entry = {
        "id": mutant.id,
        "topic": mutant.module,
        "function": mutant.function,
        "operator": mutant.operator,
        "description": mutant.description,
        "line": mutant.line,
        "diff": mutant.diff,
        "status": "killed",
        "reason": "",
        "seeds_passed": [],
        "checks_passed": [],
        "checks_failed": [],
        "error": "",
    }
    if graded.broken():
        return {**entry, "status": "error", "error": graded.broken()}
    passed = graded.seeds_passed()
    entry.update(seeds_passed=passed, checks_failed=graded.checks_where(lost=True))
    if not passed:
        return entry
    entry.update(status="survived", checks_passed=graded.checks_where(False, passed))
    if mutant.id in accepted:
        entry.update(status="accepted", reason=accepted[mutant.id])
    return entry


def check_table(solutions: list[Graded], mistakes: list[dict], mutants: list[dict], topic_of: dict[str, str]) -> list:
    """Per check (in the solutions' order): the killed mistakes and mutants
    that lost points on it (a mutant's run stops at its first failing
    check), and the survivors that passed it."""
    order = list(
        dict.fromkeys(
            c
            for g in solutions
            for seed in sorted(g.reports)
            for c in (str(x.get("id")) for x in g.reports[seed].get("checks") or [])
        )
    )
    rows = []
    for check in order:
        survivors = [v for v in [*mistakes, *mutants] if v["status"] == "survived"]
        rows.append(
            {
                "check": check,
                "topic": topic_of.get(check, ""),
                "mistakes_killed": sum(
                    check in m["checks_failed"] for m in mistakes if m["status"] in ("killed", "unnamed")
                ),
                "mutants_killed": sum(check in m["checks_failed"] for m in mutants if m["status"] == "killed"),
                "survivors_passed": sum(check in v["checks_passed"] for v in survivors),
            }
        )
    return rows


def topic_table(topics: list[str], mutants: list[dict]) -> list[dict]:
    rows = []
    for topic in topics:
        mine = [m for m in mutants if m["topic"] == topic]
        count = {s: sum(m["status"] == s for m in mine) for s in ("killed", "survived", "accepted")}
        graded = count["killed"] + count["survived"]
        rows.append(
            {
                "topic": topic,
                "mutants": len(mine),
                **count,
                "score": round(100.0 * count["killed"] / graded, 1) if graded else 100.0,
            }
        )
    return rows


def score(mutants: list[dict]) -> dict:
    count = {s: sum(m["status"] == s for m in mutants) for s in ("killed", "survived", "accepted", "error")}
    graded = count["killed"] + count["survived"]
    return {
        **{k: count[k] for k in ("killed", "survived", "accepted")},
        "errors": count["error"],
        "percent": round(100.0 * count["killed"] / graded, 1) if graded else None,
    }


def problems(base: dict, mistakes: list[dict], total: dict, fail_under: float | None) -> list[str]:
    """Why the audit fails, in words (empty: it passes)."""
    found = [msg("audit.problem.grading_failed", error=e) for e in base["errors"]]
    if not base["solutions"]["ok"]:
        found.append(msg("audit.problem.solutions", checks=", ".join(base["solutions"]["failed_checks"]) or "-"))
    if not base["stubs"]["ok"]:
        found.append(msg("audit.problem.stubs", checks=", ".join(u["check"] for u in base["stubs"]["unexpected"])))
    for m in mistakes:
        name = f"{m['topic']}/{m['name']}"
        if m["status"] == "survived":
            found.append(msg("audit.problem.mistake_survived", name=name, seeds=_seeds(m["seeds_passed"])))
        elif m["status"] == "unnamed":
            found.append(
                msg(
                    "audit.problem.mistake_unnamed",
                    name=name,
                    ids=", ".join(m["expected"]),
                    seeds=_seeds(m["seeds_unnamed"]),
                )
            )
        elif m["status"] == "error":
            found.append(msg("audit.problem.mistake_error", name=name, error=m["error"]))
    if fail_under is not None and total["percent"] is not None and total["percent"] < fail_under:
        found.append(msg("audit.problem.fail_under", percent=total["percent"], fail_under=fail_under))
    return found


def _seeds(seeds: list[int]) -> str:
    return ", ".join(map(str, seeds))


def build_document(setup, graded: dict, seconds: float) -> dict:
    """The audit as GUIDE's JSON document."""
    from .accepted import stale

    def of(kind: str, topic: str, key: str = ""):
        return graded.get((kind, topic, key))

    seeds = setup.seeds
    solutions = [of("solution", t) for t in setup.topics]
    stubs = [g for g in (of("stub", t) for t in setup.topics) if g is not None]
    base = baseline(solutions, stubs, seeds)
    mistakes = [mistake_verdict(p, of("mistake", p.topic, p.name)) for p in setup.planted]
    mutants = [
        mutant_verdict(m, of("mutant", t, m.id), setup.accepted) for t in setup.topics for m in setup.mutants.get(t, [])
    ]
    topic_of = {
        str(c.get("id")): t
        for t, g in zip(setup.topics, solutions)
        for r in g.reports.values()
        for c in r.get("checks") or []
    }
    total = score(mutants)
    found = problems(base, mistakes, total, setup.fail_under)
    audited = {m.id for ms in setup.mutants.values() for m in ms}
    mine = {i for i in setup.accepted if i.split(".")[0] in setup.topics}
    warnings = (
        [msg("audit.accepted_stale", id=i) for i in stale({i: "" for i in mine}, audited)] if setup.mutants else []
    )
    return {
        "schema": SCHEMA,
        "checks_dir": str(setup.checks),
        "solutions_dir": str(setup.solutions),
        "mistakes_dir": str(setup.mistakes_dir) if setup.mistakes_dir else None,
        "seeds": list(seeds),
        "passed": not found,
        "problems": found,
        "baseline": {"solutions": base["solutions"], "stubs": base["stubs"]},
        "mistakes": mistakes,
        "mutants": mutants,
        "checks": check_table(solutions, mistakes, mutants, topic_of),
        "topics": topic_table(setup.topics, mutants),
        "score": total,
        "fail_under": setup.fail_under,
        "seconds": round(seconds, 2),
        "mutants_per_second": round(len(mutants) / seconds, 3) if mutants and seconds > 0 else None,
        "warnings": warnings,
    }

"""The checks a manifest lists for one check file, as gradebook entries
worth 0 of their points: for a check file that was edited (``failed``) or
that could not be loaded where it ran (``error``: a syntax error, a package
the platform lacks). Their points stay in the total, so a broken file shows
as points lost, visibly, never as points that vanished from the maximum."""

from __future__ import annotations

from pathlib import PurePosixPath

from ..concepts import Concept
from ..i18n import msg
from ..scoring import CheckResult


def manifest_results(
    entry: dict, nodeid_prefix: str, concepts: dict[str, Concept], status: str, what: str
) -> list[CheckResult]:
    """One result per check of the manifest ``entry`` (whose file pytest
    names ``nodeid_prefix``), scored 0 with ``what`` as its feedback."""
    topic = PurePosixPath(nodeid_prefix).stem.removeprefix("test_").removesuffix("_test")
    results = []
    for check in entry["checks"]:
        nodeid = nodeid_prefix + check["id"][check["id"].find("::") :]
        concept = concepts.get(check["concept"])
        hidden = bool(check.get("hidden", False))
        feedback = msg("feedback.header", title=concept.title if concept else check["concept"], what=what)
        results.append(
            CheckResult(
                id=nodeid,
                concept=check["concept"],
                score=0.0,
                max_score=float(check["points"]),
                status=status,
                feedback=feedback,
                hidden=hidden,
                topic=topic,
                title=check.get("title") or nodeid.split("::")[-1],
                visibility=check.get("visibility") or ("hidden" if hidden else "visible"),
                # the reason is about the file, no secret of the check's
                private_feedback=feedback if hidden else "",
            )
        )
    return results

"""Gradescope's "Export Submissions" zip: ``submission_metadata.yml``
beside one folder per submission (``submission_123456789/``), the metadata
keyed by those folders' names with Ruby's symbols as keys
(``:submitters:`` a list of ``:name:``, ``:sid:``, ``:email:``;
``:created_at:``; ``:score:``). A group's submission is graded once for
each of its submitters. Every key and value is data: a folder is read only
where the export holds it, and named by the grader. Reading the YAML takes
pyyaml (the ``class`` extra)."""

from __future__ import annotations

from pathlib import Path

from ...i18n import msg
from ..students import safe_folder
from . import Handed, IntakeError, place
from .export import Export

METADATA = "submission_metadata.yml"
MAX_METADATA = 16 << 20  # bytes: a few hundred bytes a submission


def _metadata(export: Export) -> dict[str, object]:
    """The metadata by folder name, read once."""
    if METADATA not in export.cache:
        try:
            import yaml
        except ImportError:
            raise IntakeError(msg("intake.needs_yaml")) from None
        try:
            with export.open(export.entry(METADATA)) as source:
                text = source.read(MAX_METADATA + 1)
            if len(text) > MAX_METADATA:
                raise ValueError(f"more than {MAX_METADATA >> 20} MB")
            data = yaml.safe_load(text.decode("utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a mapping of submission folders to their submitters")
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise IntakeError(msg("intake.bad_metadata", path=METADATA, reason=str(exc))) from None
        export.cache[METADATA] = {str(k): v for k, v in data.items()}
    cached = export.cache[METADATA]
    assert isinstance(cached, dict)  # only this function writes it, a dict
    return cached


def _submitters(record: object) -> list[dict]:
    found = record.get(":submitters") if isinstance(record, dict) else None
    return [s for s in found if isinstance(s, dict)] if isinstance(found, list) else []


class Gradescope:
    name = "gradescope"

    def claim(self, export: Export, name: str, kind: str) -> int | None:
        if not export.has(METADATA):
            return None
        if name == METADATA:
            return 0
        return 0 if kind == "dir" and name in _metadata(export) else None

    def collect(self, export: Export, names: dict[str, str], into: Path) -> tuple[Path, list[Handed]]:
        metadata = _metadata(export)
        handed = []
        taken: set[str] = set()
        for key in names:
            if key == METADATA:
                continue
            number = key.removeprefix("submission_")
            files = [(e, "/".join(e.parts)) for e in export.under(key)]
            # a submission no one is named on is still graded, under its folder's name
            for submitter in _submitters(metadata[key]) or [{":name": key}]:
                name = str(submitter.get(":name") or submitter.get(":email") or key)
                student = Handed(
                    name=name, lms_id=str(submitter.get(":sid") or submitter.get(":email") or ""), submission_id=number
                )
                student.folder = safe_folder(f"{name}_{number}", taken)
                place(export, files, into / student.folder, student)
                handed.append(student)
        return into, handed


FORMAT = Gradescope()

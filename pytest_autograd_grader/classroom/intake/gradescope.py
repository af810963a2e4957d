"""Gradescope's "Export Submissions" zip: ``submission_metadata.yml``
beside one folder per submission (``submission_123456789/``), the metadata
keyed by those folders' names with Ruby's symbols as keys
(``:submitters:`` a list of ``:name:``, ``:sid:``, ``:email:``;
``:created_at:``; ``:score:``). A group's submission is graded once for
each of its submitters. Reading the YAML takes pyyaml (the ``class``
extra)."""

from __future__ import annotations

from pathlib import Path

from ...i18n import msg
from . import Handed, IntakeError, place

METADATA = "submission_metadata.yml"


class Gradescope:
    name = "gradescope"

    def detect(self, root: Path) -> bool:
        return (root / METADATA).is_file()

    def collect(self, root: Path, into: Path) -> tuple[Path, list[Handed]]:
        try:
            import yaml
        except ImportError:
            raise IntakeError(msg("intake.needs_yaml")) from None
        try:
            metadata = yaml.safe_load((root / METADATA).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise IntakeError(msg("intake.bad_metadata", path=str(root / METADATA), reason=str(exc))) from None
        handed = []
        for key, record in sorted((metadata or {}).items()) if isinstance(metadata, dict) else ():
            folder = root / str(key)
            submitters = record.get(":submitters") if isinstance(record, dict) else None
            if not folder.is_dir() or folder.is_symlink() or not isinstance(submitters, list):
                continue
            for submitter in submitters:
                if not isinstance(submitter, dict):
                    continue
                name = str(submitter.get(":name") or submitter.get(":email") or key)
                student = Handed(name=name, lms_id=str(submitter.get(":sid") or submitter.get(":email") or ""))
                student.folder = f"{name}_{key.split('_')[-1]}" if str(key).startswith("submission_") else name
                files = [(f, str(f.relative_to(folder))) for f in sorted(folder.rglob("*")) if f.is_file()
                         and not f.is_symlink()]
                place(files, into / student.folder, student)
                handed.append(student)
        return into, handed




    def skipped(self, root: Path) -> list[tuple[str, str]]:
        return []  # the export's own files: nothing a student handed in is left out


FORMAT = Gradescope()

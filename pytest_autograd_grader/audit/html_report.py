"""A placeholder the auditreport helper's page replaces: the document as
escaped JSON in a page."""

from __future__ import annotations

import html
import json
from pathlib import Path

from ..reporters.files import write_text_atomic


def write_html(document: dict, path: Path) -> None:
    body = html.escape(json.dumps(document, indent=2, ensure_ascii=False))
    write_text_atomic(path, f"<!doctype html><meta charset='utf-8'><title>audit</title><pre>{body}</pre>\n")

"""The HTML pages' common parts: ``page`` (a self-contained page with its
style and content security policy), ``table`` and ``escape``. The class
report (``class_report``) and the audit's page (``audit/html_report.py``)
are drawn with them, so both look alike and escape alike.
"""

from __future__ import annotations

import base64
import hashlib
import html
from typing import Any

from ..i18n import current_language

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 72em;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.error td, tr.missing td { color: #888; }
img { max-width: 100%; height: auto; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: 0.9em; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; white-space: pre-wrap; }
.note { color: #555; }
details { margin: 0.2em 0 0.8em 0; }
#gradebook-table { width: 100%; font-size: 0.85em; }
#gradebook-table td, #gradebook-table th { padding: 0.2em 0.35em; }
#gradebook-table td.n, #gradebook-table td:nth-child(2) { white-space: nowrap; }
#gradebook-table td:first-child { overflow-wrap: anywhere; min-width: 9em; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort=ascending]::after { content: " \\25B2"; }
table.sortable th[aria-sort=descending]::after { content: " \\25BC"; }
.flag { display: inline-block; background: #fde2c8; color: #7a3e00; border-radius: 0.3em; padding: 0 0.3em;
        margin: 0.1em 0.2em 0 0; font-size: 0.85em; }
section.student table { width: 100%; font-size: 0.9em; }
section.student pre { margin: 0; max-height: 20em; overflow-y: auto; }
tr.check-passed td.status { color: #2a7a2a; } tr.check-failed td.status, tr.check-timeout td.status,
tr.check-crashed td.status { color: #a0201e; }
"""

# Sorts a ``sortable`` table by the column whose header is clicked (again:
# the other way); numbers by the data-sort value or the text, the rest as text
# in the page's language; and opens the <details> a link's #anchor names.
# Given to ``page`` as its only script, allowed there by its hash.
SORTING_SCRIPT = """
for (const table of document.querySelectorAll("table.sortable")) {
  table.tHead.rows[0].querySelectorAll("th").forEach((th, column) => th.addEventListener("click", () => {
    const numeric = th.classList.contains("n"), up = th.getAttribute("aria-sort") !== "ascending";
    for (const other of table.tHead.rows[0].cells) other.removeAttribute("aria-sort");
    th.setAttribute("aria-sort", up ? "ascending" : "descending");
    const key = row => {
      const cell = row.cells[column], text = cell.dataset.sort ?? cell.textContent.trim();
      return numeric ? (text === "" ? -Infinity : parseFloat(text)) : text;
    };
    const order = (a, b) => numeric ? key(a) - key(b) : key(a).localeCompare(key(b), document.documentElement.lang);
    const rows = [...table.tBodies[0].rows].sort((a, b) => (up ? 1 : -1) * order(a, b));
    for (const row of rows) table.tBodies[0].appendChild(row);
  }));
}
const open = () => { const target = location.hash && document.getElementById(location.hash.slice(1));
                     if (target && target.tagName === "DETAILS") target.open = true; };
window.addEventListener("hashchange", open);
open();
"""


def escape(value: Any) -> str:
    """``value`` as text safe anywhere in the page (the audit's page too)."""
    return html.escape("" if value is None else str(value), quote=True)


def table(
    table_id: str,
    header: list[tuple[str, bool]],
    rows: list[list[tuple]],
    row_classes: list[str] | None = None,
    sortable: bool = False,
) -> str:
    """A table; cells are (already escaped html, numeric[, the value it sorts by])."""
    out = [f'<table id="{table_id}"{" class=sortable" if sortable else ""}><thead><tr>']
    out += [f"<th{' class=n' if n else ''}>{text}</th>" for text, n in header]
    out.append("</tr></thead><tbody>")
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        cells = []
        for cell in row:
            text, numeric = cell[0], cell[1]
            sort = f' data-sort="{escape(cell[2])}"' if len(cell) > 2 and cell[2] is not None else ""
            cells.append(f"<td{' class=n' if numeric else ''}{sort}>{text}</td>")
        out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def page(title: str, body: list[str], css: str = "", script: str | None = None) -> str:
    """A self-contained page in the class report's style: ``body``'s html
    parts (escaped already) under ``title``, with ``css`` added to the
    style and ``script`` its only script."""
    lang = "zh" if current_language() == "zh" else "en"
    # the page runs no script but its own: a policy allows that one by its hash, and loads nothing from elsewhere
    scripts = "'none'"
    if script is not None:
        scripts = "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"
    policy = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src {scripts}"
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}{css}</style></head>\n<body>\n"
        + "\n".join(body)
        + (f"\n<script>{script}</script>" if script is not None else "")
        + "\n</body></html>\n"
    )

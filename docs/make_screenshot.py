"""Make docs/images/student-table.png: a student's grade table, for real.

A partly-solved copy of the course (some topics solved, one with a typical
mistake from mistakes/, the rest untouched stubs) is graded with
`pytest --grade exercises/`, the table at the end of its output is written
into a small HTML page as terminal text, and headless Chromium screenshots
that page. Run from the repository's root:

    python docs/make_screenshot.py

It needs the grader installed (pip install torch==2.13.0 -e '.[student]')
and Chromium (Debian: apt-get install chromium).
"""

from __future__ import annotations

import html
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "images" / "student-table.png"
# what the student has done so far: these topics solved, this one with a
# planted mistake (.grad never cleared between training steps), the rest not started
SOLVED = ("graph", "leaf", "retain_grad", "dynamic_graph", "retain_graph", "vector_backward", "engine")
MISTAKE = ("accumulation", REPO / "mistakes" / "accumulation" / "train_never_cleared.py")
SEED = "1234"
# 13 px DejaVu Sans Mono is 7.83 px a column: 88 columns fit beside the
# padding, and a longer line (the next: line) wraps
WIDTH, COLUMNS, LINE_PX = 730, 88, 19

PAGE = """<!doctype html><meta charset="utf-8"><style>
body {{ margin: 0; background: #1e1e1e; }}
pre {{ margin: 0; padding: 14px 18px; white-space: pre-wrap; color: #d4d4d4; font: 13px/{line}px "DejaVu Sans Mono", monospace; }}
.prompt {{ color: #6a9955; }}
</style><pre><span class="prompt">$ pytest --grade exercises/</span>
<span>...</span>
{table}</pre>
"""


def partly_solved(work: Path) -> None:
    shutil.copytree(REPO / "exercises", work / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    for topic in SOLVED:
        shutil.copy(REPO / "solutions" / f"{topic}.py", work / "exercises" / f"{topic}.py")
    topic, planted = MISTAKE
    shutil.copy(planted, work / "exercises" / f"{topic}.py")


def grade(work: Path) -> str:
    # this checkout's grader, 80 columns as a terminal has them, English feedback
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "COLUMNS": "80", "LANG": "C.UTF-8", "PYTHONPATH": path}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--grade",
            "exercises/",
            "--grade-seed",
            SEED,
            "-p",
            "no:cacheprovider",
            "--color=no",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.stdout


def table(output: str) -> str:
    """The grade section: from its '= grade =' rule to the end, without
    pytest's own summary line."""
    lines = output.rstrip().splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith("=") and " grade " in line)
    return "\n".join(line for line in lines[start:] if not (line.startswith("=") and " in " in line))


def screenshot(text: str, out: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        sys.exit("needs Chromium: apt-get install chromium")
    rows = sum(max(1, -(-len(line) // COLUMNS)) for line in text.splitlines()) + 2
    height = rows * LINE_PX + 28
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "table.html"
        page.write_text(PAGE.format(line=LINE_PX, table=html.escape(text)), encoding="utf-8")
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={tmp}/profile",
                f"--screenshot={out}",
                f"--window-size={WIDTH},{height}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        partly_solved(work)
        text = table(grade(work))
    print(text)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    screenshot(text, OUT)
    print(f"wrote {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()

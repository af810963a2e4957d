"""Self-check from inside a Jupyter or Colab notebook::

    from pytest_autograd_grader import notebook
    notebook.check("leaf")      # one topic; notebook.check() grades every topic

The functions and classes defined in the running kernel are what is graded:
they are serialised by value with cloudpickle (with every global they use),
written as the modules the checks ask for into a fresh folder, and graded by
an ordinary ``pytest --grade`` run in a new process, in the sandbox with the
strongest isolation that works on this machine, exactly as a lone run of the
same checks would grade them. The result shows as a table in the notebook,
each failed check with its feedback, in the student's language, and says
which isolation graded it.

The course's checks are found in the folder ``checks`` names, else in
``$AUTOGRAD_GRADER_CHECKS``, else in ``exercises/`` or ``checks/`` in the
working directory or the one above it (where ``autograd-grader notebooks``
puts the notebooks, beside the exercises), else the package's own
curriculum is used (``curriculum/``, the exercises it ships: a Colab
notebook needs nothing but ``pip install``).
"""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .boundary.shortening import shorten
from .i18n import catalogue, current_language
from .protocol import NOT_PASSED

CHECKS_ENV = "AUTOGRAD_GRADER_CHECKS"
CURRICULUM = Path(__file__).resolve().parent / "curriculum"
RUN_TIMEOUT_S = 900.0  # the whole pytest run; each student call has --grade-timeout besides


class NotebookCheckError(Exception):
    """What stops a check before grading (no checks found, no kernel
    functions, cloudpickle missing): a message id and its fields, said in
    the student's language."""

    def __init__(self, key: str, **fields: object):
        super().__init__(key)
        self.key, self.fields = key, fields


def _say(lang: str | None, key: str, **fields: object) -> str:
    return catalogue(lang or current_language())[key].format(**fields)


@dataclass
class Graded:
    """The outcome of ``check``: the JSON report, shown as a table."""

    topic: str | None
    report: dict = field(default_factory=dict)
    output: str = ""  # what pytest printed, for a run that wrote no report
    problem: NotebookCheckError | None = None  # what stopped the check before grading
    lang: str | None = None  # the language asked for; the report's own decides once there is one

    def say(self, key: str, **fields: object) -> str:
        return _say(self.report.get("lang") or self.lang, key, **fields)

    @property
    def percent(self) -> float:
        return float(self.report.get("percent") or 0.0)

    def _failed(self) -> list[dict]:
        return [c for c in self.report.get("checks", []) if c.get("status") in NOT_PASSED]

    def _isolation(self) -> str:
        mode = self.report.get("isolation") or "?"
        missing = self.report.get("isolation_missing") or []
        return self.say("notebook.isolation", mode=mode) + (
            " " + self.say("notebook.isolation_missing", missing="; ".join(missing)) if missing else ""
        )

    def _total(self) -> str:
        return self.say(
            "notebook.total",
            score=self.report.get("score", 0),
            max_score=self.report.get("max_score", 0),
            percent=self.percent,
        )

    def __str__(self) -> str:
        if self.problem is not None:
            return self.say(self.problem.key, **self.problem.fields)
        if not self.report:
            return self.say("notebook.no_report", output=self.output.strip()[-2000:])
        lines = [
            f"{c['title']} ({c['id']}): {c['score']:g}/{c['max_score']:g}, {c['passed']}/{c['checks']}"
            for c in self.report.get("concepts", [])
        ]
        lines.append(self._total())
        lines += [f"\n{c.get('title') or c['id']} [{c['status']}]\n{c.get('feedback', '')}" for c in self._failed()]
        lines += self.report.get("notes", [])
        lines.append(self._isolation())
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        if not self.report:
            return f"<pre>{html.escape(str(self))}</pre>"
        rows = "".join(
            f"<tr><td>{html.escape(str(c['title']))}</td><td>{c['score']:g} / {c['max_score']:g}</td>"
            f"<td>{c['passed']} / {c['checks']}</td></tr>"
            for c in self.report.get("concepts", [])
        )
        total = self._total()
        failed = "".join(
            f"<details open><summary><b>{html.escape(str(c.get('title') or c['id']))}</b> "
            f"({html.escape(str(c['status']))}, {c['score']:g} / {c['max_score']:g})</summary>"
            f"<pre style='white-space: pre-wrap'>{html.escape(str(c.get('feedback') or ''))}</pre></details>"
            for c in self._failed()
        )
        notes = "".join(f"<p>{html.escape(note)}</p>" for note in self.report.get("notes", []))
        head = "".join(
            f"<th>{html.escape(self.say(key))}</th>"
            for key in ("notebook.concept", "notebook.points", "notebook.passed")
        )
        return (
            f"<div class='autograd-grader'><table><thead><tr>{head}"
            f"</tr></thead><tbody>{rows}</tbody></table><p><b>{html.escape(total)}</b></p>{failed}{notes}"
            f"<p><small>{html.escape(self._isolation())}</small></p></div>"
        )


def find_checks(checks: str | os.PathLike | None = None, topic: str | None = None) -> Path:
    """The folder of the course's checks (see the module's docstring)."""
    wanted = f"test_{topic}.py" if topic else None
    if checks is not None:
        folder = Path(checks).expanduser()
        if not folder.is_dir():
            raise NotebookCheckError("notebook.checks_not_dir", path=str(folder))
        candidates = [folder]
    elif os.environ.get(CHECKS_ENV):
        candidates = [Path(os.environ[CHECKS_ENV]).expanduser()]
    else:
        here = Path.cwd()
        candidates = [base / name for base in (here, here.parent) for name in ("exercises", "checks")]
        candidates.append(CURRICULUM)
    for folder in candidates:
        if folder.is_dir() and (
            wanted is None and any(folder.glob("test_*.py")) or wanted is not None and (folder / wanted).is_file()
        ):
            return folder.resolve()
    raise NotebookCheckError(
        "notebook.no_checks", topic=topic or "*", looked=", ".join(map(str, candidates)), env=CHECKS_ENV
    )


def kernel_definitions(namespace: dict) -> dict:
    """The functions and classes the student defined in the kernel (its
    cells run as ``__main__``), by name; names starting with ``_`` are
    IPython's own (``_``, ``_i7``) or private."""
    found = {}
    for name, value in list(namespace.items()):
        if name.startswith("_") or not callable(value):
            continue
        if getattr(value, "__module__", None) == "__main__" and (isinstance(value, type) or hasattr(value, "__code__")):
            found[name] = value
    return found


MODULE_TEXT = '''"""Written by pytest_autograd_grader.notebook.check from the running kernel:
the functions and classes defined there, serialised with cloudpickle."""
import pathlib as _pathlib

import cloudpickle as _cloudpickle

globals().update(_cloudpickle.loads(_pathlib.Path(__file__).with_name("kernel.pkl").read_bytes()))
'''


def write_submission(folder: Path, definitions: dict, modules: list[str]) -> None:
    """``folder``/<module>.py for each module, each loading the kernel's
    definitions (kernel.pkl)."""
    try:
        import cloudpickle
    except ImportError:
        raise NotebookCheckError("notebook.needs_cloudpickle") from None
    try:
        data = cloudpickle.dumps(definitions)
    except Exception as exc:  # something a definition holds cannot be serialised (an open file, a lock)
        raise NotebookCheckError("notebook.unpicklable", reason=shorten(f"{type(exc).__name__}: {exc}", 300)) from None
    (folder / "kernel.pkl").write_bytes(data)
    for module in modules:
        (folder / f"{module}.py").write_text(MODULE_TEXT)


def check(
    topic: str | None = None,
    checks: str | os.PathLike | None = None,
    lang: str | None = None,
    timeout: float | None = None,
    seed: int | None = None,
    namespace: dict | None = None,
) -> Graded:
    """Grade the kernel's functions with the course's checks for ``topic``
    ("leaf"; None: every topic) and show the result in the notebook.
    ``lang``: "en" or "zh" (default: as ``pytest --grade`` chooses);
    ``timeout``: seconds per student call; ``seed``: replay a run."""
    try:
        folder = find_checks(checks, topic)
        if namespace is None:
            namespace = vars(sys.modules["__main__"])
        definitions = kernel_definitions(namespace)
        if not definitions:
            raise NotebookCheckError("notebook.nothing_defined")
        topics = [topic] if topic else sorted(p.stem.removeprefix("test_") for p in folder.glob("test_*.py"))
        with tempfile.TemporaryDirectory(prefix="notebook-check-") as tmp:
            submission = Path(tmp) / "submission"
            submission.mkdir()
            write_submission(submission, definitions, topics)
            return _grade(folder, topic, submission, Path(tmp) / "report.json", lang, timeout, seed)
    except NotebookCheckError as exc:
        return Graded(topic, problem=exc, lang=lang)


def _grade(
    folder: Path,
    topic: str | None,
    submission: Path,
    report: Path,
    lang: str | None,
    timeout: float | None,
    seed: int | None,
) -> Graded:
    ini = folder / "pytest.ini"
    target = folder / f"test_{topic}.py" if topic else folder
    args = [
        sys.executable,
        "-m",
        "pytest",
        str(target),
        "-c",
        str(ini) if ini.is_file() else os.devnull,
        "--rootdir",
        str(folder),
        "-p",
        "no:cacheprovider",
        "-q",
        "--grade",
        f"--grade-submission={submission}",
        "--grade-json",
        str(report),
    ]
    args += [f"--grade-lang={lang}"] if lang else []
    args += [f"--grade-timeout={timeout:g}"] if timeout else []
    args += [f"--grade-seed={seed}"] if seed is not None else []
    try:
        done = subprocess.run(
            args, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=submission.parent, stdin=subprocess.DEVNULL
        )
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        output = _say(lang, "notebook.run_timeout", seconds=RUN_TIMEOUT_S)
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError):
        data = {}
    _in_this_notebook(data, [p.stem for p in submission.glob("*.py")], lang)
    return Graded(topic, data, output, lang=lang)


def _in_this_notebook(report: dict, modules: list[str], lang: str | None) -> None:
    """The report's feedback with the modules ``write_submission`` wrote
    ("leaf.py has no function ...") called what the student sees: this
    notebook. ``test_leaf.py`` and the student's other names stay as they are."""
    if not modules or not isinstance(report.get("checks"), list):
        return
    import re

    written = re.compile(r"(?<![\w./-])(?:" + "|".join(map(re.escape, modules)) + r")\.py\b")
    here = _say(report.get("lang") or lang, "notebook.this_notebook")
    for check in report["checks"]:
        for key in ("feedback", "private_feedback"):
            if isinstance(check, dict) and isinstance(check.get(key), str):
                check[key] = written.sub(here, check[key])

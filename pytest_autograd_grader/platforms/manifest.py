"""Manifests of a course's check files, and the guard that grades with one.

``python -m pytest_autograd_grader manifest CHECKS_DIR`` lists every check
file of CHECKS_DIR (a file pytest collects checks from), with its sha256 and
the checks it holds (node id, concept, points, visibility), plus the files
that change grading without holding checks (``conftest.py``, ``pytest.ini``).
The student's modules (every other ``.py`` file) are not in it: they are what
the student edits.

``pytest --grade --grade-manifest FILE CHECKS_DIR`` compares the checks
directories (the directories among pytest's arguments, else the rootdir)
with it before collection:

- a check file that differs or is missing is never imported; each check the
  manifest lists for it counts as failed, 0 of the manifest's points, with
  feedback telling the student to restore it, and the run exits 1;
- a ``conftest.py`` or ``pytest.ini`` that differs or is missing, or one
  added in a folder on the way to a check file, fails every check under its
  folder the same way. An edited conftest.py has already run by then: the
  manifest keeps a self-check copy honest, it is no security boundary
  (instructors grade with their own copy of the checks);
- a test file that is not in the manifest (one the student added) is not
  collected, nor is a folder holding none of its check files: they add no
  points and no checks;
- a directory holding none of the manifest's check files is a usage error
  (the manifest was written for another folder).

Hashes read CRLF line endings as LF, so a checkout that converts line endings
(git's autocrlf on Windows) still matches.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pytest

from ..i18n import msg
from ..protocol import Status

SCHEMA = "pytest-autograd-grader-manifest/1"
DEFAULT_OUTPUT = "grade-manifest.json"
# files that change how the checks beside and below them are graded
SUPPORT_FILES = ("conftest.py", "pytest.ini")
REGENERATE = "python -m pytest_autograd_grader manifest CHECKS_DIR"


# -- the command ----------------------------------------------------------

def add_arguments(parser) -> None:
    parser.add_argument("checks", metavar="CHECKS_DIR", help="the folder of the course's check files")
    parser.add_argument("-o", "--output", metavar="FILE", default=DEFAULT_OUTPUT,
                        help=f"where to write the manifest (default: {DEFAULT_OUTPUT})")


def run(args) -> int:
    checks_dir = Path(args.checks)
    if not checks_dir.is_dir():
        print(msg("manifest.not_dir", path=args.checks), file=sys.stderr)
        return 2
    try:
        manifest = build_manifest(checks_dir)
    except ManifestError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    from ..reporters import ReportWriteError, write_json_atomic

    output = Path(args.output)
    try:
        write_json_atomic(output, manifest)
    except ReportWriteError as exc:
        print(msg("manifest.write_failed", path=args.output, reason=str(exc)), file=sys.stderr)
        return 2
    checks = sum(len(entry["checks"]) for entry in manifest["files"].values())
    print(msg("manifest.written", path=output, files=len(manifest["files"]), checks=checks))
    return 0


class ManifestError(Exception):
    """The checks could not be listed; the message says why, in words."""


def file_hash(path: Path) -> str:
    # CRLF as LF: a Windows checkout of the same files must match
    return hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).hexdigest()


def build_manifest(checks_dir: Path) -> dict:
    """The manifest of ``checks_dir``: raises ManifestError when pytest
    cannot list every check (a manifest missing checks would let a student
    delete them unnoticed)."""
    checks_dir = Path(os.path.abspath(checks_dir))
    files: dict[str, dict] = {}
    for item in collect_checks(checks_dir):
        entry = files.setdefault(item["file"], {"sha256": file_hash(checks_dir / item["file"]), "checks": []})
        entry["checks"].append({k: v for k, v in item.items() if k != "file"})
    for path in support_files(checks_dir):
        files.setdefault(relative(path, checks_dir), {"sha256": file_hash(path), "checks": []})
    return {"schema": SCHEMA, "files": dict(sorted(files.items()))}


def relative(path: Path, base: Path) -> str:
    return PurePosixPath(*path.relative_to(base).parts).as_posix()


def support_files(directory: Path) -> list[Path]:
    """Every conftest.py and pytest.ini under ``directory``."""
    found = []
    for root, dirs, names in os.walk(directory):
        # pytest never collects these; the sort keeps the walk reproducible
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        found += [Path(root) / name for name in sorted(names) if name in SUPPORT_FILES]
    return found


class _Collector:
    """The pytest plugin that records what collection found."""

    def __init__(self, checks_dir: Path):
        self.checks_dir = checks_dir
        self.items: list[dict] = []
        self.errors: list[tuple[str, str]] = []  # (node id, the error's text)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.errors.append((report.nodeid or ".", str(report.longrepr)))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from ..declarations import spec_of, title_of

        for item in session.items:
            if not Path(item.path).is_relative_to(self.checks_dir):
                continue  # not a check of this directory (a plugin's item)
            spec = spec_of(item)
            self.items.append({"file": relative(Path(item.path), self.checks_dir), "id": item.nodeid,
                               "concept": spec.concept, "points": spec.points, "hidden": spec.hidden,
                               "visibility": spec.visibility, "title": title_of(item)})


def collect_checks(checks_dir: Path) -> list[dict]:
    """The checks pytest collects in ``checks_dir`` (rootdir there, with its
    own pytest.ini or none), each as {file, id, concept, points, hidden,
    visibility, title}. Pytest's output is kept from the terminal and
    shown only when collection fails."""
    from ..declarations import collect_cause

    ini = checks_dir / "pytest.ini"
    collector = _Collector(checks_dir)
    # Nothing runs and nothing is shown, so the plugins that only report
    # are off: the terminal (other plugins' summaries import heavy modules,
    # hypothesis's ~3 s) and unraisableexception (its clean-up runs
    # gc.collect() five times, ~1 s over torch's heap).
    args = ["--collect-only", "-p", "no:terminal", "-p", "no:cacheprovider", "-p", "no:unraisableexception",
            "--rootdir", str(checks_dir),
            "-c", str(ini) if ini.is_file() else os.devnull, str(checks_dir)]
    output = io.StringIO()
    modules, path = dict(sys.modules), list(sys.path)
    addopts = os.environ.pop("PYTEST_ADDOPTS", None)  # e.g. a CI's --grade: listing is no grading run
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            code = pytest.main(args, plugins=[collector])
    finally:
        if addopts is not None:
            os.environ["PYTEST_ADDOPTS"] = addopts
        sys.path[:] = path
        # Forget the check modules just imported, so that a later collection
        # in this process (a test, an editor) reads the files again, and put
        # back a module of the caller's that one of them replaced under the
        # same name (the checks' conftest.py is imported as "conftest").
        for name in set(sys.modules) - set(modules):
            file = getattr(sys.modules[name], "__file__", None) or ""
            if os.path.abspath(file).startswith(str(checks_dir) + os.sep):
                del sys.modules[name]
        for name, module in modules.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module
    if collector.errors:
        raise ManifestError("\n".join(msg("manifest.collect_error", file=nodeid, cause=collect_cause(text))
                                      for nodeid, text in collector.errors))
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise ManifestError(msg("manifest.pytest_failed", path=checks_dir, code=int(code),
                                output=output.getvalue().strip()))
    if not collector.items:
        raise ManifestError(msg("manifest.no_checks", path=checks_dir))
    return collector.items


# -- grading with a manifest ----------------------------------------------

@dataclass
class _Failed:
    """A check file whose checks fail: its manifest entry and why."""

    path: Path  # where the check file should be
    nodeid_prefix: str  # its node id, as pytest would give it
    entry: dict
    feedback: str


@dataclass(eq=False)  # a plugin: pytest keeps plugins in sets
class ManifestGuard:
    """Compares the checks directories with the manifest once, keeps the
    check files that differ from being collected and, in the controller,
    fails their checks."""

    config: pytest.Config
    state: object  # state.GradeState
    manifest: dict
    roots: list[Path]
    known: set[Path] = field(default_factory=set)  # check files the manifest lists, under each root
    failed: dict[Path, _Failed] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for root in self.roots:
            self._compare(root)

    def _compare(self, root: Path) -> None:
        files = self.manifest["files"]
        here = Path(self.config.invocation_params.dir)

        def shown(name: str) -> str:
            # the path the student sees from where they ran pytest (and can restore with git)
            return os.path.relpath(root / name, here).replace(os.sep, "/")

        checks = [name for name in files if PurePosixPath(name).name not in SUPPORT_FILES]
        # A conftest.py or pytest.ini changes the checks in its folder and
        # below: the listed ones, and any on the way to a check file (one
        # the student added), must match.
        support = {name for name in files if PurePosixPath(name).name in SUPPORT_FILES}
        for name in checks:
            for folder in PurePosixPath(name).parents:
                support.update((folder / s).as_posix() for s in SUPPORT_FILES)
        broken: list[tuple[PurePosixPath, str]] = []  # (folder, feedback)
        for name in sorted(support):
            path = root / name
            if name not in files:
                if not path.is_file():
                    continue
                feedback = msg("manifest.extra", file=shown(name))
            elif not path.is_file():
                feedback = msg("manifest.missing", file=shown(name))
            elif file_hash(path) != files[name]["sha256"]:
                feedback = msg("manifest.edited", file=shown(name))
            else:
                continue
            broken.append((PurePosixPath(name).parent, feedback))
        for name in checks:
            path = root / name
            self.known.add(path)
            if not path.is_file():
                feedback = msg("manifest.missing", file=shown(name))
            elif file_hash(path) != files[name]["sha256"]:
                feedback = msg("manifest.edited", file=shown(name))
            else:
                feedback = next((f for folder, f in broken if PurePosixPath(name).is_relative_to(folder)), None)
            if feedback is not None:
                self.failed[path] = _Failed(path, self._nodeid(path), files[name], feedback)

    def _nodeid(self, path: Path) -> str:
        # what pytest's FSCollector does
        rootpath = self.config.rootpath
        try:
            return relative(path, rootpath)
        except ValueError:
            return os.path.relpath(path, rootpath).replace(os.sep, "/")

    def ignored(self, path: Path) -> bool:
        """Under a checks directory: a check file that differs from the
        manifest, a test file it does not list, or a folder that holds none
        of its check files (whose conftest.py pytest would load)."""
        path = Path(os.path.abspath(path))
        if not any(path.is_relative_to(root) for root in self.roots) or path in self.roots:
            return False
        if path.is_dir():
            return not any(known.is_relative_to(path) for known in self.known)
        if path.suffix != ".py" or path.name in ("conftest.py", "__init__.py"):
            return False
        return path in self.failed or path not in self.known

    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        return True if self.ignored(collection_path) else None

    @pytest.hookimpl(wrapper=True)
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector):
        # pytest asks pytest_ignore_collect nothing about a file named on the
        # command line: drop its collector before anything imports it
        collectors = yield
        return [] if self.ignored(file_path) else collectors

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from ..declarations import known_concepts
        from .manifest_checks import manifest_results

        gradebook = self.state.gradebook
        if self.state.is_worker or gradebook is None:
            return
        concepts = known_concepts(self.config)
        for failed in self.failed.values():
            for result in manifest_results(failed.entry, failed.nodeid_prefix, concepts, Status.FAILED,
                                           failed.feedback):
                gradebook.checks[result.id] = result

    @pytest.hookimpl(trylast=True)  # after the grading session's, which records the file as one broken check
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A listed check file that could not be loaded here: each of its
        checks an error worth 0 of its points, in place of the file."""
        from ..declarations import known_concepts
        from .manifest_checks import manifest_results

        gradebook = self.state.gradebook
        if not report.failed or self.state.is_worker or gradebook is None:
            return
        entry = next((self.manifest["files"][relative(path, root)] for root in self.roots for path in self.known
                      if path.is_relative_to(root) and self._nodeid(path) == report.nodeid), None)
        if entry is None:
            return
        broken = gradebook.checks.pop(report.nodeid, None)
        what = broken.feedback if broken else msg("collect.broken", path=report.nodeid, cause="?")
        # pytest's traceback stays in the log: a hidden check's feedback reaches students once published
        for result in manifest_results(entry, report.nodeid, known_concepts(self.config), Status.ERROR, what):
            gradebook.checks[result.id] = result

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        # Runs after the grading session's own (tryfirst) hook, which applies
        # --grade-fail-under; without it, failed checks fail the run.
        if self.state.is_worker or not self.failed:
            return
        if session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED or (
                session.exitstatus == pytest.ExitCode.OK and self.state.settings.fail_under is None):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        if self.state.is_worker:
            return
        for feedback in dict.fromkeys(f.feedback for f in self.failed.values()):
            terminalreporter.write_line(feedback, red=True)


def read_manifest(path: Path) -> dict:
    """The manifest at ``path``; pytest.UsageError saying how to write it
    again when it cannot be read or is not one."""

    def bad(reason: str) -> pytest.UsageError:
        return pytest.UsageError(msg("manifest.bad", path=path, reason=reason, command=REGENERATE))

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise bad(msg("manifest.not_json", error=exc)) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else None
        raise bad(msg("manifest.wrong_schema", found=found, schema=SCHEMA))
    files = data.get("files")
    if not isinstance(files, dict):
        raise bad(msg("manifest.bad_entry", file="files"))
    for name, entry in files.items():
        if not _valid_entry(name, entry):
            raise bad(msg("manifest.bad_entry", file=name))
    return data


def _valid_entry(name: object, entry: object) -> bool:
    if not isinstance(name, str) or not name or not isinstance(entry, dict):
        return False
    parts = PurePosixPath(name).parts
    if name.startswith("/") or "\\" in name or ".." in parts or "." in parts:
        return False  # a path outside the checks directory
    sha = entry.get("sha256")
    if not isinstance(sha, str) or len(sha) != 64 or not isinstance(entry.get("checks"), list):
        return False
    for check in entry["checks"]:
        if not (isinstance(check, dict) and isinstance(check.get("id"), str)
                and check["id"].startswith(name + "::") and isinstance(check.get("concept"), str)
                and isinstance(check.get("points"), (int, float)) and not isinstance(check.get("points"), bool)
                and isinstance(check.get("hidden", False), bool)):
            return False
    return True


def checks_roots(config: pytest.Config) -> list[Path]:
    """The checks directories named on the command line (node ids and files
    aside), else the rootdir."""
    base = Path(config.invocation_params.dir)
    roots = []
    for arg in config.args:
        path = Path(os.path.abspath(base / str(arg).split("::")[0]))
        if path.is_dir() and path not in roots:
            roots.append(path)
    return roots or [Path(os.path.abspath(config.rootpath))]


def register_guard(config: pytest.Config, state) -> None:
    """Grade with the manifest at ``state.settings.manifest_path``."""
    manifest = read_manifest(state.settings.manifest_path)
    checks = [name for name in manifest["files"] if PurePosixPath(name).name not in SUPPORT_FILES]
    # A directory holding none of the check files is not the one the
    # manifest was written for: failing every check as "missing" there
    # would send the student hunting for files that are in place.
    candidates = checks_roots(config)
    roots = [root for root in candidates if any((root / name).is_file() for name in checks)]
    if checks and not roots:
        raise pytest.UsageError(msg("manifest.no_match", path=state.settings.manifest_path, example=checks[0],
                                    dirs=", ".join(str(root) for root in candidates)))
    guard = ManifestGuard(config, state, manifest, roots)
    config.pluginmanager.register(guard, "grade-manifest")

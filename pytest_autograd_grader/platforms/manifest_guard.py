"""The guard that grades with a manifest (manifest.py writes them).

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
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import pytest

from ..i18n import msg
from ..protocol import Status
from .manifest import REGENERATE, SCHEMA, SUPPORT_FILES, file_hash, relative

if TYPE_CHECKING:
    from ..session_state import GradeState


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
    state: GradeState
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
        broken = _broken_support(root, files, checks, shown)
        for name in checks:
            path = root / name
            self.known.add(path)
            feedback = _file_problem(root, name, files[name], shown) or next(
                (f for folder, f in broken if PurePosixPath(name).is_relative_to(folder)), None
            )
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
    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> Generator[None, list[pytest.Collector], list[pytest.Collector]]:
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
            for result in manifest_results(
                failed.entry, failed.nodeid_prefix, concepts, Status.FAILED, failed.feedback
            ):
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
        entry = next(
            (
                self.manifest["files"][relative(path, root)]
                for root in self.roots
                for path in self.known
                if path.is_relative_to(root) and self._nodeid(path) == report.nodeid
            ),
            None,
        )
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
            session.exitstatus == pytest.ExitCode.OK and self.state.settings.fail_under is None
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(
        self, terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
    ) -> None:
        if self.state.is_worker:
            return
        for feedback in dict.fromkeys(f.feedback for f in self.failed.values()):
            terminalreporter.write_line(feedback, red=True)


def _file_problem(root: Path, name: str, entry: dict[str, Any] | None, shown: Callable[[str], str]) -> str | None:
    """Why the file ``name`` under ``root`` fails its manifest ``entry``
    (None: the manifest lacks it, and it must not be there): missing,
    edited, or added; None when it matches."""
    path = root / name
    if entry is None:
        return msg("manifest.extra", file=shown(name)) if path.is_file() else None
    if not path.is_file():
        return msg("manifest.missing", file=shown(name))
    if file_hash(path) != entry["sha256"]:
        return msg("manifest.edited", file=shown(name))
    return None


def _broken_support(
    root: Path, files: dict[str, Any], checks: list[str], shown: Callable[[str], str]
) -> list[tuple[PurePosixPath, str]]:
    """(folder, feedback) of each conftest.py or pytest.ini that does not
    match: it changes the checks in its folder and below, so the listed
    ones, and any on the way to a check file (one the student added), must."""
    support = {name for name in files if PurePosixPath(name).name in SUPPORT_FILES}
    for name in checks:
        for folder in PurePosixPath(name).parents:
            support.update((folder / s).as_posix() for s in SUPPORT_FILES)
    broken = []
    for name in sorted(support):
        feedback = _file_problem(root, name, files.get(name), shown)
        if feedback is not None:
            broken.append((PurePosixPath(name).parent, feedback))
    return broken


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
        if not (
            isinstance(check, dict)
            and isinstance(check.get("id"), str)
            and check["id"].startswith(name + "::")
            and isinstance(check.get("concept"), str)
            and isinstance(check.get("points"), (int, float))
            and not isinstance(check.get("points"), bool)
            and isinstance(check.get("hidden", False), bool)
        ):
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


def register_guard(config: pytest.Config, state: GradeState) -> None:
    """Grade with the manifest at ``state.settings.manifest_path``."""
    manifest_path = state.settings.manifest_path
    if manifest_path is None:  # no --grade-manifest: nothing to guard
        return
    manifest = read_manifest(manifest_path)
    checks = [name for name in manifest["files"] if PurePosixPath(name).name not in SUPPORT_FILES]
    # A directory holding none of the check files is not the one the
    # manifest was written for: failing every check as "missing" there
    # would send the student hunting for files that are in place.
    candidates = checks_roots(config)
    roots = [root for root in candidates if any((root / name).is_file() for name in checks)]
    if checks and not roots:
        raise pytest.UsageError(
            msg(
                "manifest.no_match",
                path=manifest_path,
                example=checks[0],
                dirs=", ".join(str(root) for root in candidates),
            )
        )
    guard = ManifestGuard(config, state, manifest, roots)
    config.pluginmanager.register(guard, "grade-manifest")

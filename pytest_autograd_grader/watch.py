"""``autograd-grader watch [EXERCISES]``: re-grade on every save.

One process keeps pytest, torch and the sandbox's zygote warm; watchdog
(the operating system's file events, inotify on Linux) says which files
changed, and only the topics they belong to are graded again, each time a
complete ``pytest --grade`` session run in this process: the same checks,
feedback and table a lone run gives, with the next step last. Student code
still runs in the sandbox, so a module that hangs or crashes costs only
that re-grade.
"""

from __future__ import annotations

import argparse
import gc
import queue
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .i18n import msg

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

QUIET_S = 0.05  # a save is over when no file event came for this long (editors write in steps)
INTERRUPTED = 2  # pytest's exit code after Ctrl-C
SAVES = frozenset(
    {"created", "modified", "moved", "deleted", "closed"}
)  # watchdog's event types ("closed": after a write)
WATCHED_SUFFIXES = (".py", ".ipynb")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "exercises",
        nargs="?",
        default="exercises",
        help="the folder of your exercises and their checks (test_*.py), or some of its topic "
        "files (leaf.py or test_leaf.py) to watch only those (default: exercises)",
    )
    parser.add_argument(
        "--submission",
        metavar="DIR",
        help="where your modules are when they are not beside the checks (--grade-submission)",
    )
    parser.add_argument(
        "pytest_args", nargs="*", help="after --: more options for each pytest run, e.g. -- --grade-lang zh"
    )


def run(args: argparse.Namespace) -> int:
    try:
        import watchdog  # noqa: F401  (the watch extra: a one-off self-check needs none)
    except ImportError:
        print(f"autograd-grader watch: {msg('watch.needs_watchdog')}", file=sys.stderr)
        return 2
    try:
        folder, topics = _topics(Path(args.exercises))
        submission = Path(args.submission) if args.submission else None
        if submission is not None and not submission.is_dir():
            raise ValueError(msg("watch.no_submission", path=submission))
    except ValueError as exc:
        print(f"autograd-grader watch: {exc}", file=sys.stderr)
        return 2
    extra = [a for a in args.pytest_args if a != "--"]
    if submission is not None:
        extra.append(f"--grade-submission={submission}")
    return Watch(folder, topics, submission or folder, extra).loop()


def _topics(path: Path) -> tuple[Path, dict[str, Path]]:
    """The folder of checks and the topics to watch there: {topic: its checks file}."""
    if path.is_file() or (path.suffix in WATCHED_SUFFIXES and not path.exists()):
        folder = path.parent
        topic = path.stem.removeprefix("test_")
        checks = folder / f"test_{topic}.py"
        if path.suffix not in WATCHED_SUFFIXES or not checks.is_file():
            raise ValueError(msg("watch.not_a_topic", path=path, folder=folder))
        return folder, {topic: checks}
    if not path.is_dir():
        raise ValueError(msg("watch.no_folder", path=path))
    topics = {p.stem.removeprefix("test_"): p for p in sorted(path.glob("test_*.py"))}
    if not topics:
        raise ValueError(msg("watch.no_checks", path=path))
    return path, topics


def _use_language(language: str | None) -> None:
    """The feedback's language, where --grade-lang names one the grader speaks."""
    if language in ("en", "zh"):
        from . import i18n

        i18n.use_language(language)


class Watch:
    def __init__(self, folder: Path, topics: dict[str, Path], submission: Path, extra: list[str]):
        self.folder = folder.resolve()
        self.topics = topics
        self.submission = submission.resolve()
        self.extra = extra
        self.events: queue.Queue[str] = queue.Queue()
        self.results: dict[str, dict] = {}  # check id -> its latest result, whichever run it came from
        # Set by every Ctrl-C, and read after each re-grade: the KeyboardInterrupt
        # it raises can be swallowed on its way out of a session (code that
        # catches BaseException, a finalizer), and the watch must stop all the same.
        self.interrupted = threading.Event()
        self.concepts: dict[str, str] = {}  # concept id -> title, in the order first seen

    def loop(self) -> int:
        from .in_process import warm_sandbox
        from .sandbox import stop_all

        _use_language(_option(self.extra, "--grade-lang"))
        observer = self._observer()
        previous = signal.signal(signal.SIGINT, self._on_ctrl_c)
        try:
            observer.start()
            print(msg("watch.starting", folder=self.folder), flush=True)
            warm_sandbox(_option(self.extra, "--grade-isolation"))
            return self._grade_every_save()
        except KeyboardInterrupt:
            print("\n" + msg("watch.stopped"), flush=True)
            return 0
        finally:
            signal.signal(signal.SIGINT, previous)
            observer.stop()
            observer.join(timeout=5)
            stop_all()

    def _observer(self) -> BaseObserver:
        """watchdog's observer of the checks' folder and the submission,
        not started yet: every save's files go to ``self.events``."""
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        events = self.events

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                # what a save does; not the reads of a grading run (opened, closed without writing)
                if event.event_type in SAVES:
                    for path in (event.src_path, getattr(event, "dest_path", "")):
                        if path:
                            events.put(str(path))

        observer = Observer()
        for folder in {self.folder, self.submission}:
            observer.schedule(Handler(), str(folder), recursive=True)
        return observer

    def _grade_every_save(self) -> int:
        """Every topic graded, then again those each save touches, until
        Ctrl-C (KeyboardInterrupt); pytest's own error's exit code."""
        code = self.grade(list(self.topics.values()), msg("watch.first"))
        if code in (3, 4):  # pytest's internal and usage errors: its message is above
            return code
        self._stop_if_interrupted(code)
        print(msg("watch.waiting"), flush=True)
        while True:
            changed = self.wait()
            if changed is None:
                raise KeyboardInterrupt
            files = self.checks_for(changed)
            if files:
                names = ", ".join(sorted({Path(p).name for p in changed}))
                code = self.grade(files, msg("watch.changed", files=names))
                self._stop_if_interrupted(code)
                print(msg("watch.waiting"), flush=True)

    def _stop_if_interrupted(self, code: int) -> None:
        if code == INTERRUPTED or self.interrupted.is_set():
            raise KeyboardInterrupt  # Ctrl-C while grading: pytest caught it (or lost it), we stop

    def wait(self) -> set[str] | None:
        """Tidy up while the student edits, then the files their next save
        touched; None after Ctrl-C. Ctrl-C only sets a flag here: raised as
        KeyboardInterrupt it could land in a finalizer or a weakref callback
        (a garbage collection, the queue's locks) and be lost."""
        previous = signal.signal(signal.SIGINT, lambda *_: self.interrupted.set())
        try:
            _settle()
            return self.next_save()
        finally:
            signal.signal(signal.SIGINT, previous)

    def _on_ctrl_c(self, signum, frame) -> None:
        """Ctrl-C while grading: remembered, then raised as usual, so that
        pytest stops the session it is running."""
        self.interrupted.set()
        raise KeyboardInterrupt

    def next_save(self) -> set[str] | None:
        """The files one save touched: the first event, then every event
        until QUIET_S passes without one; None after Ctrl-C."""
        while True:
            if self.interrupted.is_set():
                return None
            try:
                changed = {self.events.get(timeout=0.2)}
                break
            except queue.Empty:
                continue
        while True:
            try:
                changed.add(self.events.get(timeout=QUIET_S))
            except queue.Empty:
                return None if self.interrupted.is_set() else {p for p in changed if _relevant(Path(p))}

    def checks_for(self, changed: set[str]) -> list[Path]:
        """The checks files to run again: a topic's own (leaf.py, leaf.ipynb
        or test_leaf.py changed: test_leaf.py); any other Python file (a
        conftest, a helper module): every topic watched."""
        files: dict[str, Path] = {}
        for path in map(Path, changed):
            topic = path.stem.removeprefix("test_")
            if topic in self.topics:
                files[topic] = self.topics[topic]
            elif (self.folder / f"test_{topic}.py").is_file():
                continue  # a topic of the folder not watched (watch was given some topics only)
            elif path.suffix == ".py":
                return list(self.topics.values())
        return list(files.values())

    def grade(self, files: list[Path], why: str) -> int:
        """One pytest session over ``files`` (the feedback of their failed
        checks as pytest prints it), then the table of every topic watched,
        the others' rows from their latest runs, and the next step."""
        import tempfile

        from .in_process import run_session

        print(why, flush=True)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="grade-watch-") as tmp:
            report = Path(tmp) / "report.json"
            # the session's own table would cover these files only: the merged one is printed below
            # --rootdir: collection walks only this folder, not everything beside it
            args = [
                "--grade",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:grade-table-last",
                "-q",
                "--rootdir",
                str(self.folder),
                "--grade-json",
                str(report),
                *self.extra,
                *map(str, files),
            ]
            code = run_session(args, self.folder)
            self.merge(report, files)
        for line in self.summary():
            print(line, flush=True)
        print(msg("watch.took", seconds=time.monotonic() - started), flush=True)
        return code

    def merge(self, report: Path, files: list[Path]) -> None:
        """Replace the results of ``files``' checks with this run's."""
        import json

        try:
            data = json.loads(report.read_text())
        except (OSError, ValueError):
            return  # a run that wrote nothing (a usage error): pytest said why
        stems = {f.stem for f in files}
        self.results = {key: check for key, check in self.results.items() if Path(key.split("::")[0]).stem not in stems}
        for concept in data.get("concepts", ()):
            self.concepts.setdefault(concept["id"], concept["title"])
        for check in data.get("checks", ()):
            self.results[check["id"]] = check

    def summary(self) -> list[str]:
        from .concepts import Concept
        from .reporters import next_step, table_lines
        from .reporters.terminal import separator
        from .scoring import CheckResult, Gradebook

        # in the order the runs' reports gave them: the course's own (pytest_grade_concepts)
        gradebook = Gradebook(
            seed=0, devices=[], torch="", concepts={c: Concept(c, title) for c, title in self.concepts.items()}
        )
        for key, check in self.results.items():
            gradebook.checks[key] = CheckResult.from_dict(check)
        return [separator(msg("summary.title")), *table_lines(gradebook), next_step(gradebook)]


def _settle() -> None:
    """While the student edits: collect what the last session left, and
    keep what survives (torch and the modules it loaded lazily, pytest, the
    plugin: alive as long as the process) out of later collections. pytest
    collects five times per session; over torch's heap that took a quarter
    of a second of every re-grade."""
    gc.collect()
    gc.freeze()


def _relevant(path: Path) -> bool:
    """A file a student saves: Python or a notebook, not a cache, a hidden
    file, an editor's backup or swap file."""
    return path.suffix in WATCHED_SUFFIXES and not path.name.startswith(".") and "__pycache__" not in path.parts


def _option(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
        if arg == name and i + 1 < len(args):
            return args[i + 1]
    return None

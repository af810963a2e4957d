"""``autograd-grader new-topic NAME --concept ID``: start a topic of a course
laid out like templates/course (exercises/, solutions/, mistakes/).

It writes the stub, the solution, a checks file with one worked check, one
planted mistake in ``mistakes/NAME/`` and the concept's registration in
``exercises/conftest.py``, so that the topic grades (and audits) as written.
Every problem with what was asked is found before anything is written;
an author's file is never overwritten. Exit codes: 0 written; 1 written,
but the registration must be pasted into a conftest that could not be
edited safely; 2 refused (nothing written).
"""

from __future__ import annotations

import argparse
import importlib.machinery
import keyword
import os
import site
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..concepts import is_concept_id
from ..i18n import LANGUAGES, msg, saved_language, use_language
from ..i18n.en import EN
from . import topic_files
from .registration import Registration, registration
from .topic_files import Topic

PROGRAM = "autograd-grader new-topic"
# what a topic's module must never stand in for: the grader's own imports
NEVER_SHADOW = frozenset({"conftest", "torch", "numpy", "pytest", "_pytest", "pluggy", "pytest_autograd_grader"})
MAX_TITLE = 120


class Refusal(ValueError):
    """What was asked cannot be done as asked; says what to do instead."""


@dataclass(frozen=True)
class Plan:
    topic: Topic
    files: dict[Path, str]  # the new files and their text
    conftest: Path
    registration: Registration


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name",
        metavar="NAME",
        help="the topic's module name, e.g. clipping: exercises/clipping.py, its checks "
        "exercises/test_clipping.py, its solution and mistakes/clipping/",
    )
    parser.add_argument(
        "--concept",
        metavar="ID",
        required=True,
        help="the concept its checks count towards (lower-case letters, digits, _); registered "
        "in exercises/conftest.py unless the course has it already",
    )
    parser.add_argument(
        "--course",
        metavar="DIR",
        default=".",
        help="the course's folder, which holds exercises/, solutions/ and mistakes/ (default: the current folder)",
    )
    parser.add_argument(
        "--title", metavar="TEXT", help="the concept's title in reports (default: made from the concept id)"
    )
    parser.add_argument(
        "--lang",
        default="en",
        type=str.lower,
        choices=LANGUAGES,
        help="the language this command speaks in (the files it writes are in English)",
    )


def run(args: argparse.Namespace) -> int:
    restore = saved_language()
    use_language(args.lang)
    try:
        return _run(args)
    finally:
        restore()


def _run(args: argparse.Namespace) -> int:
    try:
        plan = plan_topic(args.name, args.concept, Path(args.course), args.title)
    except Refusal as exc:
        print(f"{PROGRAM}: {exc}", file=sys.stderr)
        return 2
    try:
        written = write(plan)
    except OSError as exc:
        print(f"{PROGRAM}: {msg('new_topic.write_failed', reason=exc)}", file=sys.stderr)
        return 2
    return tell(plan, written)


def plan_topic(name: str, concept: str, course: Path, title: str | None) -> Plan:
    """Everything ``new-topic`` would write; ``Refusal`` for any problem."""
    if not course.is_dir():
        raise Refusal(msg("new_topic.no_course", path=course))
    check_name(name)
    if not is_concept_id(concept):
        raise Refusal(msg("new_topic.bad_concept", concept=concept))
    topic = Topic(name, concept, check_title(title, concept))
    taken = [key for key in (topic.label, topic.diagnosis, f"concept.{concept}") if key in EN]
    if taken:
        raise Refusal(msg("new_topic.grader_id", ids=", ".join(taken)))
    exercises, solutions, mistakes = course / "exercises", course / "solutions", course / "mistakes"
    files = {
        exercises / f"{name}.py": topic_files.stub(topic),
        exercises / f"test_{name}.py": topic_files.checks(topic),
        solutions / f"{name}.py": topic_files.solution(topic),
        mistakes / name / f"{topic_files.MISTAKE}.py": topic_files.mistake(topic),
    }
    existing = _existing(course, name)
    if existing:
        raise Refusal(msg("new_topic.exists", paths="\n".join(f"  {p}" for p in existing)))
    conftest = exercises / "conftest.py"
    return Plan(topic, files, conftest, registration(conftest, topic))


def check_name(name: str) -> None:
    if not (name.isascii() and name.isidentifier()):
        raise Refusal(msg("new_topic.bad_name", name=name))
    if keyword.iskeyword(name):
        raise Refusal(msg("new_topic.keyword", name=name))
    if name.startswith("test_") or name.endswith("_test"):
        raise Refusal(msg("new_topic.test_name", name=name))
    if _shadows(name):
        raise Refusal(msg("new_topic.shadows", name=name))


def _shadows(name: str) -> bool:
    """Whether a module ``name`` beside the checks would hide a module of
    Python's, of the grader's or of a package installed here."""
    if name in NEVER_SHADOW or name in sys.stdlib_module_names or name in sys.builtin_module_names:
        return True
    places = [*site.getsitepackages(), site.getusersitepackages()]
    return importlib.machinery.PathFinder.find_spec(name, [p for p in places if os.path.isdir(p)]) is not None


def check_title(title: str | None, concept: str) -> str:
    if title is None:
        return concept.replace("_", " ").capitalize()
    title = title.strip()
    if not title or len(title) > MAX_TITLE or not title.isprintable():
        raise Refusal(msg("new_topic.bad_title", most=MAX_TITLE))
    return title


def _existing(course: Path, name: str) -> list[Path]:
    """The paths the topic would take that are there already (a file, a
    folder, a notebook or a link by that name), and folders of the layout
    that are not folders."""
    found = [
        course / folder
        for folder in ("exercises", "solutions", "mistakes")
        if os.path.lexists(course / folder) and not (course / folder).is_dir()
    ]
    for folder in ("exercises", "solutions"):
        found += [course / folder / f"{name}{suffix}" for suffix in (".py", ".ipynb", "")]
    found += [course / "exercises" / f"test_{name}.py", course / "mistakes" / name]
    return [p for p in dict.fromkeys(found) if os.path.lexists(p)]


def write(plan: Plan) -> list[Path]:
    """Write the plan's files, never over an existing one; on an error,
    remove what this run wrote and raise."""
    created: list[Path] = []
    try:
        for path, text in plan.files.items():
            _make_folders(path.parent, created)
            with open(path, "x", encoding="utf-8") as file:
                created.append(path)
                file.write(text)
        if plan.registration.text:
            _write_conftest(plan, created)
    except OSError:
        _undo(created)
        raise
    return [p for p in created if p.is_file()]


def _make_folders(folder: Path, created: list[Path]) -> None:
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    for path in reversed(missing):
        path.mkdir()
        created.append(path)


def _write_conftest(plan: Plan, created: list[Path]) -> None:
    conftest, text = plan.conftest, plan.registration.text
    if not plan.registration.exists:
        with open(conftest, "x", encoding="utf-8") as file:
            created.append(conftest)
            file.write(text)
        return
    # a whole new file renamed over the old one: never a half-written conftest
    handle, temporary = tempfile.mkstemp(dir=conftest.parent, prefix=".conftest-", suffix=".py")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, conftest.stat().st_mode & 0o777)
        os.replace(temporary, conftest)
    except OSError:
        Path(temporary).unlink(missing_ok=True)
        raise


def _undo(created: list[Path]) -> None:
    for path in reversed(created):
        try:
            path.rmdir() if path.is_dir() else path.unlink()
        except OSError:
            pass


def tell(plan: Plan, written: list[Path]) -> int:
    """Say what was written and what to do next; 1 when the author must
    paste the registration by hand."""
    print(msg("new_topic.written", name=plan.topic.name, paths="\n".join(f"  {p}" for p in written)))
    done = plan.registration
    if not done.text:
        print(msg(done.problem, path=plan.conftest), file=sys.stderr)
        print(msg("new_topic.paste", path=plan.conftest), file=sys.stderr)
        print(done.block, file=sys.stderr)
    elif done.exists:
        print(msg("new_topic.conftest_added", path=plan.conftest, name=plan.topic.name))
    exercises = plan.conftest.parent
    print(msg("new_topic.next", exercises=exercises, solutions=exercises.parent / "solutions", name=plan.topic.name))
    return 0 if done.text else 1

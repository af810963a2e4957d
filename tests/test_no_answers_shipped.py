"""The reference solutions (solutions/) and the planted mistakes (mistakes/,
near-complete solutions) never reach a student: every layout that ships the
shipped course's files, built from the repository's exercises/, holds none of
their files and none of the functions they answer with, under any name."""

import ast
import io
import json
import zipfile

import pytest
from conftest import EXERCISES, REPO, SOLUTIONS
from planted_mistakes import MISTAKES_DIR, changed_source

ARCHIVES = (".whl", ".zip")


def _definitions(source: str) -> dict[str, str]:
    tree = ast.parse(source)
    return {
        node.name: ast.get_source_segment(source, node)
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef))
    }


def answers() -> set[str]:
    """The source of every function or class a solution fills in (it differs
    from the stub's) and of every definition a planted mistake changes."""
    found = set()
    for solution in SOLUTIONS.glob("*.py"):
        stub = EXERCISES / solution.name
        given = set(_definitions(stub.read_text()).values()) if stub.is_file() else set()
        found |= set(_definitions(solution.read_text()).values()) - given
    for path in MISTAKES_DIR.glob("*/*.py"):
        found |= set(_definitions(changed_source(path.parent.name, path.read_text())).values())
    return found


ANSWERS = answers()


def flattened(files: dict[str, bytes]) -> dict[str, bytes]:
    """``files`` with every wheel or zip among them opened, recursively."""
    flat = {}
    for name, data in files.items():
        flat[name] = data
        if name.endswith(ARCHIVES):
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                inner = {member: archive.read(member) for member in archive.namelist()}
            flat.update({f"{name}!{member}": data for member, data in flattened(inner).items()})
    return flat


def leaks(files: dict[str, bytes]) -> list[str]:
    """The shipped files (archives opened) that are, or hold, an answer."""
    found = []
    for name, data in flattened(files).items():
        parts = name.replace("!", "/").split("/")
        text = data.decode("utf-8", errors="replace")
        if "mistakes" in parts or "solutions" in parts or any(answer in text for answer in ANSWERS):
            found.append(name)
    return found


def test_the_answers_are_what_a_leak_would_show():
    assert len(ANSWERS) > 100
    assert leaks({"exercises/leaf.py": (SOLUTIONS / "leaf.py").read_bytes()})
    mistake = next(MISTAKES_DIR.glob("leaf/*.py"))
    assert leaks({"renamed.py": mistake.read_bytes()})
    assert leaks({"grader.whl": _zip({"pytest_autograd_grader/curriculum/x.py": mistake.read_bytes()})})
    assert leaks({"mistakes/leaf/notes.txt": b"nothing"})


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_the_checks_a_set_up_copies_hold_no_answer():
    from pytest_autograd_grader.platforms.course_files import read_checks

    copied = read_checks(EXERCISES, "bundle")
    assert "test_leaf.py" in copied.files
    assert leaks(copied.files) == []


def test_a_gradescope_bundle_holds_no_answer():
    from pytest_autograd_grader.platforms.gradescope_bundle import build_bundle

    bundle = build_bundle(EXERCISES)
    files = {name: data for name, (data, _mode) in bundle.files.items()}
    assert "checks/test_leaf.py" in files
    assert leaks(files) == []


def test_github_classroom_repositories_hold_no_answer():
    from pytest_autograd_grader.platforms.github_classroom import build_course

    course = build_course(EXERCISES)
    for repository in (course.checks, course.template):
        files = {name: data for name, (data, _mode) in repository.items()}
        assert any(name.endswith(".whl") for name in files)
        assert leaks(files) == []


def test_the_wheel_the_set_ups_carry_holds_no_answer():
    from pytest_autograd_grader.platforms.wheel import grader_wheel

    wheel = grader_wheel()
    names = zipfile.ZipFile(io.BytesIO(wheel.data)).namelist()
    assert "pytest_autograd_grader/curriculum/leaf.py" in names
    assert leaks({wheel.name: wheel.data}) == []


def test_exercise_notebooks_hold_no_answer():
    pytest.importorskip("nbformat")
    from pytest_autograd_grader.handout_notebooks import notebook_of, topics_of

    topics = topics_of(EXERCISES)
    assert "leaf" in topics
    for topic in topics:
        notebook = notebook_of((EXERCISES / f"{topic}.py").read_text(), topic)
        cells = "\n\n".join(cell.source for cell in notebook.cells)
        assert leaks({f"{topic}.ipynb": cells.encode(), f"{topic}.json": json.dumps(notebook).encode()}) == []


def test_the_course_folders_beside_the_package_are_not_package_data():
    # the package's own data is curriculum/ (a link to exercises/) only;
    # tests/test_packaging.py builds the wheel from a checkout with mistakes/
    assert (REPO / "pytest_autograd_grader" / "curriculum").resolve() == EXERCISES.resolve()
    assert not (REPO / "mistakes" / "__init__.py").exists() and not (SOLUTIONS / "__init__.py").exists()

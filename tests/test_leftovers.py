"""The folders of grading runs that were killed: the next run removes them,
and nothing else."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_autograd_grader.sandbox import leftovers

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="owners are read from Linux's /proc")


def _ended_process() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _folder(parent: Path, name: str, owner: dict | None) -> Path:
    folder = parent / name
    (folder / "stage" / "1").mkdir(parents=True)
    (folder / "stage" / "1" / "leaf.py").write_text("x = 1\n")
    if owner is not None:
        (folder / leftovers.OWNER).write_text(json.dumps(owner))
    return folder


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(leftovers, "_swept", set())


def test_only_folders_whose_owner_ended_are_removed(tmp_path, fresh):
    me = leftovers._me()
    dead = {**me, "pid": _ended_process()}
    killed = _folder(tmp_path, "grade-sandbox-killed", dead)
    worker = _folder(tmp_path, "grade-class-worker-killed", dead)
    reused = _folder(tmp_path, "grade-sandbox-reused", {**me, "start": "1"})  # our pid, another process's start
    rebooted = _folder(tmp_path, "grade-sandbox-rebooted", {**me, "boot": "another boot"})
    alive = _folder(tmp_path, "grade-sandbox-alive", me)
    unowned = _folder(tmp_path, "grade-sandbox-unowned", None)
    elsewhere = _folder(tmp_path, "grade-sandbox-elsewhere", {**dead, "pidns": "pid:[1]"})
    garbled = _folder(tmp_path, "grade-sandbox-garbled", None)
    (garbled / leftovers.OWNER).write_text("{not json")
    other = _folder(tmp_path, "someone-else-killed", dead)
    (tmp_path / "grade-sandbox-link").symlink_to(killed)

    removed = leftovers.sweep(tmp_path)

    assert sorted(p.name for p in removed) == sorted(p.name for p in (killed, worker, reused, rebooted))
    for folder in (killed, worker, reused, rebooted):
        assert not folder.exists()
    for folder in (alive, unowned, elsewhere, garbled, other):
        assert (folder / "stage" / "1" / "leaf.py").is_file()
    assert (tmp_path / "grade-sandbox-link").is_symlink()
    assert leftovers.sweep(tmp_path) == []  # once per process and folder


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder of another uid needs root")
def test_another_users_folder_is_left_alone(tmp_path, fresh):
    folder = _folder(tmp_path, "grade-sandbox-theirs", {**leftovers._me(), "pid": _ended_process()})
    os.chown(folder, 65534, 65534)
    assert leftovers.sweep(tmp_path) == []
    assert folder.is_dir()


CHECKS = """
import pytest

pytestmark = pytest.mark.grade(concept="leaf")


@pytest.mark.grade(points=1)
def test_answer(submission, autograd):
    autograd.assert_equal(submission("leaf").answer(), 42, "answer()")
"""


def test_a_killed_run_leaves_its_folder_and_the_next_run_removes_it(tmp_path):
    """A lone run killed with SIGKILL while its student's code runs cannot
    remove its sandbox's folder; the next run in the same temporary
    directory does, and leaves nothing of its own."""
    checks, student, tmp = tmp_path / "checks", tmp_path / "student", tmp_path / "tmp"
    for folder in (checks, student, tmp):
        folder.mkdir()
    (checks / "test_leaf.py").write_text(CHECKS)
    (student / "leaf.py").write_text(
        textwrap.dedent("""
        import time

        def answer():
            time.sleep(60)
            return 42
    """)
    )
    env = {**os.environ, "TMPDIR": str(tmp)}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "--grade",
        str(checks),
        f"--grade-submission={student}",
        "--grade-isolation=process",
        "--grade-timeout=120",
        "--rootdir",
        str(checks),
    ]
    killed = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        # the student's worker has started once the folder holds a staged copy of leaf.py
        while not list(tmp.glob("grade-sandbox-*/stage/*/leaf.py")):
            assert time.monotonic() < deadline and killed.poll() is None, "the run never reached the student's code"
            time.sleep(0.2)
        time.sleep(1.0)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
    left = [p for p in tmp.glob("grade-sandbox-*") if (p / leftovers.OWNER).is_file()]
    assert left, "the killed run removed its folders itself: nothing to test"

    (student / "leaf.py").write_text("def answer():\n    return 42\n")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    for _ in range(50):  # the killed run's zygote may still be ending
        if not any(p.exists() for p in left):
            break
        time.sleep(0.1)
    assert not any(p.exists() for p in left)
    assert not list(tmp.glob("grade-sandbox-*"))  # and the second run left nothing of its own

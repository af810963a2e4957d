"""`autograd-grader watch`: a warm re-grade on every save, the whole table
kept up to date, student code that hangs or crashes costing one re-grade,
Ctrl-C a clean exit, and bad input told in words."""

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import EXERCISES, SOLUTIONS

from pytest_autograd_grader.cli import main


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda tmp: tmp / "nowhere", "is not a folder; give the folder of your exercises"),
        (lambda tmp: tmp, "holds no checks (test_*.py files)"),
        (lambda tmp: (tmp / "notes.txt").write_text("x") and tmp / "notes.txt", "is not a topic"),
        (lambda tmp: (tmp / "leaf.py").write_text("x") and tmp / "leaf.py", "is not a topic"),
    ],
)
def test_bad_input_is_told_in_words(tmp_path, capsys, make, expected):
    assert main(["watch", str(make(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("autograd-grader watch: ") and expected in err and "Traceback" not in err


def test_a_missing_submission_folder_is_told(tmp_path, capsys):
    shutil.copy(EXERCISES / "test_leaf.py", tmp_path)
    assert main(["watch", str(tmp_path), "--submission", str(tmp_path / "gone")]) == 2
    assert "--submission" in capsys.readouterr().err


class Watching:
    """A watch process and the lines it prints."""

    def __init__(self, folder, *args):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pytest_autograd_grader", "watch", str(folder), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            env={**os.environ, "COLUMNS": "80"},
        )
        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=lambda: [self.lines.put(line) for line in self.process.stdout], daemon=True).start()

    def until(self, text: str, timeout: float = 120) -> list[str]:
        """The lines printed up to the first one holding ``text``."""
        out = []
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            out.append(line.rstrip("\n"))
            self.seen.append(out[-1])
            if text in line:
                return out

    def next_table(self) -> list[str]:
        """One re-grade's output, up to the line that says it is done."""
        return self.until("watch: graded in")


def test_a_ctrl_c_that_grading_code_swallows_still_stops_the_watch(tmp_path, monkeypatch, capsys):
    """A KeyboardInterrupt can be lost on its way out of a session (code
    that catches BaseException, a finalizer): the Ctrl-C must stop the
    watch all the same, not leave it waiting for the next save."""
    from pytest_autograd_grader import in_process, watch

    shutil.copy(EXERCISES / "test_leaf.py", tmp_path)
    monkeypatch.setattr(in_process, "warm_sandbox", lambda isolation: None)
    graded = []

    def grade(self, files, why):
        graded.append(why)
        if len(graded) == 1:
            self.events.put(str(tmp_path / "leaf.py"))  # the student saves once
            return 0
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
        except BaseException:
            pass  # what some code on the way out of a session does to it
        return 0

    monkeypatch.setattr(watch.Watch, "grade", grade)
    # without the fix the watch waits for the next save: a second Ctrl-C, later, ends this test
    rescue = threading.Timer(15, os.kill, (os.getpid(), signal.SIGINT))
    rescue.start()
    started = time.monotonic()
    try:
        code = watch.Watch(tmp_path, {"leaf": tmp_path / "test_leaf.py"}, tmp_path, []).loop()
    finally:
        rescue.cancel()
    assert time.monotonic() - started < 10
    assert code == 0 and len(graded) == 2
    assert "watch: stopped" in capsys.readouterr().out


def row(lines, start):
    return next(line for line in lines if line.startswith(start))


HANGS = "def tutorial_graph(x, w):\n    while True:\n        pass\n"
CRASHES = "import os\n\n\ndef tutorial_graph(x, w):\n    os._exit(3)\n"


def test_each_save_regrades_its_topic_and_the_whole_table_stays(tmp_path):
    folder = tmp_path / "exercises"
    folder.mkdir()
    for topic in ("leaf", "graph"):
        shutil.copy(EXERCISES / f"test_{topic}.py", folder)
        shutil.copy(EXERCISES / f"{topic}.py", folder)
    watch = Watching(folder, "--", "--grade-timeout", "2")
    try:
        first = watch.until("watch: waiting")
        assert "watch: grading every topic" in first
        assert row(first, "Leaf tensors").split()[3] == "0/9" and row(first, "Computational").split()[3] == "0/10"

        # the solution of one topic: only its checks run again, the other row stays
        shutil.copy(SOLUTIONS / "leaf.py", folder)
        regrade = watch.next_table()
        assert any("leaf.py changed: grading again" in line for line in regrade), regrade
        assert "3 passed" in "\n".join(regrade) and "graph" not in "\n".join(
            line for line in regrade if "passed in" in line or "failed in" in line
        )
        assert row(regrade, "Leaf tensors").split()[3] == "9/9"
        assert row(regrade, "Computational").split()[3] == "0/10"
        assert regrade[-2].startswith("next: graph.py:"), regrade[-3:]
        assert max(len(line) for line in regrade if "passed" in line and "%" in line) <= 80

        # a function that hangs, then one that kills its process: that re-grade only
        source = (SOLUTIONS / "leaf.py").read_text()
        for broken, status in ((HANGS, "did not finish within 2 s"), (CRASHES, "crashed")):
            watch.until("watch: waiting")
            (folder / "leaf.py").write_text(source.replace("def tutorial_graph(x, w):", broken + "\n\ndef _old(x, w):"))
            regrade = watch.next_table()
            assert status in "\n".join(regrade) or status.replace("crashed", "died") in "\n".join(regrade), regrade
            assert row(regrade, "Leaf tensors").split()[3] == "7/9"
        watch.until("watch: waiting")
        shutil.copy(SOLUTIONS / "leaf.py", folder)
        assert row(watch.next_table(), "Leaf tensors").split()[3] == "9/9"

        # a changed check is read afresh, not the copy imported before
        watch.until("watch: waiting")
        checks = (folder / "test_leaf.py").read_text()
        assert checks.count("@pytest.mark.grade(points=2,") == 1  # test_tutorial_graph's marker
        (folder / "test_leaf.py").write_text(
            checks.replace("@pytest.mark.grade(points=2,", "@pytest.mark.grade(points=5,")
        )
        assert row(watch.next_table(), "Leaf tensors").split()[3] == "12/12"

        # a file of no topic (a helper) grades every topic again
        watch.until("watch: waiting")
        (folder / "helpers.py").write_text("X = 1\n")
        regrade = watch.next_table()
        assert "helpers.py changed" in "\n".join(regrade) and row(regrade, "Computational").split()[3] == "0/10"
        watch.until("watch: waiting")
    finally:
        code = _ctrl_c(watch)
    assert code == 0
    _assert_stopped_and_gone(watch)


def _ctrl_c(watch):
    """Ctrl-C to the watch's terminal group; its exit code (fails the test,
    with the watch's last lines, when it does not stop within 30 s)."""
    os.killpg(watch.process.pid, signal.SIGINT)  # Ctrl-C reaches the terminal's whole group
    try:
        return watch.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        watch.process.kill()
        time.sleep(0.5)
        while not watch.lines.empty():
            watch.seen.append(watch.lines.get().rstrip("\n"))
        pytest.fail("the watch did not stop within 30 s of Ctrl-C; its last lines:\n" + "\n".join(watch.seen[-25:]))


def _assert_stopped_and_gone(watch):
    assert watch.until("watch: stopped", timeout=5)
    time.sleep(0.5)
    # nothing of the watch's left: no zygote, no worker
    alive = subprocess.run(["ps", "-o", "pid=", "-s", str(watch.process.pid)], capture_output=True, text=True).stdout
    assert alive.strip() == "", alive
    assert "Traceback" not in "\n".join(watch.seen)


def test_an_unknown_option_value_stops_with_pytests_word(tmp_path):
    shutil.copy(EXERCISES / "test_leaf.py", tmp_path)
    shutil.copy(EXERCISES / "leaf.py", tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_autograd_grader", "watch", str(tmp_path), "--", "--grade-lang", "xx"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 4
    assert "--grade-lang" in done.stderr + done.stdout and "Traceback" not in done.stderr


def test_a_save_regrades_the_topic_it_belongs_to(tmp_path):
    from pytest_autograd_grader.watch import Watch, _topics

    for topic in ("leaf", "graph"):
        shutil.copy(EXERCISES / f"test_{topic}.py", tmp_path)
        shutil.copy(EXERCISES / f"{topic}.py", tmp_path)
    folder, topics = _topics(tmp_path)
    watch = Watch(folder, topics, folder, [])
    names = lambda changed: sorted(p.name for p in watch.checks_for({str(tmp_path / c) for c in changed}))  # noqa: E731
    assert names(["leaf.py"]) == names(["test_leaf.py"]) == names(["leaf.ipynb"]) == ["test_leaf.py"]
    assert names(["leaf.py", "graph.py"]) == ["test_graph.py", "test_leaf.py"]
    assert names(["helpers.py"]) == ["test_graph.py", "test_leaf.py"]  # any other Python file: every topic
    # watching one topic: another topic's save grades nothing
    folder, topics = _topics(tmp_path / "leaf.py")
    watch = Watch(folder, topics, folder, [])
    assert names(["graph.py"]) == [] and names(["leaf.py"]) == ["test_leaf.py"]

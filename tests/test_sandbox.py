"""The sandbox: student code runs in worker processes, the grader judges.

Each graded run starts one zygote (it imports torch, a few seconds), so the
failure kinds share one run and the forging attempts another.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time

import pytest
import torch
from conftest import run_grader

from pytest_autograd_grader.boundary.wire import dumps, loads
from pytest_autograd_grader.sandbox import SandboxExecutor, describe_status, isolation_for
from pytest_autograd_grader.sandbox.launch import sandbox_of

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox needs Linux")


def _student(pytester: pytest.Pytester, **modules: str):
    student = pytester.path / "student"
    student.mkdir(exist_ok=True)
    for name, source in modules.items():
        (student / f"{name}.py").write_text(textwrap.dedent(source))
    return student


def _gone(pid: int) -> bool:
    """True when the process no longer runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def _wait_gone(pid: int, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if _gone(pid):
            return True
        time.sleep(0.05)
    return _gone(pid)


def named(tag: str) -> list[int]:
    """Live processes whose name (comm) starts with ``tag``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as handle:
                    if handle.read().startswith(tag) and not _gone(int(entry)):
                        found.append(int(entry))
            except OSError:
                pass
    return found


# -- every failure kind costs exactly its own check --------------------------------

GOOD = """
    import os
    import threading

    def f(x):
        return x * 2

    def threads():
        return threading.active_count()

    def pid():
        return os.getpid()
"""

BAD = """
    import ctypes
    import os
    import signal
    import sys
    import threading
    import time

    import torch

    def loop(x):
        while True:
            pass

    def segfault(x):
        ctypes.string_at(0)

    def hard_exit(x):
        os._exit(3)

    def terminate(x):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)

    def sys_exit(x):
        sys.exit(4)

    def interrupt(x):
        raise KeyboardInterrupt

    def tensor_hog(x):
        return torch.empty(2 ** 31)  # 8 GB

    def list_hog(x):
        chunks = []
        while True:
            chunks.append(bytes(64 << 20))  # calloc: no time spent touching pages

    def stray_thread(x):
        def spin():
            while True:
                time.sleep(0.001)
        threading.Thread(target=spin).start()
        return x * 2

    def _sleep_forever(tag, escape):
        if os.fork() == 0:
            if escape:
                os.setsid()
                if os.fork():
                    os._exit(0)  # the sleeper is now an orphan in a session of its own
            ctypes.CDLL(None).prctl(15, tag.encode(), 0, 0, 0)  # PR_SET_NAME: findable in /proc
            time.sleep(120)
            os._exit(0)

    def fork_sleeper(x, tag, escape):
        _sleep_forever(tag, escape)
        time.sleep(0.2)
        return x * 2

    def huge_output(x):
        print("spam " * 10_000_000)  # 50 MB through Python
        os.write(1, b"C" * (8 << 20))  # and 8 MB at the C level
        raise ValueError("after printing a lot")

    def c_level(x):
        os.write(2, b"written to fd 2\\n")
        ctypes.CDLL(None).printf(b"printf from C\\n")
        raise ValueError("after printing")

    def kill_parent(x):
        os.kill(os.getppid(), signal.SIGKILL)
        return x * 2

    def nap(x):
        time.sleep(0.4)
        return x * 2
"""

FAILURES = """
    import os
    import sys

    import pytest
    import torch

    pytestmark = pytest.mark.grade(concept="graph")
    STUDENT = {student!r}
    TAG = {tag!r}

    def good(submission, autograd):
        x = torch.randn(3)
        autograd.assert_close(submission("good").f(x), x * 2, "f(x)")

    def test_good_first(submission, autograd):
        good(submission, autograd)

    @pytest.mark.parametrize("name", ["loop", "segfault", "hard_exit", "terminate", "sys_exit", "interrupt",
                                      "tensor_hog", "list_hog", "huge_output", "c_level"])
    def test_bad(submission, autograd, name):
        x = torch.randn(3)
        autograd.assert_close(getattr(submission("bad"), name)(x), x * 2, name)

    @pytest.mark.parametrize("after", ["loop", "segfault", "hard_exit", "memory", "output"])
    def test_good_after(submission, autograd, after):
        good(submission, autograd)

    def test_stray_thread(submission, autograd):
        x = torch.randn(3)
        autograd.assert_close(submission("bad").stray_thread(x), x * 2, "stray_thread")

    def test_no_thread_left(submission, autograd):
        autograd.assert_equal(submission("good").threads(), 1, "threads in a fresh worker")

    @pytest.mark.parametrize("escape", [False, True])
    def test_fork_sleeper(submission, autograd, escape):
        x = torch.randn(3)
        autograd.assert_close(submission("bad").fork_sleeper(x, TAG + str(int(escape)), escape), x * 2,
                              "fork_sleeper")

    def test_kill_parent(submission, autograd):
        x = torch.randn(3)
        autograd.assert_close(submission("bad").kill_parent(x), x * 2, "kill_parent")

    def test_good_after_kill_parent(submission, autograd):
        good(submission, autograd)

    def test_budget_is_per_check(submission, autograd):
        x = torch.randn(3)
        for _ in range(4):  # 0.4 s each against a 1 s budget
            autograd.assert_close(submission("bad").nap(x), x * 2, "nap")

    def test_one_call_fits(submission, autograd):
        x = torch.randn(3)
        autograd.assert_close(submission("bad").nap(x), x * 2, "nap")

    def test_student_code_not_in_this_process(submission, autograd):
        assert submission("good").pid() != os.getpid()
        loaded = [name for name, module in list(sys.modules.items())
                  if str(getattr(module, "__file__", "") or "").startswith(STUDENT)]
        assert loaded == []
"""


@pytest.fixture
def failures(pytester: pytest.Pytester):
    student = _student(pytester, good=GOOD, bad=BAD)
    tag = f"slp{os.getpid() % 100000}-"
    pytester.makepyfile(test_checks=textwrap.dedent(FAILURES).format(student=str(student), tag=tag))
    started = time.monotonic()
    graded = run_grader(
        pytester,
        "test_checks.py",
        "--grade-submission",
        "student",
        "--grade-seed",
        "3",
        "--grade-timeout",
        "1",
        "--grade-memory",
        "1024",
    )
    return graded, tag, time.monotonic() - started


def test_each_failure_kind_costs_only_its_check(failures):
    graded, tag, seconds = failures
    checks = graded.report["checks"]
    assert graded.report["complete"] is True, graded.text
    status = {c["id"].split("::")[1]: c["status"] for c in checks}
    feedback = {c["id"].split("::")[1]: c["feedback"] for c in checks}

    assert status["test_bad[loop]"] == "timeout"
    assert "bad.loop did not finish within 1 s" in feedback["test_bad[loop]"]
    assert status["test_bad[segfault]"] == "crashed"
    assert "bad.segfault died (segmentation fault, SIGSEGV)" in feedback["test_bad[segfault]"]
    assert status["test_bad[hard_exit]"] == "crashed"
    assert "exited with code 3" in feedback["test_bad[hard_exit]"]
    assert status["test_bad[terminate]"] == "crashed"
    assert "killed by SIGTERM" in feedback["test_bad[terminate]"]
    assert status["test_bad[sys_exit]"] == "failed"
    assert "bad.sys_exit called sys.exit(4)" in feedback["test_bad[sys_exit]"]
    assert status["test_bad[interrupt]"] == "failed"
    assert "raised KeyboardInterrupt" in feedback["test_bad[interrupt]"]
    for hog in ("tensor_hog", "list_hog"):
        assert status[f"test_bad[{hog}]"] == "failed"
        assert f"bad.{hog} ran out of memory (limit 1024 MB)" in feedback[f"test_bad[{hog}]"]

    # huge output: the answer is still graded, the output shown is cut short
    huge = feedback["test_bad[huge_output]"]
    assert status["test_bad[huge_output]"] == "failed" and "after printing a lot" in huge
    assert "what your code printed:" in huge and "output cut" in huge and len(huge) < 6000
    assert len(graded.text) < 200_000
    # output written at the C level is caught too
    assert "written to fd 2" in feedback["test_bad[c_level]"]
    assert "printf from C" in feedback["test_bad[c_level]"]

    # a stray thread, a child left sleeping, a killed parent: the answer counts,
    # and what was left behind is gone before the next check
    assert status["test_stray_thread"] == "passed"
    assert status["test_no_thread_left"] == "passed"
    assert status["test_fork_sleeper[False]"] == status["test_fork_sleeper[True]"] == "passed"
    for escape in (0, 1):
        assert named(f"{tag}{escape}") == [], f"the {'escaped ' if escape else ''}sleeping child still runs"
    if graded.report["isolation"] == "user":
        # the worker's parent, its keeper, keeps root's uid: the kernel refuses
        assert "PermissionError: [Errno 1] Operation not permitted" in feedback["test_kill_parent"]
    else:
        assert status["test_kill_parent"] == "passed"
    assert status["test_good_after_kill_parent"] == "passed"

    # --grade-timeout bounds the whole check, however many calls it makes
    assert status["test_budget_is_per_check"] == "timeout"
    assert "bad.nap did not finish within 1 s" in feedback["test_budget_is_per_check"]
    assert status["test_one_call_fits"] == "passed"

    assert status["test_student_code_not_in_this_process"] == "passed", feedback
    # every other check is scored
    passed = [name for name, s in status.items() if s == "passed"]
    assert len(passed) == 14 and status["test_good_first"] == "passed"
    assert all(
        status[f"test_good_after[{after}]"] == "passed"
        for after in ("loop", "segfault", "hard_exit", "memory", "output")
    )
    assert graded.report["score"] == 14 and graded.report["max_score"] == len(checks)
    # one timeout of 1 s, one 1 s budget, no hang anywhere
    assert seconds < 30, seconds


# -- forging gains nothing ----------------------------------------------------------

FORGE = """
    import json
    import os
    import sys
    import time

    import torch
    import torch.testing

    # patch the comparisons and pytest's own machinery, from the student's side
    torch.testing.assert_close = lambda *args, **kwargs: None
    torch.allclose = lambda *args, **kwargs: True
    torch.equal = lambda *args, **kwargs: True
    torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
    try:
        import _pytest.outcomes
        import _pytest.runner
        import pytest
        _pytest.runner.call_and_report = lambda *args, **kwargs: None
        pytest.fail = lambda *args, **kwargs: None
        import pytest_autograd_grader.plugin as plugin
        import pytest_autograd_grader.scoring as scoring
        scoring.Gradebook.percent = property(lambda self: 100.0)
        plugin.result_for = None
    except Exception:
        pass

    FAKE = {{"schema": "pytest-autograd-grader/1", "complete": True, "score": 99.0, "max_score": 99.0,
            "percent": 100.0, "checks": [], "concepts": []}}
    REPORTS = {reports!r}

    class Liar(torch.Tensor):
        def __eq__(self, other):
            return True

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return True

    def double(x):
        return x * 3

    def lying(x):
        return (x * 3).as_subclass(Liar)

    def fake_total(x):
        print("TOTAL                                      99/99                #################### 100.0%")
        os.write(1, b"grade: 100.0% -- all checks passed\\n")
        return x * 3

    def write_reports(x):
        for path in REPORTS:
            with open(path, "w") as handle:
                json.dump(FAKE, handle)
        if os.fork() == 0:  # keep rewriting them, from a process of its own
            os.setsid()
            for _ in range(2000):
                for path in REPORTS:
                    try:
                        with open(path, "w") as handle:
                            json.dump(FAKE, handle)
                    except OSError:
                        pass
                time.sleep(0.005)
            os._exit(0)
        return x * 3
"""

FORGE_CHECKS = """
    import pytest
    import torch

    pytestmark = pytest.mark.grade(concept="graph", points=2)

    @pytest.mark.parametrize("name", ["double", "lying", "fake_total", "write_reports"])
    def test_forge(submission, autograd, name):
        x = torch.randn(4)
        autograd.assert_close(getattr(submission("forge"), name)(x), x * 2, name)

    @pytest.mark.grade(hidden=True)
    def test_hidden(submission, autograd):
        x = torch.randn(4)
        autograd.assert_close(submission("forge").fake_total(x), x * 2, "hidden")
"""

EVIL_CONFTEST = """
    import pathlib
    import pytest

    pathlib.Path(__file__).with_name("CONFTEST_RAN").write_text("yes")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(item, call):
        report = yield
        report.outcome = "passed"
        return report

    @pytest.fixture
    def autograd():
        class Yes:
            def assert_close(self, *args, **kwargs):
                pass
        return Yes()
"""


def test_forging_gains_nothing(pytester: pytest.Pytester):
    reports = [str(pytester.path / "report.json"), str(pytester.path / "results.json")]
    student = _student(pytester, forge=textwrap.dedent(FORGE).format(reports=reports))
    # the student's repository tries to configure the run as well
    (student / "conftest.py").write_text(textwrap.dedent(EVIL_CONFTEST))
    (student / "pytest.ini").write_text("[pytest]\naddopts = --grade-fail-under 0 -p no:grade\n")
    (student / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "--grade-inline"\n')
    (student / "sitecustomize.py").write_text("raise SystemExit('sitecustomize ran')\n")
    pytester.makepyfile(test_checks=textwrap.dedent(FORGE_CHECKS))
    (pytester.path / "checks.ini").write_text("[pytest]\n")
    # the invocation the README gives instructors: our own ini file and
    # rootdir, the submission as --opt=value (so pytest never takes it for a
    # test path and searches it for configuration)
    graded = run_grader(
        pytester,
        "-c",
        "checks.ini",
        "--rootdir",
        str(pytester.path),
        f"--grade-submission={student}",
        "--grade-seed=5",
        "--grade-gradescope=results.json",
        "test_checks.py",
    )
    report = graded.report
    assert report["complete"] is True and report["score"] == 0 and report["percent"] == 0.0, graded.text
    assert {c["status"] for c in report["checks"]} == {"failed"} and len(report["checks"]) == 5
    assert graded.check("test_forge[lying]")["score"] == 0
    # a fake total printed by student code never reaches the terminal or the report
    assert "99/99" not in graded.text and "all checks passed" not in graded.text
    assert not any("99/99" in c["feedback"] for c in report["checks"])
    graded.result.stdout.fnmatch_lines(["TOTAL * 0/10 *0.0%"])
    # the report files stay the grader's, also after the run
    time.sleep(0.3)
    for path in reports:
        data = json.loads(open(path).read())
        assert data.get("score", 0) == 0 and "percent" not in data or data["percent"] == 0, (path, data)
    # nothing in the student's directory configured the run
    assert "configfile: checks.ini" in graded.text
    assert not (student / "CONFTEST_RAN").exists()
    assert graded.result.ret == 1


# -- the unsafe mode stays explicit ------------------------------------------------------


def test_inline_mode_only_when_asked(pytester: pytest.Pytester):
    _student(pytester, good=GOOD)
    pytester.makepyfile(
        test_checks="""
        import os
        import pytest

        @pytest.mark.grade(concept="graph")
        def test_where(submission, autograd):
            autograd.assert_equal(submission("good").pid(), os.getpid(), "same process")
    """
    )
    graded = run_grader(pytester, "test_checks.py", "--grade-submission", "student", "--grade-inline")
    assert graded.check("test_where")["status"] == "passed"


# -- the executor on its own -------------------------------------------------------------


def test_executor_round_trip_and_restart(tmp_path):
    (tmp_path / "m.py").write_text("import os\ndef pid():\n    return os.getpid()\ndef die():\n    os._exit(9)\n")
    empty = dumps({"args": {"$": "tuple", "items": []}, "kwargs": {"$": "dict", "keys": [], "values": []}})
    executor = SandboxExecutor(isolation_for("auto"), memory_mb=2048)
    try:
        first = loads(executor.run(str(tmp_path), "m", "pid", empty, "call", 60))
        again = loads(executor.run(str(tmp_path), "m", "pid", empty, "call", 5))
        assert first["stage"] == again["stage"] == "ok" and first["value"] == again["value"]  # one worker
        died = loads(executor.run(str(tmp_path), "m", "die", empty, "call", 5))
        assert died["stage"] == "crashed" and "exited with code 9" in died["how"]
        fresh = loads(executor.run(str(tmp_path), "m", "pid", empty, "call", 5))
        assert fresh["stage"] == "ok"
        # the zygote itself is replaced when it is gone
        sandbox = sandbox_of(executor.isolation)
        launcher = sandbox.launcher
        sandbox.stop()
        for worker in list(executor.workers.values()):
            worker.retire()
        executor.workers.clear()
        assert loads(executor.run(str(tmp_path), "m", "pid", empty, "call", 60))["stage"] == "ok"
        assert sandbox.launcher is not launcher
    finally:
        executor.close()
    assert executor.workers == {}


FORGED_REPLY = """
import os, socket, stat, struct

def forge():
    # student code writes a reply header of its own on the worker's socket,
    # nested too deep for any JSON reader
    for fd in range(3, 256):
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            sock = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        if sock.family == socket.AF_UNIX and sock.type == socket.SOCK_STREAM:
            header = b"[" * 200000
            sock.sendall(struct.pack("!I", len(header)) + header + struct.pack("!I", 2) + b"{}")
            return 1
    return 0
"""


def test_a_reply_header_forged_by_student_code_is_a_crash_not_the_graders_traceback(tmp_path):
    (tmp_path / "m.py").write_text(FORGED_REPLY)
    empty = dumps({"args": {"$": "tuple", "items": []}, "kwargs": {"$": "dict", "keys": [], "values": []}})
    executor = SandboxExecutor(isolation_for("auto"), memory_mb=2048)
    try:
        answer = loads(executor.run(str(tmp_path), "m", "forge", empty, "call", 30))
    finally:
        executor.close()
    assert answer["stage"] == "crashed"


def test_describe_status():
    assert describe_status(11) == "segmentation fault, SIGSEGV"
    assert describe_status(3 << 8).startswith("the process exited with code 3")
    assert "unexpectedly" in describe_status(None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA on this machine")
def test_cuda_in_workers(pytester: pytest.Pytester):
    _student(
        pytester,
        dev="""
        import torch

        def on_device(x):
            y = (x * 2).sum()
            y.backward()
            return x.grad, torch.cuda.current_device()
    """,
    )
    pytester.makepyfile(
        test_checks="""
        import pytest
        import torch

        @pytest.mark.grade(concept="graph")
        def test_cuda(submission, autograd, grade_device):
            x = torch.randn(5, device=grade_device, requires_grad=True)
            grad, index = submission("dev").on_device(x)
            autograd.assert_close(grad, torch.full_like(x, 2.0), "grad on " + grade_device)
    """
    )
    graded = run_grader(pytester, "test_checks.py", "--grade-submission", "student", "--grade-device", "cuda")
    assert graded.check("test_cuda")["status"] == "passed", graded.text


def test_a_sandbox_that_cannot_start_a_worker_is_the_graders_error_said_in_words(
    pytester: pytest.Pytester, monkeypatch
):
    # The zygote refuses every worker (as when /tmp is full or the zygote was
    # killed): the check is the grader's error, said in words, never a
    # traceback of the grader's own, and never blamed on the student.
    from conftest import grade_checks

    from pytest_autograd_grader.i18n import msg
    from pytest_autograd_grader.sandbox import launch, probe

    probe.isolation_for("auto")  # chosen (by a worker that answered) before the sandbox breaks
    real_ask = launch._Sandbox.ask

    def refuse_workers(self, message, fds=(), timeout=launch.SPAWN_TIMEOUT_S):
        if message.get("op") == "spawn":
            return None, []
        return real_ask(self, message, fds, timeout)

    monkeypatch.setattr(launch._Sandbox, "ask", refuse_workers)
    graded = grade_checks(
        pytester,
        textwrap.dedent("""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_calls(submission):
            assert submission("m").f() == 1
        """),
        m="def f():\n    return 1\n",
    )
    check = graded.check("test_calls")
    lead = msg("sandbox.no_worker", mode=graded.report["isolation"]).split("(")[0]
    assert check["status"] == "error" and check["score"] == 0
    assert check["feedback"].startswith(lead), check["feedback"]
    assert "Traceback" not in graded.text and "RuntimeError" not in graded.text and "executor.py" not in graded.text
    assert lead in graded.text


WARM_UP_WITHOUT_BACKWARD = """
import torch
from torch.autograd.variable import Variable


class NoEngine:
    def run_backward(self, *args, **kwargs):
        raise AssertionError("the zygote ran autograd's engine")

    def queue_callback(self, *args, **kwargs):
        raise AssertionError("the zygote ran autograd's engine")


Variable._execution_engine = NoEngine()
from pytest_autograd_grader.sandbox import warm_up

warm_up.warm_up(numpy_only=False)
import torch.fx.experimental.symbolic_shapes  # imported by the warm-up, not by each worker's first backward
print("warm")
"""


def test_the_zygote_warms_up_without_a_backward():
    # autograd's first backward starts a thread per device: on a GPU machine
    # that started CUDA's driver in the zygote, and every forked worker then
    # failed on CUDA ("initialization error") and on CPU too ("autograd's
    # threading in combination with fork-based multiprocessing")
    import subprocess

    done = subprocess.run([sys.executable, "-c", WARM_UP_WITHOUT_BACKWARD], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "warm", done.stderr[-2000:]


def test_a_folder_too_deep_for_the_copy_is_left_out_not_a_crash(tmp_path):
    # the staged copy's path is longer than the submission's: a folder that
    # fits where the student put it can be too long where it is copied to.
    # It is missing for the student's code, as an unreadable file is; the
    # rest is copied and the grader goes on.
    from pytest_autograd_grader.sandbox.staging import stage

    source, dest = tmp_path / "s", tmp_path / ("d" * 200)
    deep = source
    while len(str(deep)) < 4000 - 251:
        deep = deep / ("x" * 250)
    deep = deep / ("y" * (4000 - len(str(deep)) - 1))  # 4,000 bytes: fits; 4,199 in the copy does not
    deep.mkdir(parents=True)
    (deep / "far.py").write_text("X = 1\n")
    (source / "leaf.py").write_text("Y = 2\n")
    stage(source, dest)
    assert (dest / "leaf.py").read_text() == "Y = 2\n"
    assert not any(path.name == "far.py" for path in dest.rglob("*"))


def test_what_tools_leave_in_an_upload_is_neither_copied_nor_a_different_set_of_checks(tmp_path):
    # caches, version control and virtual environments beside a student's
    # modules are not the student's work: the sandbox's copy leaves them
    # out, and beside the checks they do not change the checks' hash
    from pytest_autograd_grader.classroom.students import checks_sha256
    from pytest_autograd_grader.sandbox.staging import stage

    source, dest = tmp_path / "upload", tmp_path / "staged"
    (source / "pkg").mkdir(parents=True)
    (source / "leaf.py").write_text("X = 1\n")
    (source / "pkg" / "helper.py").write_text("Y = 2\n")
    before = checks_sha256(source)
    tools = (".git", ".hypothesis", ".ruff_cache", ".mypy_cache", "__pycache__", "venv", ".venv", "node_modules")
    for tool in tools:
        (source / tool).mkdir()
        (source / tool / "leftover.py").write_text("Z = 3\n")
        (source / "pkg" / tool).mkdir()
        (source / "pkg" / tool / "leftover.py").write_text("Z = 3\n")
    stage(source, dest)
    copied = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert copied == ["leaf.py", "pkg/helper.py"]
    assert checks_sha256(source) == before

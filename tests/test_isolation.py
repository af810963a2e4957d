"""Student code can touch nothing of the grader's, in every isolation mode
that fences it off (``bwrap`` and ``user``): files, /proc, processes,
reports, environment, and nothing it starts outlives its worker.

Each attack is a student function that tries something and reports what
happened; the checks assert it was blocked, and the tests assert the effects
on disk, in /proc and on the terminal after the run.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import socket
import sys
import textwrap
import time
import zlib
from pathlib import Path

import pytest
from conftest import QUIET_PLUGINS, REPO, SOLUTIONS, run_grader

from pytest_autograd_grader.sandbox import Unavailable, isolation_for
from pytest_autograd_grader.sandbox.isolation import PASS_ENV
from pytest_autograd_grader.sandbox.namespaces import NO_PIDNS_ENV

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolation needs Linux")

# CI sets this, so a mode that cannot run there fails instead of skipping.
REQUIRED = os.environ.get("GRADE_REQUIRE_ISOLATION", "").split(",")


def require_isolation(mode: str) -> str:
    """``mode`` if it works here; else skip, or fail where CI requires it."""
    try:
        isolation_for(mode)
    except Unavailable as exc:
        if mode in REQUIRED:
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    return mode


@pytest.fixture(params=["bwrap", "user"])
def mode(request) -> str:
    return require_isolation(request.param)


def named(tag: str) -> list[int]:
    """Live processes whose name (comm) starts with ``tag``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as handle:
                comm = handle.read()
            with open(f"/proc/{entry}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if comm.startswith(tag) and state not in ("Z", "X"):
            found.append(int(entry))
    return found


HOSTILE = r'''
import ctypes
import os
import signal
import socket
import sys
import threading
import time

libc = ctypes.CDLL(None, use_errno=True)
FAKE = b'{"schema": "pytest-autograd-grader/1", "complete": true, "score": 99, "max_score": 99, "percent": 100.0}'


def _try(action):
    try:
        action()
    except Exception as exc:
        return "blocked"
    return "DONE"


def _write(path, data=b"x"):
    def action():
        with open(path, "wb") as handle:
            handle.write(data)
    return action


def write_grader_files(paths):
    """A module on the grader's sys.path, a conftest.py beside the checks,
    the report files, the grader's tmp directory, the student's original."""
    return [_try(_write(path, b"import os\nos._exit(0)\n")) for path in paths]


def grader_process(pid):
    """Write the grader's memory, its terminal, and signal it."""
    results = [
        _try(_write(f"/proc/{pid}/mem")),
        _try(_write(f"/proc/{pid}/fd/1", b"\nTOTAL FAKE 99/99 100.0%\n")),
        _try(_write(f"/proc/{pid}/fd/2", b"\nTOTAL FAKE 99/99 100.0%\n")),
        _try(lambda: os.kill(pid, 0)),
        _try(lambda: os.kill(pid, signal.SIGSTOP)),
    ]
    # every other process's terminal this one can name (the zygote's included;
    # bubblewrap's own, without PID namespaces of the keepers, is /dev/null)
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            for fd in (1, 2):
                try:
                    if os.readlink(f"/proc/{entry}/fd/{fd}") == "/dev/null":
                        continue  # reaches nobody
                except OSError:
                    pass
                if _try(_write(f"/proc/{entry}/fd/{fd}", b"\nTOTAL FAKE 99/99 100.0%\n")) == "DONE":
                    results.append(f"DONE /proc/{entry}/fd/{fd}")
    return results


def read_file(path):
    return [_try(lambda: open(path, "rb").read())]


def environment():
    return sorted(os.environ)


def privileges():
    return [_try(lambda: os.setuid(0)), _try(lambda: os.setgid(0)), _try(_write("/etc/grade-evil"))]


def network(port):
    def connect():
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
    return [_try(connect)]


def rewrite_self():
    _try(_write(__file__, b"TAMPERED = True\n"))
    return "tried"


def _name(tag):
    libc.prctl(15, tag.encode(), 0, 0, 0)  # PR_SET_NAME: the test finds us in /proc


def report_chain(paths, tag):
    """A chain of processes in sessions of their own that keeps rewriting the
    report files, re-forking so that no kill of a known pid catches it."""
    if os.fork() == 0:
        os.setsid()
        _name(tag)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            if os.fork():
                os._exit(0)  # the parent goes, the child carries on as an orphan
            os.setsid()
            _name(tag)
            for path in paths:
                try:
                    with open(path, "wb") as handle:
                        handle.write(FAKE)
                except OSError:
                    pass
            time.sleep(0.005)
        os._exit(0)
    time.sleep(0.3)
    return "started"


def keep_alive(tag):
    """Leave a thread behind, disguised as autograd's, with a file mapped
    that /proc shows as CUDA's driver, and lie about it."""
    global ALIVE, DRIVER
    ALIVE = True
    import mmap
    import tempfile

    with open(os.path.join(tempfile.mkdtemp(), "libcuda.so.1"), "wb+") as handle:
        handle.write(b"\0" * 4096)
        handle.flush()
        DRIVER = mmap.mmap(handle.fileno(), 4096)

    def linger():
        _name("pt_autograd_0")
        time.sleep(60)

    threading.Thread(target=linger, daemon=True).start()
    threading.active_count = lambda: 1
    threading.enumerate = lambda: [threading.main_thread()]
    return "left"


def fresh():
    return "fresh" if not globals().get("ALIVE") else "the same worker"


def fork_bomb(tag):
    started = 0
    for _ in range(3000):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            _name(tag)
            time.sleep(60)
            os._exit(0)
        started += 1
    return started
'''

CHECKS = r"""
import os
import sys
import pytest

pytestmark = pytest.mark.grade(concept="graph")
GRADER_FILES = {grader_files!r}
REPORTS = {reports!r}
TAG = {tag!r}
PORT = {port!r}
ALLOWED_ENV = {{"PATH", "HOME", "TMPDIR", "LANG", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONNOUSERSITE",
                "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PWD", "TZ"}}
ALLOWED_ENV |= set({pass_env!r})  # handed on where set: CUDA's driver needs them on a GPU machine


def test_write_grader_files(submission, autograd):
    got = submission("hostile").write_grader_files(GRADER_FILES)
    autograd.assert_equal(got, ["blocked"] * len(GRADER_FILES), "writes", labels=GRADER_FILES)


def test_grader_process(submission, autograd):
    got = submission("hostile").grader_process(os.getpid())
    autograd.assert_equal(got, ["blocked"] * 5, "attacks on the grader process")


def test_read_checks(submission, autograd):
    autograd.assert_equal(submission("hostile").read_file(__file__), ["blocked"], "reading the checks")


def test_environment(submission, autograd):
    leaked = sorted(set(submission("hostile").environment()) - ALLOWED_ENV)
    autograd.assert_equal(leaked, [], "environment variables")


def test_privileges(submission, autograd):
    autograd.assert_equal(submission("hostile").privileges(), ["blocked"] * 3, "privileges")


def test_network(submission, autograd):
    autograd.assert_equal(submission("hostile").network(PORT), [{network!r}], "network")


def test_rewrite_self(submission, autograd):
    autograd.assert_equal(submission("hostile").rewrite_self(), "tried", "rewrite")


def test_report_chain(submission, autograd):
    autograd.assert_equal(submission("hostile").report_chain(REPORTS, TAG + "r"), "started", "chain")


def test_keep_alive(submission, autograd):
    autograd.assert_equal(submission("hostile").keep_alive(TAG + "k"), "left", "keep alive")


def test_fresh_after_keep_alive(submission, autograd):
    autograd.assert_equal(submission("hostile").fresh(), "fresh", "the next check's worker")


def test_fork_bomb(submission, autograd):
    started = submission("hostile").fork_bomb(TAG + "b")
    assert started < 3000, started
"""


@pytest.mark.parametrize("pid_namespaces", [True, False], ids=["pidns", "no-pidns"])
def test_student_code_touches_nothing_of_the_graders(
    pytester: pytest.Pytester, mode: str, pid_namespaces: bool, monkeypatch, request
):
    from pytest_autograd_grader.sandbox import stop_all

    if not pid_namespaces:
        # as where the kernel will not mount a /proc for a new PID namespace
        # (a container that masks parts of /proc): keepers reap as subreapers,
        # in zygotes started with this setting (not an earlier test's)
        monkeypatch.setenv(NO_PIDNS_ENV, "1")
        stop_all()
        request.addfinalizer(stop_all)
    student = pytester.path / "student"
    student.mkdir()
    (student / "hostile.py").write_text(HOSTILE)
    original = (student / "hostile.py").read_text()
    checks = pytester.path / "checks"
    checks.mkdir()
    (checks / "pytest.ini").write_text("[pytest]\n")
    reports = [str(pytester.path / "report.json"), str(pytester.path / "results.json")]
    venv_bin = os.path.dirname(sys.executable)
    import torch

    import pytest_autograd_grader

    site_packages = os.path.dirname(os.path.dirname(torch.__file__))
    grader_files = [
        str(checks / "conftest.py"),
        str(checks / "mpmath_accelerator.py"),
        os.path.join(site_packages, "grade_evil.py"),
        os.path.join(venv_bin, "grade_evil"),
        os.path.join(os.path.dirname(pytest_autograd_grader.__file__), "grade_evil.py"),
        str(student / "grade_evil.py"),
        str(pytester.path.parent / "grade_evil"),
        *reports,
    ]
    tag = f"atk{os.getpid() % 100000}"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    (checks / "test_attacks.py").write_text(
        textwrap.dedent(CHECKS).format(
            grader_files=grader_files,
            reports=reports,
            tag=tag,
            port=port,
            pass_env=list(PASS_ENV) + ([] if pid_namespaces else [NO_PIDNS_ENV]),  # this test's own, handed on
            # a uid's keeper makes its worker a network namespace with its PID one
            network="blocked" if mode == "bwrap" or pid_namespaces else "DONE",
        )
    )
    graded = run_grader(
        pytester,
        "-c",
        str(checks / "pytest.ini"),
        "--rootdir",
        str(checks),
        f"--grade-submission={student}",
        "--grade-seed=1",
        f"--grade-isolation={mode}",
        "--grade-gradescope",
        reports[1],
        "--grade-timeout",
        "20",
        str(checks),
    )
    listener.close()
    statuses = {c["id"].split("::")[1]: (c["status"], c["feedback"]) for c in graded.report["checks"]}
    assert all(status == "passed" for status, _ in statuses.values()), {
        name: outcome for name, outcome in statuses.items() if outcome[0] != "passed"
    }
    assert graded.report["isolation"] == mode
    # the reports say the network is open where it is
    said = any("network" in what for what in graded.report["isolation_missing"])
    assert said == (mode == "user" and not pid_namespaces), graded.report["isolation_missing"]
    # nothing written anywhere of the grader's, nothing of the student's changed
    for path in grader_files[:-2]:
        assert not os.path.exists(path), path
    assert (student / "hostile.py").read_text() == original
    # no fake total reached the terminal
    assert "FAKE" not in graded.text
    # nothing the student started is alive once pytest is done, and the
    # reports are the grader's, also a while after the final write
    time.sleep(0.5)
    assert named(tag) == []
    report = json.loads(open(reports[0]).read())
    assert report["complete"] is True and report["score"] == report["max_score"] == len(statuses)
    assert json.loads(open(reports[1]).read())["score"] == len(statuses)


def test_process_mode_says_what_is_missing(pytester: pytest.Pytester):
    (pytester.path / "student").mkdir()
    (pytester.path / "student" / "m.py").write_text("def f(x):\n    return x\n")
    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="graph")
        def test_f(submission, autograd):
            autograd.assert_equal(submission("m").f(3), 3, "f")
    """
    )
    graded = run_grader(
        pytester,
        "test_checks.py",
        "--grade-submission=student",
        "--grade-isolation",
        "process",
        "--grade-gradescope",
        "results.json",
    )
    graded.result.stdout.fnmatch_lines(
        ["*isolation process*", "grade: not protected: student code runs as your own user*"]
    )
    # chosen, not fallen back to: no stronger mode was tried, so none is reported as missing
    graded.result.stdout.no_fnmatch_line("grade: no * isolation*")
    assert graded.report["isolation"] == "process"
    assert any("your own user" in line for line in graded.report["isolation_missing"])
    gradescope = json.loads((pytester.path / "results.json").read_text())
    assert "isolation process" in gradescope["output"] and "your own user" in gradescope["output"]
    assert graded.check("test_f")["status"] == "passed"


def test_unavailable_mode_is_a_usage_error(pytester: pytest.Pytester, monkeypatch, fresh_process_state):
    from pytest_autograd_grader.sandbox import isolation, probe

    monkeypatch.setattr(isolation, "is_root", lambda: False)
    monkeypatch.setattr(probe.shutil, "which", lambda name: None)
    pytester.makepyfile(test_checks="def test_nothing():\n    pass\n")
    result = pytester.runpytest("--grade", "--grade-isolation", "user", *QUIET_PLUGINS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--grade-isolation user: workers can drop to a uid of their own only when the grader runs as root*"]
    )
    result = pytester.runpytest("--grade", "--grade-isolation", "bwrap", *QUIET_PLUGINS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--grade-isolation bwrap: bubblewrap (bwrap) is not installed or not on PATH; "
            "to use it: apt-get install bubblewrap*"
        ]
    )
    result = pytester.runpytest("--grade", "--grade-isolation", "auto", *QUIET_PLUGINS)
    result.stdout.fnmatch_lines(
        [
            "*isolation process*",
            "grade: not protected: student code runs as your own user*",
            "grade: not protected: numpy-only exercises (the engine track) are not enforced*",
            "grade: no bwrap isolation: bubblewrap (bwrap) is not installed or not on PATH; "
            "to use it: apt-get install bubblewrap*",
        ]
    )
    # a student is not told to run the grader as root, and nothing is said twice
    result.stdout.no_fnmatch_line("*no user isolation*")
    header = [line for line in result.stdout.lines if line.startswith("grade:")]
    assert len(header) == len(set(header)) == 4, header


def _linked_python(place, how: str) -> str:
    """This interpreter, with its packages, started through a link.

    ``binary``: ``place/bin/python`` links to the binary (a Docker or
    hand-made layout such as /opt/python/bin/python), from a folder no
    prefix covers; run from a venv, ``place`` also gets the venv's
    ``pyvenv.cfg`` and a link to its ``lib``, or the linked Python would
    leave the venv and its packages behind. ``venv``: a venv reached
    through a linked folder (``place/env`` -> the venv), built here on top
    of this interpreter's site-packages."""
    from journeys import venv_on_top

    if how == "binary":
        (place / "bin").mkdir()
        if sys.prefix == sys.base_prefix:
            (place / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
        else:
            (place / "bin" / "python").symlink_to(sys.executable)
            (place / "pyvenv.cfg").write_text((Path(sys.prefix) / "pyvenv.cfg").read_text())
            (place / "lib").symlink_to(Path(sys.prefix) / "lib")
        return str(place / "bin" / "python")
    real = place / "real-env"
    venv_on_top(real)
    (place / "env").symlink_to(real)
    return str(place / "env" / "bin" / "python")


@pytest.mark.parametrize("how", ["binary", "venv"])
def test_a_python_reached_through_a_link_grades_in_bwrap(tmp_path, how):
    # The sandbox runs the interpreter by the name it was started with, and
    # Python finds its prefix (a venv's pyvenv.cfg) from that name: the
    # folders on the way must be in the sandbox at that name. They were not,
    # and every check failed with "bwrap: execvp ...: No such file or
    # directory". The link lies under pytest's own tmp folder (0700): as root,
    # the sandbox's uid is handed what it cannot reach (handoff.py).
    import subprocess

    require_isolation("bwrap")
    # the folder itself readable by others, as installations are; the ones
    # above it closed (pytest's own are 0700)
    os.chmod(tmp_path, 0o755)
    python = _linked_python(tmp_path, how)
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "test_who.py").write_text(
        "import pytest\n\n@pytest.mark.grade(concept='leaf')\ndef test_who(submission):\n"
        "    assert submission('who').name() == 'me'\n"
    )
    student = tmp_path / "student"
    student.mkdir()
    (student / "who.py").write_text("def name():\n    return 'me'\n")
    report = tmp_path / "report.json"
    done = subprocess.run(
        [
            python,
            "-m",
            "pytest",
            str(checks),
            "-c",
            os.devnull,
            "--rootdir",
            str(checks),
            "-p",
            "no:cacheprovider",
            "--grade",
            f"--grade-submission={student}",
            "--grade-isolation=bwrap",
            "--grade-json",
            str(report),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert json.loads(report.read_text())["percent"] == 100.0


def test_bubblewrap_that_cannot_run_this_python_is_found_by_the_probe(monkeypatch):
    # the probe starts a real worker the way grading does, so auto falls
    # back (and an explicit bwrap is a usage error) instead of every check
    # failing later: here the sandbox lacks the interpreter's folders
    from pytest_autograd_grader.sandbox import isolation, probe
    from pytest_autograd_grader.sandbox.launch import stop_all

    require_isolation("bwrap")
    # the sandbox require_isolation's probe left warm is the same one where
    # bwrap runs under the grader's own uid (not root): the probe would reuse
    # it, binds and all, instead of starting one without the interpreter
    stop_all()
    binds = isolation.sandbox_binds
    python = set(isolation.python_binds())
    monkeypatch.setattr(isolation, "sandbox_binds", lambda stage: [b for b in binds(stage) if b not in python])
    mode = isolation.Isolation("bwrap", uid=isolation.allocate_uid() if isolation.is_root() else None)
    problem = probe.try_mode(mode)
    assert problem is not None and "No such file or directory" in problem
    monkeypatch.setattr(isolation, "sandbox_binds", binds)
    assert probe.try_mode(mode) is None


def test_the_command_named_for_a_closed_python_opens_just_enough(request):
    # what `user` mode's header line tells root to run: passing through for
    # the folders on the way, listing for the folder the sandbox reads
    import shutil
    import subprocess
    import tempfile

    from pytest_autograd_grader.sandbox import isolation

    top = Path(tempfile.mkdtemp(dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(top, ignore_errors=True))
    home, lib, site_packages = top / "home", top / "home" / "lib", top / "home" / "lib" / "site"
    site_packages.mkdir(parents=True)
    os.chmod(top, 0o755)
    os.chmod(home, 0o700)
    os.chmod(lib, 0o755)
    os.chmod(site_packages, 0o711)
    blocked = isolation.blocked_dirs([str(site_packages)])
    assert blocked == {str(home): "x", str(site_packages): "rx"}
    fix = isolation.chmod_fix(blocked)
    assert fix == f"chmod o+x {home} && chmod o+rx {site_packages}"
    subprocess.run(["sh", "-c", fix], check=True)
    assert isolation.blocked_dirs([str(site_packages)]) == {}
    assert oct(os.stat(home).st_mode & 0o777) == "0o701"  # nobody may list the home


# What a module may start when it is imported, above right answers: a thread
# that never ends and a child that sleeps (renamed, so the test can look for
# it once the run is over).
STARTS_AT_IMPORT = """
import os
import shutil
import threading
import time


def _spin():
    while True:
        time.sleep(0.01)


threading.Thread(target=_spin, daemon=True).start()
if os.fork() == 0:
    try:
        with open("/proc/self/comm", "w") as handle:
            handle.write("{tag}")
    except OSError:
        pass
    time.sleep(600)
    os._exit(0)
"""


@pytest.mark.parametrize("mode", ["bwrap", "user", "process"])
def test_right_answers_keep_their_points_whatever_the_module_starts_at_import(grade_topics, mode):
    require_isolation(mode)
    tag = f"imp{os.getpid() % 100000}"
    source = STARTS_AT_IMPORT.format(tag=tag) + "\n\n" + (SOLUTIONS / "graph.py").read_text()
    graded = grade_topics(["graph"], f"--grade-isolation={mode}", modules={"graph": source})
    checks = {c["id"].split("::")[1]: (c["status"], c["feedback"]) for c in graded.report["checks"]}
    assert len(checks) >= 4 and all(status == "passed" for status, _ in checks.values()), checks
    assert graded.report["score"] == graded.report["max_score"]
    # the thread and the child went with their workers
    time.sleep(0.5)
    assert named(tag) == []


LITTER = '''
import os
import shutil


def litter(tag, shared):
    """Leave files wherever a user may write: what survives the run?"""
    written = 0
    for path in (f"/tmp/{tag}-f", f"/var/tmp/{tag}-f", f"/dev/shm/{tag}-f", f"{shared}/{tag}-inner"):
        try:
            with open(path, "w") as handle:
                handle.write("left")
            written += 1
        except OSError:
            pass
    try:
        os.makedirs(f"/tmp/{tag}-d/deeper")
        with open(f"/tmp/{tag}-d/deeper/x", "w") as handle:
            handle.write("left")
        os.symlink("/etc/passwd", f"/tmp/{tag}-d/link")
        written += 1
    except OSError:
        pass
    return written
'''

LITTER_CHECKS = """
import pytest

@pytest.mark.grade(concept="leaf")
def test_litter(submission, autograd):
    written = submission("litter").litter({tag!r}, {shared!r})
    autograd.require(written >= 0, "cmp.mismatch", what="written")
"""


def test_nothing_the_student_writes_outlives_the_run(pytester: pytest.Pytester, mode: str):
    tag = f"lit{os.getpid() % 100000}"
    shared = Path(f"/tmp/{tag}-shared")
    shared.mkdir(mode=0o777, exist_ok=True)
    shared.chmod(0o1777)  # as /tmp itself: anyone may write, only owners delete
    try:
        (pytester.path / "student").mkdir()
        (pytester.path / "student" / "litter.py").write_text(LITTER)
        pytester.makepyfile(test_checks=LITTER_CHECKS.format(tag=tag, shared=str(shared)))
        graded = run_grader(pytester, "test_checks.py", "--grade-submission=student", f"--grade-isolation={mode}")
        assert graded.check("test_litter")["status"] == "passed", graded.check("test_litter")
        left = [
            p
            for p in (
                f"/tmp/{tag}-f",
                f"/var/tmp/{tag}-f",
                f"/dev/shm/{tag}-f",
                f"{shared}/{tag}-inner",
                f"/tmp/{tag}-d",
            )
            if os.path.lexists(p)
        ]
        assert left == []
        assert os.path.exists("/etc/passwd")
    finally:
        shutil.rmtree(shared, ignore_errors=True)


OWN_PID = """
import os


def me():
    with open("/proc/self/stat") as handle:
        return [os.getpid(), int(handle.read().split()[0])]
"""

OWN_PID_CHECKS = """
import pytest

@pytest.mark.grade(concept="graph")
def test_own_pid(submission, autograd):
    got, listed = submission("me").me()
    autograd.assert_equal(listed, got, "the pid /proc/self names")
"""


@pytest.mark.parametrize("mode", ["bwrap", "user", "process"])
def test_a_worker_finds_itself_in_its_proc(pytester: pytest.Pytester, mode: str):
    # CUDA's driver looks itself up in /proc and will not start where /proc
    # shows another PID namespace (cudaGetDeviceCount: error 304): every
    # check on a GPU failed so, in every mode
    require_isolation(mode)
    (pytester.path / "student").mkdir()
    (pytester.path / "student" / "me.py").write_text(OWN_PID)
    pytester.makepyfile(test_checks=OWN_PID_CHECKS)
    graded = run_grader(pytester, "test_checks.py", "--grade-submission=student", f"--grade-isolation={mode}")
    assert graded.check("test_own_pid")["status"] == "passed", graded.check("test_own_pid")["feedback"]


FIRST = '''
import ctypes
import os
import zlib

PLACES = ("/tmp", "/dev/shm", "/run", "/dev", "/var/tmp", "/run/lock")


def leave(tag):
    """What a student's code might leave behind: a file that anyone may
    read wherever it can write one, and one in its own working directory."""
    for folder in PLACES:
        try:
            with open(f"{folder}/{tag}-left", "w") as handle:
                handle.write("mine")
            os.chmod(f"{folder}/{tag}-left", 0o666)
        except OSError:
            pass  # not writable here: nothing to leave
    with open(f"{tag}-cwd", "w") as handle:
        handle.write("mine")
    # SysV shared memory outlives its process: IPC_CREAT, readable by anyone
    ctypes.CDLL(None).shmget(zlib.crc32(tag.encode()) & 0x7FFFFFFF, 4096, 0o1666)
    return os.getcwd()
'''

SECOND = '''
import ctypes
import glob
import zlib


def look(tag):
    """What a student's code graded beside or after it finds of that."""
    found = set()
    for folder in ("/tmp", "/dev/shm", "/run", "/dev"):
        # the machine's /run/lock is open to a uid of its own as /var/tmp is
        # (removed after the worker; asserted outside)
        found.update(p for p in glob.glob(f"{folder}/**/{tag}*", recursive=True) if not p.startswith("/run/lock/"))
    if ctypes.CDLL(None).shmget(zlib.crc32(tag.encode()) & 0x7FFFFFFF, 0, 0) >= 0:
        found.add("SysV shared memory")
    return sorted(found)
'''


def _two_students(tmp_path: Path, first: str, second: str) -> tuple[Path, Path]:
    """Two students' folders, each with its student.py, readable by a
    sandbox's own uid."""
    folders = (tmp_path / "first", tmp_path / "second")
    for folder, source in zip(folders, (first, second)):
        folder.mkdir()
        (folder / "student.py").write_text(source)
        folder.chmod(0o755)
    tmp_path.chmod(0o755)
    return folders


def _host_segment(tag: str) -> int | None:
    """The id of the test's SysV segment on this machine (removed), if any."""
    libc = ctypes.CDLL(None)
    found = libc.shmget(zlib.crc32(tag.encode()) & 0x7FFFFFFF, 0, 0)
    if found < 0:
        return None
    libc.shmctl(found, 0, None)  # IPC_RMID
    return found


def test_a_worker_sees_nothing_another_worker_left_behind(tmp_path, mode: str):
    # A class grades many students with one sandbox (and two side by side):
    # each worker has its own /tmp, /dev/shm and SysV IPC, and bubblewrap's
    # /run and /dev are read-only, so no student reads what another's code
    # left there, nor the working directory it wrote in; nothing it leaves
    # outlives its worker (with a uid of its own, not in /var/tmp either)
    from pytest_autograd_grader.boundary.submission import Budget, Submission
    from pytest_autograd_grader.sandbox import SandboxExecutor

    tag = f"left{os.getpid() % 100000}"
    first, second = _two_students(tmp_path, FIRST, SECOND)
    executor = SandboxExecutor(isolation_for(mode))
    try:
        cwd = Submission(executor, first, "student", Budget(60.0)).leave(tag)
        assert cwd.startswith("/")
        beside = Submission(executor, second, "student", Budget(60.0)).look(tag)  # the first worker still runs
    finally:
        executor.close()
    executor = SandboxExecutor(isolation_for(mode))
    try:
        after = Submission(executor, second, "student", Budget(60.0)).look(tag)  # the first worker is gone
    finally:
        executor.close()
    on_host = _host_segment(tag)  # removed before anything is asserted
    assert beside == [] and after == []
    for folder in ("/tmp", "/dev/shm", "/var/tmp", "/run/lock"):  # nothing outlives the worker
        assert not os.path.lexists(f"{folder}/{tag}-left")
    assert on_host is None


LISTEN = '''
import socket

HELD = []


def listen(tag):
    """A socket other students' code might find: an abstract one."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(f"\\0{tag}-student")
    server.listen()
    HELD.append(server)
    return True
'''

CONNECT = '''
import socket


def connect(tag, port):
    """Which sockets of the machine and of the student beside it reach."""
    reached = []
    for family, address in ((socket.AF_INET, ("127.0.0.1", port)), (socket.AF_UNIX, f"\\0{tag}-machine"),
                            (socket.AF_UNIX, f"\\0{tag}-student")):
        client = socket.socket(family)
        client.settimeout(2)
        try:
            client.connect(address)
            reached.append(str(address))
        except OSError:
            pass
        finally:
            client.close()
    return reached
'''


def test_a_worker_reaches_no_socket_of_the_machine_or_another_worker(tmp_path, mode: str):
    # a network namespace per worker: in user mode, student code otherwise
    # reaches the machine's network and services; in one bubblewrap sandbox
    # (a class run), two students' code would otherwise talk to each other
    from pytest_autograd_grader.boundary.submission import Budget, Submission
    from pytest_autograd_grader.sandbox import SandboxExecutor

    tag = f"sock{os.getpid() % 100000}"
    tcp, abstract = socket.socket(), socket.socket(socket.AF_UNIX)
    tcp.bind(("127.0.0.1", 0))
    abstract.bind(f"\0{tag}-machine")
    for server in (tcp, abstract):
        server.listen()
    first, second = _two_students(tmp_path, LISTEN, CONNECT)
    executor = SandboxExecutor(isolation_for(mode))
    try:
        assert Submission(executor, first, "student", Budget(60.0)).listen(tag) is True
        reached = Submission(executor, second, "student", Budget(60.0)).connect(tag, tcp.getsockname()[1])
    finally:
        executor.close()
        tcp.close()
        abstract.close()
    assert reached == []


IN_VENV = """
import json
import sys
from pathlib import Path

from pytest_autograd_grader.boundary.submission import Budget, Submission
from pytest_autograd_grader.sandbox import SandboxExecutor, isolation_for

executor = SandboxExecutor(isolation_for(sys.argv[1]))
try:
    print(json.dumps(Submission(executor, Path(sys.argv[2]), "student", Budget(60.0)).only_in_venv()))
finally:
    executor.close()
"""

ONLY_IN_VENV = '''
def only_in_venv():
    """A package the grader's venv holds, the venv lying in /tmp."""
    import grade_only_here

    try:
        open(grade_only_here.__file__, "a").close()
        return [grade_only_here.WHERE, "writable"]
    except OSError:
        return [grade_only_here.WHERE, "read-only"]
'''


def test_a_venv_in_tmp_stays_in_sight_read_only(mode: str):
    # each worker's /tmp is an empty tmpfs of its own: the grader's Python,
    # made with `python -m venv /tmp/...`, must still be there, read-only
    import subprocess
    import tempfile

    if sys.prefix != sys.base_prefix:
        pytest.skip("a venv made from this venv's Python would not hold its packages (torch): run from a base Python")
    base = Path(tempfile.mkdtemp(prefix="grade-venv-", dir="/tmp"))
    try:
        base.chmod(0o755)
        venv = base / "venv"
        # torch, pytest and the rest: this Python's own packages
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
        site_dir = next(venv.glob("lib/python*/site-packages"))
        (site_dir / "grade_only_here.py").write_text("WHERE = 'the venv'\n")
        student = base / "student"
        student.mkdir()
        (student / "student.py").write_text(ONLY_IN_VENV)
        for path in (venv, *venv.rglob("*"), student, student / "student.py"):
            path.chmod(path.stat().st_mode | 0o055)  # as pip leaves a venv: readable by all
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", IN_VENV, mode, str(student)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads(done.stdout.strip().splitlines()[-1]) == ["the venv", "read-only"]
    finally:
        shutil.rmtree(base, ignore_errors=True)

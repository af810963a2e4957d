"""First contact, played the way users meet the grader on machines unlike
CI's: a clean clone in a fresh venv, a user who is not root, root with
Python behind a 0700 home and TMPDIR behind a 0700 folder, a PATH without
bubblewrap. (Gradescope's and GitHub Classroom's set-ups are played in
test_journey_platforms.py.)

The ones that build a venv and install torch carry the ``journey`` marker
(minutes each); the others take seconds and always run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from journeys import (
    NESTED,
    REPO,
    base_env,
    clean_clone,
    create_user,
    explain,
    remove_user,
    shared_dir,
    shell,
    skip_if_nested,
    system_python,
    venv_on_top,
)

REQUIRED = os.environ.get("GRADE_REQUIRE_ISOLATION", "").split(",")
TOTAL = re.compile(r"^TOTAL\s+(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)\s", re.M)


def quick_start() -> list[str]:
    """The README's quick start, as a user copies it: the first two bash
    blocks under '## Quick start' (install and grade; run the tests)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert len(blocks) >= 2, "the quick start has lost its two commands"
    return [block.strip() for block in blocks[:2]]


def student_install() -> str:
    """The README's install for students, as a student copies it: the
    inline command that installs the ``student`` extra."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"`(pip install [^`]*'\.\[student\]')`", text)
    assert found, "the README has lost the students' install command"
    return found.group(1)


def full_marks(output: str) -> bool:
    found = TOTAL.search(output)
    return found is not None and float(found.group(1)) == float(found.group(2)) > 0


def header(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("grade:")]


def bwrap_usable() -> bool:
    from pytest_autograd_grader.sandbox import Unavailable, isolation_for

    try:
        isolation_for("bwrap")
    except Unavailable as exc:
        if "bwrap" in REQUIRED:
            pytest.fail(str(exc))
        return False
    return True


# -- the slow journeys: a venv of their own, torch installed into it --------


@pytest.mark.journey
def test_a_clean_clone_in_a_fresh_venv_runs_the_readme_verbatim():
    """1. The README's two commands, typed into a fresh venv in a clean
    clone, made with the system's Python as on a new machine. The second
    command is this very suite: it runs whole (journeys skip inside it), with
    the isolation modes CI requires there (GRADE_JOURNEY_REQUIRE_ISOLATION:
    this Python is readable by every user, so a uid per worker works too)."""
    skip_if_nested()
    install, tests = quick_start()
    place = shared_dir("grade-journey-clone-")
    try:
        clone = clean_clone(place / "pytest-autograd-grader")
        python = system_python()
        env = base_env()
        done = shell(f"{python} -m venv .venv", cwd=clone, env=env, label="clone: python3 -m venv .venv")
        assert done.returncode == 0, explain(done)
        activate = "source .venv/bin/activate && "
        done = shell(activate + install, cwd=clone, env=env, label="clone: README install and grade")
        assert done.returncode == 0, explain(done)
        assert full_marks(done.stdout), explain(done)
        nested = base_env(
            **{NESTED: "1", "GRADE_REQUIRE_ISOLATION": os.environ.get("GRADE_JOURNEY_REQUIRE_ISOLATION", "")}
        )
        done = shell(activate + tests, cwd=clone, env=nested, timeout=2400, label="clone: README tests")
        assert done.returncode == 0, explain(done, 12000)
        assert re.search(r"\d+ passed", done.stdout), explain(done)
    finally:
        shutil.rmtree(place, ignore_errors=True)


@pytest.mark.journey
def test_a_user_who_is_not_root_installs_and_grades_in_a_venv_of_their_own():
    """2. A new account (not root, a 0700 home), a venv in that home: the
    README's install-and-grade command, the untouched stubs, and plain
    pytest out of habit."""
    skip_if_nested()
    user = create_user()
    try:
        clone = clean_clone(user.home / "pytest-autograd-grader")
        subprocess.run(["chown", "-R", f"{user.uid}:{user.gid}", str(clone)], check=True)
        install, _ = quick_start()
        env = user.env(PATH=f"{user.home}/venv/bin:/usr/local/bin:/usr/bin:/bin", VIRTUAL_ENV=f"{user.home}/venv")
        done = shell(
            f"{system_python()} -m venv {user.home}/venv",
            cwd=clone,
            user=user,
            env=env,
            label="user: python3 -m venv ~/venv",
        )
        assert done.returncode == 0, explain(done)
        done = shell(install, cwd=clone, user=user, env=env, label="user: README install and grade")
        assert done.returncode == 0, explain(done)
        assert full_marks(done.stdout), explain(done)
        if bwrap_usable():
            assert "isolation bwrap" in header(done.stdout)[0], header(done.stdout)
        assert len(header(done.stdout)) == len(set(header(done.stdout)))
        done = shell("pytest --grade exercises/", cwd=clone, user=user, env=env, label="user: grade the stubs")
        assert done.returncode == 1, explain(done)
        assert re.search(r"^TOTAL\s+0/\d+", done.stdout, re.M), explain(done)
        assert "not implemented yet" in done.stdout and "Traceback" not in done.stdout, explain(done)
        done = shell("pytest exercises/test_leaf.py", cwd=clone, user=user, env=env, label="user: plain pytest")
        assert done.returncode == 1, explain(done)
        assert "not implemented yet: leaf." in done.stdout and "Traceback" not in done.stdout, explain(done)
        assert "for your score per concept, run: pytest --grade exercises/test_leaf.py" in done.stdout, explain(done)

        # notebooks: written from the exercises, handed back untouched, graded cell by cell
        done = shell(
            "autograd-grader notebooks exercises -o notebooks && "
            "pytest --grade exercises/test_leaf.py --grade-submission=notebooks/",
            cwd=clone,
            user=user,
            env=env,
            label="user: the exercises as notebooks",
        )
        assert done.returncode == 1 and "wrote 12 notebook(s) to notebooks" in done.stdout, explain(done)
        assert re.search(r"next: leaf\.ipynb, cell \d+, line \d+: \[Leaf tensors\] not implemented yet", done.stdout), (
            explain(done)
        )
        # a student who installed the grader without its [notebook] extra is told to add it
        done = shell(
            "pip uninstall -y -q nbformat && pytest --grade exercises/test_leaf.py --grade-submission=notebooks/",
            cwd=clone,
            user=user,
            env=env,
            label="user: without nbformat",
        )
        assert done.returncode == 1 and "Traceback" not in done.stdout, explain(done)
        assert (
            "leaf.ipynb is a notebook, and reading notebooks needs the nbformat package here: "
            "pip install 'pytest-autograd-grader[notebook]'" in done.stdout
        ), explain(done)
    finally:
        remove_user(user)


@pytest.mark.journey
def test_a_student_installs_the_student_extra_and_plain_pytest_runs_the_course():
    """A student's clone in a fresh venv: the README's install for
    students (the `student` extra, nothing of the tests' or the class
    runner's), then plain `pytest` in the root out of habit: it runs the
    exercises' checks only, without scores, and says how to get them;
    `pytest --grade` scores the untouched stubs 0, the engine track's
    fuzzer included."""
    skip_if_nested()
    place = shared_dir("grade-journey-student-")
    try:
        clone = clean_clone(place / "course")
        env = base_env()
        done = shell(f"{system_python()} -m venv .venv", cwd=clone, env=env, label="student: python3 -m venv .venv")
        assert done.returncode == 0, explain(done)
        activate = "source .venv/bin/activate && "
        done = shell(activate + student_install(), cwd=clone, env=env, label="student: README install for students")
        assert done.returncode == 0, explain(done)
        done = shell(activate + "pip show -q selenium matplotlib", cwd=clone, env=env, label="student: no test extras")
        assert done.returncode != 0, explain(done)
        done = shell(activate + "pytest", cwd=clone, env=env, label="student: plain pytest")
        assert done.returncode == 1, explain(done)
        assert "tests/" not in done.stdout and re.search(r"\b45 failed\b", done.stdout), explain(done)
        assert "ran without scores; for your score per concept, run: pytest --grade" in done.stdout, explain(done)
        done = shell(activate + "pytest --grade", cwd=clone, env=env, label="student: pytest --grade")
        assert done.returncode == 1 and re.search(r"^TOTAL\s+0/\d+", done.stdout, re.M), explain(done)
        assert "Traceback" not in done.stdout and "engine extra" not in done.stdout, explain(done)
    finally:
        shutil.rmtree(place, ignore_errors=True)


@pytest.mark.journey
def test_a_colab_student_installs_the_wheel_and_checks_from_the_notebook():
    """3. A notebook in Colab: no clone and no course folder, only the
    grader's wheel with its [notebook] extra pip-installed into a fresh
    environment; the kernel defines the solutions and calls notebook.check,
    which grades them with the curriculum the package ships."""
    skip_if_nested()
    place = shared_dir("grade-journey-colab-")
    try:
        clean_clone(place / "src")
        env = base_env()
        done = shell(
            f"{system_python()} -m venv venv && venv/bin/pip install -q torch==2.13.0 && "
            "venv/bin/pip wheel -q --no-deps -w dist ./src && "
            'venv/bin/pip install -q "$(ls dist/*.whl)[notebook]"',
            cwd=place,
            env=env,
            label="colab: pip install the grader's wheel with [notebook]",
        )
        assert done.returncode == 0, explain(done)
        content = place / "content"  # Colab's working directory: nothing of the course in it
        content.mkdir()
        solution = (REPO / "solutions" / "leaf.py").read_text()
        (content / "kernel.py").write_text(
            "import sys\n"
            f"exec(compile({solution!r}, '/tmp/ipykernel_7/2.py', 'exec'), vars(sys.modules['__main__']))\n"
            "from pytest_autograd_grader import notebook\n"
            "graded = notebook.check('leaf')\n"
            "print(graded)\n"
            "print(graded._repr_html_())\n"
        )
        done = shell(f"{place}/venv/bin/python kernel.py", cwd=content, env=env, label="colab: notebook.check")
        assert done.returncode == 0 and "Traceback" not in done.stdout, explain(done)
        assert "Total: 9 / 9 (100.0%)" in done.stdout and "<table>" in done.stdout, explain(done)
        assert "graded in the sandbox's" in done.stdout, explain(done)
    finally:
        shutil.rmtree(place, ignore_errors=True)


# -- the quick ones: this Python, set up as users have it ----------------------


def test_plain_pytest_in_the_clones_root_collects_the_exercises_only():
    """What a student types out of habit in the clone's root collects the
    course's checks (testpaths), never the grader's own suite."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert ids and all(i.startswith("exercises/test_") for i in ids), done.stdout[-3000:]
    topics = {p.name for p in (REPO / "exercises").glob("test_*.py")}
    assert {i.split("::")[0].split("/")[1] for i in ids} == topics


def _course(work: Path) -> None:
    shutil.copytree(REPO / "exercises", work / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "solutions", work / "solutions", ignore=shutil.ignore_patterns("__pycache__"))


def _closed(prefix: str) -> Path:
    """A folder only root may enter, like ``mktemp -d`` makes."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(path, 0o700)
    return path


def _grade(
    python: str, work: Path, env: dict[str, str], *args: str, paths=("exercises/",)
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            python,
            "-m",
            "pytest",
            "--grade",
            *paths,
            "--grade-submission=solutions/",
            "-p",
            "no:cacheprovider",
            "--grade-json",
            "report.json",
            *args,
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture
def closed_home(request):
    """As root: a venv with this Python's packages under a 0700 folder,
    TMPDIR and the working directory under 0700 folders too, and none of the
    chmods that would open them."""
    if os.geteuid() != 0:
        pytest.skip("a 0700 home closes Python to other users only when the grader is root")
    home, tmp = _closed("grade-home-"), _closed("grade-tmp-")
    request.addfinalizer(lambda: [shutil.rmtree(p, ignore_errors=True) for p in (home, tmp)])
    python = venv_on_top(home / "venv")
    work = home / "work"
    work.mkdir()
    _course(work)
    return python, work, base_env(TMPDIR=str(tmp)), home


def test_root_with_python_and_tmp_behind_0700_folders_grades_in_bwrap(closed_home):
    """3. Root, Python under a 0700 home, TMPDIR and the working directory
    under 0700 folders: bubblewrap gets what its uid cannot reach from root
    (handoff.py), and every header line is true."""
    python, work, env, home = closed_home
    if not bwrap_usable():
        pytest.skip("bubblewrap cannot run here")
    done = _grade(python, work, env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert json.loads((work / "report.json").read_text())["percent"] == 100.0
    lines = header(done.stdout)
    assert "isolation bwrap" in lines[0] and len(lines) == 1, lines
    # a uid per worker cannot read that Python: said once, with the command that fixes it
    done = _grade(python, work, env, "--grade-isolation", "user")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:] + done.stderr[-2000:]
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith(
        "ERROR: --grade-isolation user: student code would run as a uid of its own, which cannot enter"
    )
    assert str(home) in error and "chmod o+x" in error and error.count("cannot enter") == 1, error


def _path_without_bwrap() -> str:
    return os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not os.path.exists(os.path.join(p, "bwrap"))
    )


def test_without_bubblewrap_the_header_names_each_missing_mode_once(closed_home):
    """4. bubblewrap absent (a PATH without it), as root with Python behind
    a 0700 home: processes only, and the header says why once per mode,
    each with the step that gets it."""
    python, work, env, home = closed_home
    env = {**env, "PATH": _path_without_bwrap()}
    done = _grade(python, work, env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert json.loads((work / "report.json").read_text())["percent"] == 100.0
    lines = header(done.stdout)
    assert "isolation process" in lines[0], lines
    assert len(lines) == len(set(lines)) == 5, lines
    assert lines[1].startswith("grade: not protected: student code runs as your own user")
    assert lines[2].startswith("grade: not protected: numpy-only exercises (the engine track) are not enforced")
    assert lines[3] == (
        "grade: no bwrap isolation: bubblewrap (bwrap) is not installed or not on PATH; "
        "to use it: apt-get install bubblewrap (or your system's bubblewrap package)"
    )
    assert (
        lines[4].startswith("grade: no user isolation: student code would run as a uid of its own, which cannot enter")
        and "to use it: chmod o+x" in lines[4]
        and str(home) in lines[4]
    )
    assert "run the grader as root" not in done.stdout


@pytest.mark.parametrize("mode", ["bwrap", "user", "process"])
def test_tmpdir_and_working_directory_behind_0700_folders_grade_in_every_mode(mode, tmp_path):
    """TMPDIR and the working directory inside folders only their owner may
    enter (mktemp -d): the sandbox stages submissions and workers'
    directories where its uids can reach them, in each mode that runs here."""
    from test_isolation import require_isolation

    require_isolation(mode)
    tmp, work = _closed("grade-tmp-"), _closed("grade-work-")
    try:
        _course(work)
        done = _grade(
            sys.executable,
            work,
            base_env(TMPDIR=str(tmp)),
            "--grade-isolation",
            mode,
            paths=("exercises/test_leaf.py", "exercises/test_engine.py"),
        )
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        assert json.loads((work / "report.json").read_text())["percent"] == 100.0
        assert f"isolation {mode}" in header(done.stdout)[0]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def test_bubblewrap_refused_by_the_kernel_is_named_with_the_setting_that_allows_it():
    """bubblewrap installed but refused user namespaces (Ubuntu 24.04's
    AppArmor default, Docker's seccomp): the header names bubblewrap's own
    complaint and the kernel setting, and grading goes on in the next mode."""
    place = shared_dir("grade-fake-bwrap-")  # where any uid may run it, as /usr/bin
    fake = place / "bin" / "bwrap"
    fake.parent.mkdir(mode=0o755)
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel "
        "does not allow non-privileged user namespaces.' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    work = _closed("grade-work-")
    try:
        _course(work)
        env = base_env(PATH=f"{fake.parent}{os.pathsep}{os.environ.get('PATH', '')}")
        done = _grade(sys.executable, work, env, paths=("exercises/test_leaf.py",))
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        lines = header(done.stdout)
        assert len(lines) == len(set(lines)), lines
        bwrap = [line for line in lines if line.startswith("grade: no bwrap isolation:")]
        assert bwrap == [
            "grade: no bwrap isolation: bwrap: No permissions to creating new namespace, likely because "
            "the kernel does not allow non-privileged user namespaces.; to use it: allow unprivileged "
            "user namespaces (sysctl -w kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 also sysctl "
            "-w kernel.apparmor_restrict_unprivileged_userns=0); a Docker container also needs "
            "--security-opt seccomp=unconfined --security-opt apparmor=unconfined"
        ], lines
        assert "isolation bwrap" not in lines[0]
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(place, ignore_errors=True)


def test_root_without_mount_rights_is_told_the_chmod_that_opens_python(closed_home):
    """Root in a container without CAP_SYS_ADMIN (Docker's default) cannot
    hand bubblewrap what its uid cannot reach: the header says so and names
    the chmod, the same one a uid per worker needs."""
    python, work, env, home = closed_home
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    if not bwrap_usable():
        pytest.skip("bubblewrap cannot run here")
    done = subprocess.run(
        [
            "setpriv",
            "--bounding-set",
            "-sys_admin",
            "--",
            python,
            "-m",
            "pytest",
            "--grade",
            "exercises/test_leaf.py",
            "--grade-submission=solutions/",
            "-p",
            "no:cacheprovider",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    lines = header(done.stdout)
    assert "isolation process" in lines[0] and len(lines) == len(set(lines)), lines
    bwrap = next(line for line in lines if line.startswith("grade: no bwrap isolation:"))
    assert "handoff: unshare(CLONE_NEWNS): Operation not permitted" in bwrap and "to use it: chmod o+x" in bwrap
    assert str(home) in bwrap, bwrap

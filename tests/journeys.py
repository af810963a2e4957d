"""What journey tests share: a clean copy of this repository, fresh virtual
environments, users of their own, and shell commands run the way a person
types them.

Journeys play a user's first contact on a fresh environment (a new venv, a
non-root user, a Gradescope root, a GitHub runner's shell). They are slow
(each venv installs torch), so they carry the ``journey`` marker: CI always
runs them, a developer may leave them out with ``-m "not journey"``. Inside
a journey's own run of this suite (the README's test command in a fresh
venv), ``GRADE_JOURNEY_NESTED`` is set and journeys skip, so they never
recurse.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NESTED = "GRADE_JOURNEY_NESTED"


def skip_if_nested() -> None:
    if os.environ.get(NESTED):
        pytest.skip("a journey does not run inside another journey's run of this suite")


def shared_dir(prefix: str) -> Path:
    """A directory every user may enter (0755), outside pytest's own
    temporary tree (which is 0700): a venv other uids must run from lives
    here. Removed by the caller."""
    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path(tempfile.gettempdir())
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    os.chmod(path, 0o755)
    return path


def clean_clone(dest: Path) -> Path:
    """What a clean clone of this repository holds: the files git tracks,
    plus the new files it would commit (tracked or not ignored), as they are
    now. Nothing built, cached or installed comes along."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    dest.mkdir(parents=True, exist_ok=True)
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if not source.is_file() and not source.is_symlink():
            continue  # deleted in the working tree
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    return dest


def system_python() -> str:
    """The Python a user of a fresh machine makes a venv with: the system's
    python3 where there is one, else the one running these tests."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            done = subprocess.run([candidate, "-c", "import venv, ensurepip"], capture_output=True)
            if done.returncode == 0:
                return candidate
    return sys.executable


@dataclass
class User:
    name: str
    uid: int
    gid: int
    home: Path

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a login as this user: the caller's PATH and pip
        settings (this machine's package mirrors), the user's own HOME."""
        env = {k: v for k, v in os.environ.items() if k.startswith(("PIP_", "LANG", "LC_", "TERM"))}
        env.update(PATH=os.environ.get("PATH", "/usr/bin:/bin"), HOME=str(self.home), USER=self.name, LOGNAME=self.name)
        env.update(extra)
        return env


def create_user(prefix: str = "gradej") -> User:
    """A new unprivileged user with a home of its own (0700, as useradd
    makes it); removed with ``remove_user``."""
    if os.geteuid() != 0:
        pytest.skip("creating a user needs root")
    if shutil.which("useradd") is None:
        pytest.skip("useradd is not installed")
    name = f"{prefix}{os.getpid() % 100000}"
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True, capture_output=True)
    entry = pwd.getpwnam(name)
    home = Path(entry.pw_dir)
    os.chmod(home, 0o700)
    return User(name, entry.pw_uid, entry.pw_gid, home)


def remove_user(user: User) -> None:
    subprocess.run(["pkill", "-KILL", "-u", user.name], capture_output=True)
    subprocess.run(["userdel", "--remove", user.name], capture_output=True)
    shutil.rmtree(user.home, ignore_errors=True)


def shell(
    command: str,
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    user: User | None = None,
    timeout: float = 900,
    label: str | None = None,
) -> subprocess.CompletedProcess:
    """Run ``command`` in bash, as ``user`` when given, and print its wall
    time (seen with -s, without xdist). Output is captured as text (stdout
    and stderr together)."""
    import time

    kwargs = {}
    if user is not None:
        kwargs = {"user": user.uid, "group": user.gid, "extra_groups": []}
        env = env if env is not None else user.env()
    started = time.monotonic()
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        **kwargs,
    )
    elapsed = time.monotonic() - started
    print(f"[{elapsed:6.1f} s] {label or command}")
    return done


def explain(done: subprocess.CompletedProcess, tail: int = 6000) -> str:
    return f"exit status {done.returncode}\n{done.stdout[-tail:]}"


def base_env(**extra: str) -> dict[str, str]:
    """This process's environment without what would steer a journey's own
    Python (a venv of ours, PYTHONPATH, bytecode settings, the tests' own
    plugins) or a GitHub job."""
    drop = (
        "VIRTUAL_ENV",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONDONTWRITEBYTECODE",
        "GITHUB_ACTIONS",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_OUTPUT",
        "GITHUB_WORKSPACE",
        "PYTEST_ADDOPTS",
        "PYTEST_XDIST_WORKER",
        "PYTEST_XDIST_WORKER_COUNT",
        "PYTEST_CURRENT_TEST",
        "PYTEST_PLUGINS",
    )
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


def venv_on_top(path: Path) -> str:
    """A venv at ``path`` (no pip) whose Python sees the packages of the
    Python running these tests, whether that one is a venv itself or not:
    its site-packages is a link to this one's (.pth files, an editable
    install's among them, work as here). Answers its interpreter."""
    import sysconfig
    import venv

    venv.EnvBuilder(with_pip=False).create(path)
    python = str(path / "bin" / "python")
    purelib = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    shutil.rmtree(purelib)
    purelib.symlink_to(sysconfig.get_paths()["purelib"])
    return python

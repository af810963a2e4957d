"""Starting the sandbox: one launcher and zygote per isolation, shared by
every executor of the pytest process, and stopped at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import isolation as iso
from . import leftovers
from .keeper import kill_group
from .worker_handle import KILL_TIMEOUT_S, close_fd, send_kill
from .zygote import wait_gone

SPAWN_TIMEOUT_S = 120.0  # zygote start (imports torch) plus one fork
HUGE_MALLOC = "glibc.malloc.hugetlb=1"


def _hand_over(binds: list[tuple[str, str]], host: Path) -> tuple[list[tuple[str, str]], list[list[str]]]:
    """Binds whose source another uid cannot reach get a mount point under
    ``host`` (in the sandbox's base, which it can) for handoff.py to bind
    them onto; answers the new binds and [source, mount point] pairs."""
    new: list[tuple[str, str]] = []
    handed: list[list[str]] = []
    for source, dest in binds:
        if dest != iso.SANDBOX_STAGE and iso.blocked_dirs([source]):  # the stage lies in the base already
            if not handed:
                host.mkdir(mode=0o711)
                os.chmod(host, 0o711)  # whatever the umask: the uid passes through to the mount points
            point = host / str(len(handed))
            point.mkdir()
            handed.append([source, str(point)])
            source = str(point)
        new.append((source, dest))
    return new, handed


def _cow_splits_huge_pages() -> bool:
    """Whether a worker's first write to a 2 MB page it shares with the
    zygote copies 4 KB of it (Linux 5.8+), not all 2 MB (every worker would
    then copy much of the zygote's heap)."""
    try:
        release = tuple(int(part) for part in os.uname().release.split("-")[0].split(".")[:2])
    except (ValueError, AttributeError):
        return False
    return release >= (5, 8)


class _Sandbox:
    """One zygote behind one isolation, shared by every executor of the
    pytest process (pytester's in-process runs included): it holds nothing
    but imported modules, and student code never runs in it."""

    def __init__(
        self, isolation: iso.Isolation, numpy_only: bool = False, folder: Path | None = None, connections: int = 1
    ) -> None:
        self.isolation = isolation
        # grading processes it serves at once (the class runner's workers),
        # each on a control socket of its own: views() hands them out
        self.connections = connections
        self.controls: list[socket.socket] = []
        self.shared = False  # a view of a sandbox that also serves other processes: never stopped by us
        self.numpy_only = numpy_only  # a zygote without torch, for the engine track
        self.folder = folder  # where its own folder is made (default: isolation.sandbox_parent)
        self.launcher: subprocess.Popen | None = None
        # the launcher's pidfd: whether it runs, also in a process forked from
        # the one that started it (a class worker), where Popen.poll() cannot tell
        self.launcher_fd: int | None = None
        self.control: socket.socket | None = None
        self.base: Path | None = None
        self.status_pipe: int | None = None  # bubblewrap's --json-status-fd
        self.counter = itertools.count(1)
        self.prefix = ""  # of its staged submissions' folder names: a view's own

    def views(self) -> list[_Sandbox]:
        """One sandbox per control socket, for processes about to be forked:
        each asks for its workers on its own socket and names its staged
        submissions apart, and none of them stops the sandbox (it ends when
        the last one closes its socket)."""
        made = []
        for number, control in enumerate(self.controls):
            view = _Sandbox(self.isolation, self.numpy_only, self.folder)
            view.launcher, view.launcher_fd, view.base, view.status_pipe = (
                self.launcher,
                self.launcher_fd,
                self.base,
                self.status_pipe,
            )
            view.control, view.controls, view.shared, view.prefix = control, [control], True, f"{number}-"
            made.append(view)
        return made

    def alive(self) -> bool:
        return self.launcher_fd is not None and self.control is not None and not wait_gone(self.launcher_fd, 0)

    def log_tail(self) -> str:
        try:
            text = (self.base / "zygote.log").read_text(errors="replace") if self.base else ""
        except OSError:
            return ""
        return text.strip()[-1500:]

    def start(self) -> None:
        if self.alive():
            return
        self.stop()
        base = self.base = self._make_base()
        pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(max(1, self.connections))]
        log = os.open(base / "zygote.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        # written only through this descriptor: a worker of our own uid that
        # sees bubblewrap's pid 1 (no PID namespaces of the keepers) must not
        # reopen its stderr, /proc/1/fd/2, to put words in the grader's messages
        os.fchmod(log, 0o400)
        pass_fds = [theirs.fileno() for _, theirs in pairs]
        python = [sys.executable, "-P", "-m", "pytest_autograd_grader.sandbox", ",".join(map(str, pass_fds))]
        write_end = None
        if self.isolation.mode == "bwrap":
            read_end, write_end = os.pipe()
            self.status_pipe = read_end
            pass_fds.append(write_end)
            command, env, kwargs = self._in_bwrap(base, python, write_end)
        else:
            os.symlink(iso.PACKAGE_DIR, base / "lib" / iso.PACKAGE_DIR.name)
            command, env, kwargs = python + self._flags(), iso.worker_env(str(base / "lib"), str(base / "work")), {}
        if _cow_splits_huge_pages():
            # malloc's memory on 2 MB pages from the start (glibc 2.35+; ignored
            # elsewhere): zygote.huge_pages then has little left to move
            env["GLIBC_TUNABLES"] = ":".join(filter(None, [os.environ.get("GLIBC_TUNABLES"), HUGE_MALLOC]))
        try:
            self.launcher = subprocess.Popen(
                command,
                pass_fds=pass_fds,
                cwd=base,
                env=env,
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                **kwargs,
            )
            self.launcher_fd = os.pidfd_open(self.launcher.pid)
        finally:
            for _, theirs in pairs:
                theirs.close()
            os.close(log)
            close_fd(write_end)
        self.controls = [ours for ours, _ in pairs]
        self.control = self.controls[0]

    def _flags(self) -> list[str]:
        return ["numpy-only"] if self.numpy_only else []

    def _make_base(self) -> Path:
        """The sandbox's own folder, with its stage, work and lib folders
        (what runs that were killed left beside it removed first)."""
        other_uids = self.isolation.mode == "user" or self.isolation.uid is not None
        parent = self.folder if self.folder is not None else iso.sandbox_parent(other_uids)
        leftovers.sweep(parent)
        base = Path(tempfile.mkdtemp(prefix="grade-sandbox-", dir=parent))
        leftovers.claim(base)
        # others may pass through (workers' own uids reach their directories), not list
        os.chmod(base, 0o711)
        for name in ("stage", "work", "lib"):
            (base / name).mkdir(mode=0o711)
            os.chmod(base / name, 0o711)  # whatever the umask (a class run's is 077)
        return base

    def _in_bwrap(
        self, base: Path, python: list[str], status_fd: int
    ) -> tuple[list[str], dict[str, str], dict[str, Any]]:
        """The command that starts the zygote in bubblewrap, its environment
        and Popen's arguments for the uid it runs as."""
        uid = self.isolation.uid
        binds = iso.sandbox_binds(str(base / "stage"))
        # the engine track's sandbox holds no torch at all: an engine that
        # removes the import hook still finds nothing to import
        hidden = iso.torch_dirs(binds) if self.numpy_only else []
        handed: list[list[str]] = []
        if uid is not None:
            os.chown(base / "stage", uid, uid)
            binds, handed = _hand_over(binds, base / "host")
        command = iso.bwrap_command(binds, hidden) + [
            "--json-status-fd",
            str(status_fd),
            "--",
            *python,
            "bwrap",
            *self._flags(),
        ]
        kwargs: dict[str, Any] = {}
        if handed:
            # root binds what the uid cannot reach, then becomes the uid (handoff.py)
            spec = json.dumps({"binds": handed, "uid": uid})
            command = [sys.executable, "-I", "-S", str(Path(__file__).with_name("handoff.py")), spec, *command]
        elif uid is not None:
            kwargs = {"user": uid, "group": uid, "extra_groups": []}
        return command, iso.worker_env(iso.SANDBOX_LIB, "/tmp"), kwargs

    def _bwrap_child(self) -> int | None:
        """bubblewrap's first process inside (pid 1 of the sandbox), from its
        --json-status-fd."""
        if self.status_pipe is None:
            return None
        try:
            os.set_blocking(self.status_pipe, False)
            data = os.read(self.status_pipe, 1 << 16).decode(errors="replace")
        except OSError:
            return None
        for line in data.splitlines():
            try:
                info = json.loads(line)
            except ValueError:
                continue
            if type(info) is dict and type(info.get("child-pid")) is int:
                return info["child-pid"]
        return None

    def stop(self) -> bool:
        """End the zygote and, with it, every process in the sandbox; True
        when that is verified. A view only lets go of its socket: the
        zygote ends the workers it asked for, and serves the others."""
        if self.shared:
            self._let_go()
            return True
        verified = True
        child = self._bwrap_child()
        pidfd = None
        if child is not None:
            try:
                pidfd = os.pidfd_open(child)
            except OSError:
                pidfd = None
        controls: list[socket.socket | None] = [*self.controls] or [self.control]
        for control in controls:
            if control is not None:
                with contextlib.suppress(OSError):
                    control.close()
        self.control, self.controls = None, []
        if pidfd is not None:
            # pid 1 of the sandbox: its death ends every process inside
            send_kill(pidfd)
            verified = wait_gone(pidfd, KILL_TIMEOUT_S)
            os.close(pidfd)
        killed = self._end_launcher()
        if killed is not None:
            verified = killed
        close_fd(self.status_pipe)
        self.status_pipe = None
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None
        return verified

    def _let_go(self) -> None:
        """A view's stop: its socket closed, and the sandbox forgotten."""
        if self.control is not None:
            with contextlib.suppress(OSError):
                self.control.close()
        self.control, self.controls, self.launcher, self.launcher_fd = None, [], None, None
        self.status_pipe, self.base = None, None
        self.shared = False  # started again, it is a sandbox of its own

    def _end_launcher(self) -> bool | None:
        """Wait for the launcher to end, killed if it does not: None where it
        ended by itself (or there was none), else whether it was seen to end."""
        launcher, self.launcher = self.launcher, None
        launcher_fd, self.launcher_fd = self.launcher_fd, None
        verified = None
        if launcher is not None:
            # waited for by its pidfd: Popen.wait() answers at once in a forked
            # class worker, which is not the launcher's parent
            if launcher_fd is None or not wait_gone(launcher_fd, 3):
                kill_group(launcher.pid)
                verified = launcher_fd is None or wait_gone(launcher_fd, 5)
            launcher.poll()  # reaped where we are its parent
        close_fd(launcher_fd)
        return verified

    def ask(self, message: dict, fds=(), timeout: float = SPAWN_TIMEOUT_S) -> tuple[dict | None, list[int]]:
        control = self.control
        if control is None:
            return None, []
        try:
            control.settimeout(timeout)
            socket.send_fds(control, [json.dumps(message).encode()], list(fds))
            data, received, _, _ = socket.recv_fds(control, 1 << 16, 4)
        except OSError:
            return None, []
        try:
            reply = json.loads(data) if data else None
        except ValueError:
            reply = None
        if type(reply) is not dict:
            for fd in received:
                close_fd(fd)
            return None, []
        return reply, list(received)


def sandbox_of(isolation: iso.Isolation, numpy_only: bool = False) -> _Sandbox:
    from ..process_state import PROCESS  # lives as long as the package (see there)

    sandboxes = PROCESS.sandboxes
    key = (isolation.mode, isolation.uid, numpy_only)
    sandbox = sandboxes.get(key)
    if sandbox is None:
        sandbox = sandboxes[key] = _Sandbox(isolation, numpy_only)
        atexit.register(sandbox.stop)
    return sandbox


def stop_all() -> None:
    """Stop every zygote of this process and forget the isolations chosen:
    for a process about to fork workers that must each start their own (the
    class runner, after checking --isolation)."""
    from ..process_state import forget_sandboxes

    forget_sandboxes()

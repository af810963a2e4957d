"""The grader's side of the sandbox: start it, hand it requests, read the
answers, and decide, from outside, when a worker must go.

Nothing but plain bytes crosses back: control messages are JSON, answers are
``records.dumps`` bytes that the grader decodes with ``records.loads``.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..messages import msg
from ..outcomes import GraderError
from . import isolation as iso
from .framing import HEADER, describe_status, frame, recv_frame
from .staging import StageError, stage
from .zygote import STATUS, children_of, kill_group, wait_gone

OUTPUT_LIMIT = 4000            # characters of a call's output kept for feedback
ANSWER_LIMIT = 1 << 30          # bytes: a bigger answer is refused (the worker is replaced)
SPAWN_TIMEOUT_S = 120.0         # zygote start (imports torch) plus one fork
KILL_TIMEOUT_S = 5.0
# Threads torch and the CUDA driver start by themselves, by name; any other
# thread left in a worker after an answer is the student's, and the worker
# is replaced before the next check.
LIBRARY_THREADS = ("pt_autograd_", "cuda", "pt_main_thread")


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def _host_pid(pidfd: int) -> int | None:
    try:
        for line in _read(f"/proc/self/fdinfo/{pidfd}").splitlines():
            if line.startswith("Pid:"):
                pid = int(line.split()[1])
                return pid if pid > 0 else None
    except (OSError, ValueError, IndexError):
        pass
    return None


def _send_kill(pidfd: int | None) -> None:
    if pidfd is None:
        return
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass


def _close(fd: int | None) -> None:
    if fd is not None and fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass


def sweep_uid(uid: int, seconds: float = KILL_TIMEOUT_S) -> bool:
    """Kill every process of ``uid`` until none is left; True when none is.
    Each is pinned with a pidfd and checked again before the signal, so a
    recycled pid is never hit."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pids = iso.pids_of_uid(uid)
        if not pids:
            return True
        for pid in pids:
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                if uid in iso.uids_of(pid):  # still the same process, pinned by the pidfd
                    _send_kill(pidfd)
            finally:
                os.close(pidfd)
        time.sleep(0.002)
    return not iso.pids_of_uid(uid)


class _Output:
    """Reads a worker's stdout/stderr pipe, keeping only the first part."""

    def __init__(self, fd: int, limit: int = OUTPUT_LIMIT):
        self.fd = fd
        self.kept = bytearray()
        self.limit = limit * 4  # bytes; cut to characters in text()
        self.dropped = 0

    def drain(self) -> bool:
        """Read what is there now; False at end of file."""
        if self.fd < 0:
            return False
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            room = self.limit - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]
            self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        more = self.dropped + max(0, len(text) - OUTPUT_LIMIT)
        text = text[:OUTPUT_LIMIT]
        if more or self.dropped:
            text += f"\n... (output cut: only the first {OUTPUT_LIMIT} characters are shown)"
        return text


class _Worker:
    """The grader's handle on one worker: its socket and output pipe, and
    pidfds of its keeper and of the worker itself."""

    def __init__(self, sock: socket.socket, output_fd: int, status_fd: int, keeper_fd: int, pidns: bool,
                 uid: int | None, dirs: list[Path]):
        self.sock = sock
        self.output_fd = output_fd
        self.status_fd = status_fd
        self.keeper_fd = keeper_fd
        self.keeper_pid = _host_pid(keeper_fd)
        self.pidns = pidns
        self.uid = uid
        self.dirs = dirs
        self.worker_fd: int | None = None
        self.worker_pid: int | None = None
        self.seq = 0
        self.loaded: set[str] = set()  # modules this worker has imported

    def find_worker(self) -> None:
        """The worker is the keeper's only child; pin it with a pidfd."""
        if self.keeper_pid is None:
            return
        children = children_of(self.keeper_pid)
        if len(children) == 1:
            try:
                self.worker_fd = os.pidfd_open(children[0])
                self.worker_pid = children[0]
            except OSError:
                pass

    def left_behind(self) -> bool:
        """Whether the worker holds a thread or a process beyond itself:
        read from /proc by the grader, never taken from the worker's word.
        Orphans end up as the keeper's children (it is pid 1 of the
        worker's namespace, or its subreaper)."""
        worker, keeper = self.worker_pid, self.keeper_pid
        if worker is None or keeper is None:
            return True
        try:
            tasks = os.listdir(f"/proc/{worker}/task")
        except OSError:
            return True
        cuda = None
        for tid in tasks:
            if int(tid) != worker:
                try:
                    name = _read(f"/proc/{worker}/task/{tid}/comm").strip()
                except OSError:
                    continue
                if cuda is None:
                    # a thread may call itself anything: the names count only
                    # where the CUDA driver is really loaded
                    try:
                        cuda = "libcuda.so" in _read(f"/proc/{worker}/maps")
                    except OSError:
                        cuda = False
                if not (cuda and name.startswith(LIBRARY_THREADS)):
                    return True
        if children_of(worker):
            return True
        return any(pid != worker for pid in children_of(keeper))

    def status(self) -> int | None:
        """The worker's wait status, as its keeper wrote it (None if not)."""
        try:
            data = os.read(self.status_fd, STATUS.size)
        except OSError:
            return None
        return STATUS.unpack(data)[0] if len(data) == STATUS.size else None

    def retire(self, died: bool = False) -> tuple[int | None, bool]:
        """Kill the worker and everything it started; answer its wait status
        (when known) and whether every one of its processes is verifiably
        gone."""
        if died:
            wait_gone(self.keeper_fd, 2.0)  # the keeper writes the status, then ends by itself
        cleaned = False
        if not self.pidns and self.worker_fd is not None:
            # No namespace to collapse: killing the worker makes the keeper
            # kill the orphans it adopted, then end.
            _send_kill(self.worker_fd)
            cleaned = wait_gone(self.keeper_fd, 4.0)
        _send_kill(self.keeper_fd)
        gone = wait_gone(self.keeper_fd, KILL_TIMEOUT_S)
        if self.uid is not None:
            cleaned = sweep_uid(self.uid)
        verified = gone and (self.pidns or cleaned)
        os.set_blocking(self.status_fd, False)
        status = self.status()
        for fd in (self.status_fd, self.output_fd, self.keeper_fd, self.worker_fd):
            _close(fd)
        self.output_fd = -1
        try:
            self.sock.close()
        except OSError:
            pass
        for directory in self.dirs:
            shutil.rmtree(directory, ignore_errors=True)
        return status, verified

    def exchange(self, header: dict, payload: bytes, deadline: float, limit: int):
        """Send one request; answer ("ok", reply header, answer bytes, output),
        ("timeout", …), ("eof", …) or ("too_large", size, None, output)."""
        self.seq += 1
        header = {**header, "seq": self.seq}
        output = _Output(self.output_fd)
        data = memoryview(frame(json.dumps(header).encode()) + frame(payload))
        buffer = bytearray()
        frames: list[bytes] = []
        sock = self.sock
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN | select.POLLOUT)
        poller.register(self.output_fd, select.POLLIN)
        sock.setblocking(False)
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    output.drain()
                    return "timeout", None, None, output.text()
                for fd, events in poller.poll(left * 1000):
                    if fd == self.output_fd:
                        if not output.drain():
                            poller.unregister(self.output_fd)
                        continue
                    if events & select.POLLOUT and data:
                        try:
                            sent = sock.send(data)
                        except BlockingIOError:
                            sent = 0
                        except OSError:
                            return "eof", None, None, output.text()
                        data = data[sent:]
                        if not data:
                            poller.modify(sock.fileno(), select.POLLIN)
                    if events & (select.POLLIN | select.POLLHUP | select.POLLERR):
                        try:
                            chunk = sock.recv(1 << 20)
                        except BlockingIOError:
                            continue
                        except OSError:
                            chunk = b""
                        if not chunk:
                            output.drain()
                            return "eof", None, None, output.text()
                        buffer += chunk
                        while len(buffer) >= HEADER.size:
                            size = HEADER.unpack_from(buffer)[0]
                            if size > limit:
                                output.drain()
                                return "too_large", size, None, output.text()
                            if len(buffer) < HEADER.size + size:
                                break
                            frames.append(bytes(buffer[HEADER.size:HEADER.size + size]))
                            del buffer[:HEADER.size + size]
                        if len(frames) >= 2:
                            # the answer was sent after the output was flushed, so the
                            # pipe already holds all of this call's output
                            output.drain()
                            try:
                                reply = json.loads(frames[0])
                            except ValueError:
                                reply = None
                            if type(reply) is not dict or reply.get("seq") != self.seq or frames[2:] or buffer:
                                return "eof", None, None, output.text()
                            return "ok", reply, frames[1], output.text()
        finally:
            try:
                sock.setblocking(True)
            except OSError:
                pass


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


class _Sandbox:
    """One zygote behind one isolation, shared by every executor of the
    pytest process (pytester's in-process runs included): it holds nothing
    but imported modules, and student code never runs in it."""

    def __init__(self, isolation: iso.Isolation, numpy_only: bool = False) -> None:
        self.isolation = isolation
        self.numpy_only = numpy_only  # a zygote without torch, for the engine track
        self.launcher: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.base: Path | None = None
        self.status_pipe: int | None = None  # bubblewrap's --json-status-fd
        self.counter = itertools.count(1)

    def alive(self) -> bool:
        return self.launcher is not None and self.launcher.poll() is None and self.control is not None

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
        mode, uid = self.isolation.mode, self.isolation.uid
        other_uids = mode == "user" or uid is not None
        base = self.base = Path(tempfile.mkdtemp(prefix="grade-sandbox-", dir=iso.sandbox_parent(other_uids)))
        # others may pass through (workers' own uids reach their directories), not list
        os.chmod(base, 0o711)
        for name in ("stage", "work", "lib"):
            (base / name).mkdir(mode=0o711)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        log = os.open(base / "zygote.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        pass_fds = [theirs.fileno()]
        kwargs: dict = {}
        python = [sys.executable, "-P", "-m", "pytest_autograd_grader.sandbox", str(theirs.fileno())]
        flags = ["numpy-only"] if self.numpy_only else []
        if mode == "bwrap":
            read_end, write_end = os.pipe()
            self.status_pipe = read_end
            pass_fds.append(write_end)
            binds = iso.sandbox_binds(str(base / "stage"))
            handed: list[list[str]] = []
            if uid is not None:
                os.chown(base / "stage", uid, uid)
                binds, handed = _hand_over(binds, base / "host")
            command = iso.bwrap_command(binds) + ["--json-status-fd", str(write_end), "--", *python, "bwrap", *flags]
            if handed:
                # root binds what the uid cannot reach, then becomes the uid (handoff.py)
                spec = json.dumps({"binds": handed, "uid": uid})
                command = [sys.executable, "-I", "-S", str(Path(__file__).with_name("handoff.py")), spec, *command]
            elif uid is not None:
                kwargs = {"user": uid, "group": uid, "extra_groups": []}
            env = iso.worker_env(iso.SANDBOX_LIB, "/tmp")
        else:
            os.symlink(iso.PACKAGE_DIR, base / "lib" / iso.PACKAGE_DIR.name)
            command = python + flags
            env = iso.worker_env(str(base / "lib"), str(base / "work"))
        try:
            self.launcher = subprocess.Popen(
                command, pass_fds=pass_fds, cwd=base, env=env, start_new_session=True,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, **kwargs)
        finally:
            theirs.close()
            os.close(log)
            if mode == "bwrap":
                os.close(pass_fds[1])
        self.control = ours

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
        when that is verified."""
        verified = True
        child = self._bwrap_child()
        pidfd = None
        if child is not None:
            try:
                pidfd = os.pidfd_open(child)
            except OSError:
                pidfd = None
        if self.control is not None:
            try:
                self.control.close()
            except OSError:
                pass
            self.control = None
        if pidfd is not None:
            # pid 1 of the sandbox: its death ends every process inside
            _send_kill(pidfd)
            verified = wait_gone(pidfd, KILL_TIMEOUT_S)
            os.close(pidfd)
        launcher, self.launcher = self.launcher, None
        if launcher is not None:
            try:
                launcher.wait(timeout=3)
            except subprocess.TimeoutExpired:
                pass
            kill_group(launcher.pid)
            try:
                launcher.wait(timeout=5)
            except subprocess.TimeoutExpired:
                verified = False
        _close(self.status_pipe)
        self.status_pipe = None
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None
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
                _close(fd)
            return None, []
        return reply, list(received)


def sandbox_of(isolation: iso.Isolation, numpy_only: bool = False) -> _Sandbox:
    # Kept on the package, which pytest never unloads: pytester's in-process
    # runs forget modules first imported during a run, this one included.
    import pytest_autograd_grader as package

    sandboxes = package.__dict__.setdefault("_sandboxes", {})
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
    import pytest_autograd_grader as package

    for sandbox in package.__dict__.get("_sandboxes", {}).values():
        sandbox.stop()
    package.__dict__.get("_sandboxes", {}).clear()
    package.__dict__.get("_isolations", {}).clear()


def prestart(setting: str, timeout: float = SPAWN_TIMEOUT_S) -> None:
    """Start the zygote a session with ``--grade-isolation setting`` will use
    and wait (at most ``timeout``) until it has imported torch. For a
    process that grades many sessions (the class runner's workers), so that
    no session's clock counts the zygote's cold start."""
    sandbox = sandbox_of(isolation_for(setting))
    sandbox.start()
    sandbox.ask({"op": "ping"}, timeout=timeout)  # no answer: the session's first call reports why


def isolation_for(setting: str) -> iso.Isolation:
    """``probe.choose``, once per setting and pytest process (probing
    starts a worker, and a new uid would mean a new zygote)."""
    import pytest_autograd_grader as package

    chosen = package.__dict__.setdefault("_isolations", {})
    if setting not in chosen:
        from .probe import choose

        chosen[setting] = choose(setting)
    return chosen[setting]


class SandboxExecutor:
    """Runs every request in a worker process forked from a warm zygote.

    ``run`` never raises for anything student code does: a hang answers a
    ``timeout`` outcome, a dead worker a ``crashed`` one.
    """

    def __init__(self, memory_mb: int = 4096, isolation: iso.Isolation | None = None,
                 answer_limit: int = ANSWER_LIMIT):
        self.memory_mb = int(memory_mb)
        self.isolation = isolation or isolation_for("auto")
        self.answer_limit = answer_limit
        self.workers: dict[str, _Worker] = {}
        self.last_run_seconds = 0.0
        self.closed = False
        self.unverified = False  # a worker whose processes could not be shown to be gone
        # (submission, module) -> seconds its import ran before it was stopped:
        # every later check that needs the module fails at once, not after
        # another timeout
        self.hung_imports: dict[tuple[str, str], float] = {}

    def start(self) -> None:
        """Start the zygote now (it imports torch in the background); the
        first call waits for it. Safe to call more than once."""
        sandbox_of(self.isolation).start()

    def _spawn(self, directory: str, numpy_only: bool = False) -> _Worker:
        sandbox = sandbox_of(self.isolation, numpy_only)
        mode = self.isolation.mode
        for attempt in range(2):
            if attempt:
                sandbox.stop()  # it did not answer: start a fresh one
            sandbox.start()
            number = next(sandbox.counter)
            uid = iso.allocate_uid() if mode == "user" else None
            owner = uid if uid is not None else self.isolation.uid
            staged = sandbox.base / "stage" / str(number)
            stage(directory, staged, owner)
            dirs = [staged]
            private = None
            if mode != "bwrap":  # bubblewrap's workers use their own tmpfs
                private = sandbox.base / "work" / str(number)
                private.mkdir(mode=0o700)
                if owner is not None:
                    os.chown(private, owner, owner)
                dirs.append(private)
            inside = f"{iso.SANDBOX_STAGE}/{number}" if mode == "bwrap" else str(staged)
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            out_r, out_w = os.pipe()
            status_r, status_w = os.pipe()
            request = {"op": "spawn", "directory": inside, "private": str(private) if private else None,
                       "memory_mb": self.memory_mb, "uid": uid, "numpy_only": numpy_only,
                       "no_torch": msg("student.numpy_only") if numpy_only else None}
            try:
                reply, fds = sandbox.ask(request, fds=(theirs.fileno(), out_w, status_w))
            finally:
                theirs.close()
                os.close(out_w)
                os.close(status_w)
            if reply is not None and len(fds) == 1 and type(reply.get("pid")) is int:
                worker = _Worker(ours, out_r, status_r, fds[0], bool(reply.get("pidns")), uid, dirs)
                ours.settimeout(SPAWN_TIMEOUT_S)
                try:
                    data = recv_frame(ours, limit=1 << 16)
                    ready = json.loads(data) if data else None
                except (OSError, ValueError):
                    ready = None
                if type(ready) is dict and ready.get("ready") is True:
                    os.set_blocking(out_r, False)
                    ours.settimeout(None)
                    worker.find_worker()
                    return worker
                worker.retire(died=True)
                continue
            for fd in fds:
                _close(fd)
            ours.close()
            os.close(out_r)
            os.close(status_r)
            for path in dirs:
                shutil.rmtree(path, ignore_errors=True)
        tail = sandbox.log_tail()
        raise GraderError(msg("sandbox.no_worker", mode=mode) + (f"\n{tail}" if tail else ""))

    def _retire(self, directory: str, worker: _Worker, died: bool = False) -> int | None:
        if self.workers.get(directory) is worker:
            del self.workers[directory]
        status, gone = worker.retire(died=died)
        if not gone:
            self.unverified = True
        return status

    # -- the Executor protocol

    def run(self, directory: str, module: str, function: str, payload: bytes, op: str, timeout: float,
            numpy_only: bool = False) -> bytes:
        """``numpy_only``: in a worker where torch cannot be imported, forked
        from a zygote that never imported it (the engine track)."""
        from ..records import Limits, dumps, loads

        self.last_run_seconds = 0.0
        if self.closed:
            raise RuntimeError("the sandbox is closed")
        directory = str(Path(directory).resolve())
        where = {"module": module, "function": function}
        key = directory + ("\0numpy" if numpy_only else "")
        hung = self.hung_imports.get((key, module))
        if hung is not None:
            return dumps({"stage": "import_timeout", "seconds": hung, "earlier": True, **where, "output": ""})
        worker = self.workers.get(key)
        if worker is None:
            try:
                worker = self.workers[key] = self._spawn(directory, numpy_only)
            except StageError as exc:
                return dumps({"stage": "unstageable", "reason": str(exc), **where})
        else:
            _Output(worker.output_fd).drain()  # what stray code printed between two calls
        started = time.monotonic()
        deadline = started + max(0.0, timeout)
        if module not in worker.loaded:
            kind, reply, answer, output = worker.exchange(
                {"op": "load", "module": module, "function": ""}, dumps({}), deadline, self.answer_limit)
            self.last_run_seconds = time.monotonic() - started
            if kind == "timeout":
                self.hung_imports[(key, module)] = timeout
                self._retire(key, worker)
                return dumps({"stage": "import_timeout", "seconds": timeout, **where, "output": output})
            loaded = self._answer(key, worker, kind, reply, answer, output, where, timeout)
            try:
                stage = loads(loaded, Limits(max_bytes=self.answer_limit)).get("stage")
            except Exception:
                stage = None
            if stage != "ok":
                return loaded  # it could not be imported: that is the answer
            worker.loaded.add(module)
            if self.workers.get(key) is not worker:
                return loaded  # retired (it left a process behind): the next call starts afresh
        kind, reply, answer, output = worker.exchange(
            {"op": op, "module": module, "function": function}, payload, deadline, self.answer_limit)
        self.last_run_seconds = time.monotonic() - started
        return self._answer(key, worker, kind, reply, answer, output, where, timeout)

    def _answer(self, key: str, worker: _Worker, kind: str, reply, answer, output: str, where: dict,
                timeout: float) -> bytes:
        """The answer bytes for one exchange: the worker's own, with what it
        printed added, or the sandbox's account of how it ended."""
        from ..records import Limits, dumps, loads

        where = {**where, "output": output}
        if kind == "timeout":
            self._retire(key, worker)
            return dumps({"stage": "timeout", "seconds": timeout, **where})
        if kind == "too_large":
            self._retire(key, worker)
            return dumps({"stage": "too_large", "size": reply, "limit": self.answer_limit, **where})
        if kind == "eof":
            status = self._retire(key, worker, died=True)
            return dumps({"stage": "crashed", "how": describe_status(status), **where})
        if worker.left_behind():
            # a thread or process of the student's would run on between checks
            self._retire(key, worker)
        if output.strip():
            try:
                outcome = loads(answer, Limits(max_bytes=self.answer_limit))
            except Exception:
                return answer  # refused again, with its reason, by the caller
            if type(outcome) is dict:
                outcome["output"] = (str(outcome.get("output") or "") + output)[: OUTPUT_LIMIT + 200]
                return dumps(outcome)
        return answer

    def close(self) -> None:
        """Kill every worker and everything they started. The reports are
        written after this returns."""
        if self.closed:
            return
        self.closed = True
        for directory, worker in list(self.workers.items()):
            self._retire(directory, worker)
        self.workers.clear()
        if self.unverified:
            # Something a worker started could not be shown to be gone (no
            # namespace and no uid of its own): end the whole sandbox.
            sandbox_of(self.isolation).stop()
            sandbox_of(self.isolation, numpy_only=True).stop()

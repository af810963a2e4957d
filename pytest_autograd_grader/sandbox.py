"""Student code runs in worker processes; the pytest process only judges.

Processes::

    pytest (grader)                 SandboxExecutor: one worker per submission directory
      └─ launcher                   ``python -m pytest_autograd_grader.sandbox`` (own session)
           └─ zygote                imports torch once, never touches CUDA; pid 1 of a new
                │                   PID namespace where the kernel allows one
                ├─ worker (dir A)   forked per submission directory: own session/process group,
                └─ worker (dir B)   rlimits, private cwd, stdout/stderr on a pipe to the grader

* Start cost: the zygote imports torch (and warms the record codec) once; a
  worker is a ``fork`` of it, so it starts in milliseconds. The plugin starts
  the zygote when a graded session is configured (so its torch import
  overlaps the grader's), otherwise the first proxy call does; it never
  initialises CUDA, so every worker creates its own CUDA context.
* Nothing but plain bytes crosses back: control messages are length-prefixed
  JSON, answers are ``records.dumps`` bytes (JSON and raw tensor bytes) that
  the grader decodes with ``records.loads``. Nothing is ever unpickled.
* Timeouts: the grader waits for an answer with ``poll`` against a deadline;
  on expiry it SIGKILLs the worker's process group, the zygote reaps it and
  kills any descendant that escaped into a session of its own, and the next
  call gets a fresh worker.
* Crashes (segfault, ``os._exit``, a signal) show up as EOF on the worker's
  socket; the zygote reports how the worker died.
* A worker whose student code left a thread or a child process behind
  answers, then is replaced, so no student code runs between two checks.
* Student code that kills its parent hits the zygote, never pytest; inside a
  PID namespace it cannot even do that (the namespace's init ignores SIGKILL
  from inside), nor name any process outside.
* Limits inside a worker: RLIMIT_DATA for memory (RLIMIT_AS would break
  CUDA, which reserves far more address space than it uses; RLIMIT_DATA
  counts private writable memory, i.e. what malloc and the torch CPU
  allocator hand out), RLIMIT_FSIZE, RLIMIT_CORE=0, RLIMIT_NPROC (not
  enforced by the kernel for root; the PID namespace still contains
  everything then). Output on fd 1 and 2 (Python or C level) goes to a pipe
  that the grader drains while it waits, keeping only the first
  ``OUTPUT_LIMIT`` characters of each call.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUTPUT_LIMIT = 4000            # characters of a call's output kept for feedback
ANSWER_LIMIT = 1 << 30          # bytes: a bigger answer is refused (the worker is replaced)
FILE_SIZE_LIMIT = 64 << 20      # bytes a worker may write to one file
EXTRA_TASKS = 256               # RLIMIT_NPROC head-room over what the user already runs
SPAWN_TIMEOUT_S = 120.0         # zygote start (imports torch) plus one fork
REAP_TIMEOUT_S = 3.0
_HEADER = struct.Struct("!I")
_NO_PIDNS_ENV = "PYTEST_AUTOGRAD_GRADER_NO_PIDNS"

CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
PR_SET_CHILD_SUBREAPER = 36


# -- framing (both sides) ---------------------------------------------------

def _frame(data: bytes) -> bytes:
    return _HEADER.pack(len(data)) + data


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _recv_frame(sock: socket.socket) -> bytes | None:
    head = _recv_exact(sock, _HEADER.size)
    if head is None:
        return None
    return _recv_exact(sock, _HEADER.unpack(head)[0])


def describe_status(status: int | None) -> str:
    """How a worker ended, in words for the feedback."""
    if status is None:
        return "the process running it ended unexpectedly"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        words = {signal.SIGSEGV: "segmentation fault", signal.SIGBUS: "bus error", signal.SIGABRT: "aborted",
                 signal.SIGFPE: "floating point exception", signal.SIGILL: "illegal instruction",
                 signal.SIGXFSZ: "file size limit exceeded", signal.SIGXCPU: "CPU time limit exceeded",
                 signal.SIGKILL: "killed"}.get(number)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"{words}, {name}" if words else f"killed by {name}"
    if os.WIFEXITED(status):
        return f"the process exited with code {os.WEXITSTATUS(status)}, e.g. os._exit() or a fatal error"
    return f"wait status {status}"


# -- the grader's side -------------------------------------------------------

class _Worker:
    """The grader's handle on one worker process."""

    def __init__(self, sock: socket.socket, output_fd: int, inner_pid: int, outer_pid: int, private: str | None):
        self.private = private
        self.sock = sock
        self.output_fd = output_fd
        self.inner_pid = inner_pid
        self.outer_pid = outer_pid
        self.seq = 0
        self.alive = True

    def kill(self) -> None:
        if self.alive:
            self.alive = False
            for kill in (os.killpg, os.kill):
                try:
                    kill(self.outer_pid, signal.SIGKILL)
                except OSError:
                    pass
        for closer in (self.sock.close, lambda: os.close(self.output_fd)):
            try:
                closer()
            except OSError:
                pass
        self.output_fd = -1
        if self.private:
            shutil.rmtree(self.private, ignore_errors=True)
            self.private = None

    def drain_output(self) -> None:
        """Discard what stray code printed between two calls."""
        _Output(self.output_fd).drain()

    def exchange(self, header: dict, payload: bytes, deadline: float):
        """Send one request; answer ("ok", reply header, answer bytes, output),
        ("timeout", None, None, output) or ("eof", None, None, output)."""
        self.seq += 1
        header = {**header, "seq": self.seq}
        output = _Output(self.output_fd)
        data = memoryview(_frame(json.dumps(header).encode()) + _frame(payload))
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
                        while len(buffer) >= _HEADER.size:
                            size = _HEADER.unpack_from(buffer)[0]
                            if size > ANSWER_LIMIT:
                                return "eof", None, None, output.text()
                            if len(buffer) < _HEADER.size + size:
                                break
                            frames.append(bytes(buffer[_HEADER.size:_HEADER.size + size]))
                            del buffer[:_HEADER.size + size]
                        if len(frames) >= 2:
                            # the answer was sent after the output was flushed, so the
                            # pipe already holds all of this call's output
                            output.drain()
                            reply = json.loads(frames[0])
                            if type(reply) is not dict or reply.get("seq") != self.seq or frames[2:] or buffer:
                                return "eof", None, None, output.text()
                            return "ok", reply, frames[1], output.text()
        finally:
            try:
                sock.setblocking(True)
            except OSError:
                pass


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


class _ZygoteClient:
    """The grader's end of one zygote. One per pytest process, shared by
    every executor in it (pytester's in-process runs included): the zygote
    holds nothing but imported modules, and student code never runs in it."""

    def __init__(self) -> None:
        self.launcher: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.base: str | None = None

    def alive(self) -> bool:
        return self.launcher is not None and self.launcher.poll() is None and self.control is not None

    def start(self) -> None:
        if self.alive():
            return
        self.stop()
        self.base = tempfile.mkdtemp(prefix="grade-sandbox-")
        os.chmod(self.base, 0o700)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        package_parent = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH", "")) if p)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONSTARTUP", None)
        env.pop("PYTHONINSPECT", None)
        # -P: the launcher's cwd (the private base) is not put on sys.path.
        self.launcher = subprocess.Popen(
            [sys.executable, "-P", "-m", "pytest_autograd_grader.sandbox", str(theirs.fileno()), self.base],
            pass_fds=(theirs.fileno(),), cwd=self.base, env=env, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=None)
        theirs.close()
        self.control = ours

    def stop(self) -> None:
        """Closing the control socket ends the zygote, which kills every
        worker (inside a PID namespace the kernel does it)."""
        if self.control is not None:
            try:
                self.control.close()
            except OSError:
                pass
            self.control = None
        launcher, self.launcher = self.launcher, None
        if launcher is not None:
            try:
                launcher.wait(timeout=3)
            except subprocess.TimeoutExpired:
                pass
            for kill in (os.killpg, os.kill):
                try:
                    kill(launcher.pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                launcher.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None

    def ask(self, message: dict, fds=(), timeout: float = SPAWN_TIMEOUT_S) -> dict | None:
        control = self.control
        if control is None:
            return None
        try:
            control.settimeout(timeout)
            socket.send_fds(control, [json.dumps(message).encode()], list(fds))
            data = control.recv(1 << 16)
        except OSError:
            return None
        if not data:
            return None
        try:
            reply = json.loads(data)
        except ValueError:
            return None
        return reply if type(reply) is dict else None


def _zygote() -> _ZygoteClient:
    # Kept on the package, which pytest never unloads: pytester's in-process
    # runs forget modules first imported during a run, this one included.
    import pytest_autograd_grader as package

    client = getattr(package, "_sandbox_zygote", None)
    if client is None:
        client = package._sandbox_zygote = _ZygoteClient()
        atexit.register(client.stop)
    return client


class SandboxExecutor:
    """Runs every request in a worker process forked from a warm zygote.

    ``run`` never raises for anything student code does: a hang answers a
    ``timeout`` outcome, a dead worker a ``crashed`` one.
    """

    def __init__(self, memory_mb: int = 4096):
        self.memory_mb = int(memory_mb)
        self.workers: dict[str, _Worker] = {}
        self.last_run_seconds = 0.0
        self.closed = False

    def start(self) -> None:
        """Start the zygote now (it imports torch in the background); the
        first call waits for it. Safe to call more than once."""
        _zygote().start()

    def _spawn(self, directory: str) -> _Worker:
        zygote = _zygote()
        for attempt in range(2):
            if attempt:
                zygote.stop()  # it did not answer: start a fresh one
            zygote.start()
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            out_r, out_w = os.pipe()
            try:
                reply = zygote.ask({"op": "spawn", "directory": directory, "memory_mb": self.memory_mb},
                                   fds=(theirs.fileno(), out_w))
            finally:
                theirs.close()
                os.close(out_w)
            ready = None
            if reply is not None and type(reply.get("pid")) is int:
                ours.settimeout(SPAWN_TIMEOUT_S)
                try:
                    data = _recv_frame(ours)
                    ready = json.loads(data) if data else None
                except (OSError, ValueError):
                    ready = None
            if type(ready) is dict and type(ready.get("pid")) is int:
                os.set_blocking(out_r, False)
                ours.settimeout(None)
                private = ready.get("dir")
                base = zygote.base or ""
                if type(private) is not str or os.path.dirname(private) != base:
                    private = None
                return _Worker(ours, out_r, reply["pid"], ready["pid"], private)
            ours.close()
            os.close(out_r)
        raise RuntimeError("the sandbox could not start a worker process (see stderr above)")

    def _reap(self, worker: _Worker) -> int | None:
        reply = _zygote().ask({"op": "reap", "pid": worker.inner_pid}, timeout=REAP_TIMEOUT_S + 2)
        status = reply.get("status") if reply else None
        return status if type(status) is int else None

    def _retire(self, directory: str, worker: _Worker) -> int | None:
        worker.kill()
        if self.workers.get(directory) is worker:
            del self.workers[directory]
        return self._reap(worker)

    # -- the Executor protocol

    def run(self, directory: str, module: str, function: str, payload: bytes, op: str, timeout: float) -> bytes:
        from .records import dumps, loads

        self.last_run_seconds = 0.0
        if self.closed:
            raise RuntimeError("the sandbox is closed")
        directory = str(Path(directory).resolve())
        worker = self.workers.get(directory)
        if worker is None:
            worker = self.workers[directory] = self._spawn(directory)
        else:
            worker.drain_output()
        started = time.monotonic()
        kind, reply, answer, output = worker.exchange(
            {"op": op, "module": module, "function": function}, payload, started + max(0.0, timeout))
        self.last_run_seconds = time.monotonic() - started
        where = {"module": module, "function": function, "output": output}
        if kind == "timeout":
            self._retire(directory, worker)
            return dumps({"stage": "timeout", "seconds": timeout, **where})
        if kind == "eof":
            status = self._retire(directory, worker)
            return dumps({"stage": "crashed", "how": describe_status(status), **where})
        if reply.get("recycle") is not False:
            self._retire(directory, worker)
        if output.strip():
            try:
                outcome = loads(answer)
            except Exception:
                return answer  # refused again, with its reason, by the caller
            if type(outcome) is dict:
                outcome["output"] = (str(outcome.get("output") or "") + output)[: OUTPUT_LIMIT + 200]
                return dumps(outcome)
        return answer

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for directory, worker in list(self.workers.items()):
            self._retire(directory, worker)  # the zygote also kills what escaped the worker's group
        self.workers.clear()


# -- the zygote --------------------------------------------------------------

def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _enter_pid_namespace() -> bool:
    """unshare a PID namespace for our children; False where not allowed."""
    if os.environ.get(_NO_PIDNS_ENV) or not sys.platform.startswith("linux"):
        return False
    try:
        libc = _libc()
    except OSError:
        return False
    if libc.unshare(CLONE_NEWPID) == 0:
        return True
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0:
        return False
    try:
        for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", f"{uid} {uid} 1"),
                           ("/proc/self/gid_map", f"{gid} {gid} 1")):
            with open(path, "w") as handle:
                handle.write(text)
    except OSError:
        return False
    return True


def _tasks_of_user(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    with open(f"/proc/{entry}/status") as handle:
                        for line in handle:
                            if line.startswith("Threads:"):
                                count += int(line.split()[1])
                                break
            except (OSError, ValueError):
                pass
    return count


def _proc_children(outer_pid: int) -> list[int]:
    """Our children (in our own PID namespace's numbers), from /proc."""
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:
            continue
        try:
            if int(fields.get("PPid", "0")) == outer_pid:
                children.append(int(fields.get("NSpid", entry).split()[-1]))
        except ValueError:
            pass
    return children


class _Zygote:
    def __init__(self, control: socket.socket, base: str):
        self.control = control
        self.base = base
        self.outer_pid = int(os.readlink("/proc/self")) if os.path.exists("/proc/self") else os.getpid()
        self.workers: set[int] = set()
        self.statuses: dict[int, int] = {}
        uid = os.getuid()
        self.nproc = _tasks_of_user(uid) + EXTRA_TASKS if uid != 0 else None

    def reap_all(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.workers:
                self.workers.discard(pid)
                self.statuses[pid] = status

    def sweep(self) -> None:
        """Kill orphans: descendants of dead workers that escaped their group."""
        for pid in _proc_children(self.outer_pid):
            if pid not in self.workers and pid != os.getpid():
                for kill in (os.killpg, os.kill):
                    try:
                        kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
        self.reap_all()

    def serve(self) -> None:
        control = self.control
        idle = 0
        while True:
            ready, _, _ = select.select([control], [], [], 1.0)
            self.reap_all()
            if not ready:
                idle += 1
                if idle % 5 == 0:
                    self.sweep()
                continue
            try:
                data, fds, _, _ = socket.recv_fds(control, 1 << 16, 4)
            except OSError:
                break
            if not data:
                break
            try:
                message = json.loads(data)
            except ValueError:
                message = {}
            op = message.get("op") if type(message) is dict else None
            if op == "spawn" and len(fds) == 2 and type(message.get("memory_mb")) is int:
                pid = os.fork()
                if pid == 0:
                    try:
                        control.close()
                        _worker_main(fds[0], fds[1], str(message["directory"]), self.base, message["memory_mb"],
                                     self.nproc)
                    finally:
                        os._exit(70)
                for fd in fds:
                    os.close(fd)
                self.workers.add(pid)
                reply = {"pid": pid}
            elif op == "reap" and type(message.get("pid")) is int:
                pid = message["pid"]
                for kill in (os.killpg, os.kill):
                    try:
                        kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                end = time.monotonic() + REAP_TIMEOUT_S
                while pid in self.workers and time.monotonic() < end:
                    self.reap_all()
                    if pid in self.workers:
                        time.sleep(0.002)
                self.sweep()
                reply = {"status": self.statuses.pop(pid, None)}
            else:
                for fd in fds:
                    os.close(fd)
                reply = {"error": "bad request"}
            try:
                control.send(json.dumps(reply).encode())
            except OSError:
                break
        for pid in list(self.workers):
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        self.workers.clear()
        self.sweep()


def _warm_up() -> None:
    """Import and exercise what every worker needs, without touching CUDA."""
    import torch  # noqa: F401

    from . import devices, records, student  # noqa: F401

    devices.prepare("cuda")  # flags only: TF32 off, no CUDA context is created
    records.loads(records.dumps({"x": torch.ones(2, requires_grad=True) * 2, "n": [1, 2.0, "s", None]}))
    records.decode(records.encode(torch.ones(2)))
    try:
        import numpy  # noqa: F401
    except ImportError:
        pass


def main(argv: list[str]) -> None:
    control_fd, base = int(argv[0]), argv[1]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if _enter_pid_namespace():
        pid = os.fork()
        if pid:
            # The launcher only waits: the zygote below is pid 1 of the new
            # namespace, so its death takes every worker with it.
            os.close(control_fd)
            os.waitpid(pid, 0)
            os._exit(0)
    else:
        try:
            _libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    control = socket.socket(fileno=control_fd)
    _warm_up()
    _Zygote(control, base).serve()
    os._exit(0)


# -- the worker --------------------------------------------------------------

def _limit(resource_module, name: str, value: int) -> None:
    kind = getattr(resource_module, name, None)
    if kind is None:
        return
    try:
        soft, hard = resource_module.getrlimit(kind)
        if hard != resource_module.RLIM_INFINITY:
            value = min(value, hard)
        resource_module.setrlimit(kind, (value, value))
    except (OSError, ValueError):
        pass


def _has_children() -> bool:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def _worker_main(sock_fd: int, output_fd: int, directory: str, base: str, memory_mb: int, nproc: int | None) -> None:
    import io
    import resource
    import threading

    os.setsid()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    sock = socket.socket(fileno=sock_fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(devnull)
    os.close(output_fd)
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = io.TextIOWrapper(open(1, "wb", buffering=0, closefd=False), errors="replace", write_through=True)
    sys.stderr = io.TextIOWrapper(open(2, "wb", buffering=0, closefd=False), errors="replace", write_through=True)

    private = tempfile.mkdtemp(prefix="worker-", dir=base)
    os.chdir(private)
    os.environ["TMPDIR"] = os.environ["HOME"] = private
    tempfile.tempdir = private

    _limit(resource, "RLIMIT_DATA", memory_mb << 20)
    _limit(resource, "RLIMIT_FSIZE", FILE_SIZE_LIMIT)
    _limit(resource, "RLIMIT_CORE", 0)
    if nproc is not None:
        _limit(resource, "RLIMIT_NPROC", nproc)

    from .records import dumps
    from .student import Loader, call

    try:
        fflush = _libc().fflush
    except (OSError, AttributeError):
        fflush = None
    loader = Loader(directory, unique_names=True)
    me = os.getpid()
    threads = threading.active_count()
    outer = int(os.readlink("/proc/self")) if os.path.exists("/proc/self") else me
    sock.sendall(_frame(json.dumps({"pid": outer, "dir": private}).encode()))
    while True:
        data = _recv_frame(sock)
        payload = _recv_frame(sock) if data is not None else None
        if payload is None:
            os._exit(0)
        header = json.loads(data)
        try:
            answer = call(loader, str(header["module"]), str(header["function"]), payload, str(header["op"]),
                          capture=False, memory_limit=memory_mb)
        except BaseException as exc:  # student code broke the worker's own machinery
            answer = dumps({"stage": "crashed", "how": f"the worker broke: {type(exc).__name__}"})
        if os.getpid() != me:
            os._exit(0)  # a fork made by student code came back here: it never answers
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        if fflush is not None:
            fflush(None)
        recycle = threading.active_count() > threads or _has_children()
        sock.sendall(_frame(json.dumps({"seq": header.get("seq"), "recycle": recycle}).encode()) + _frame(answer))


if __name__ == "__main__":
    main(sys.argv[1:])

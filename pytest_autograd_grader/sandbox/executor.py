"""The grader's side of the sandbox: hand workers requests, read the
answers, and decide, from outside, when a worker must go (``launch.py``
starts the sandbox, ``worker_handle.py`` holds each worker).

Nothing but plain bytes crosses back: control messages are JSON, answers are
``wire.dumps`` bytes that the grader decodes with ``wire.loads``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path

from ..boundary.layout import module_path
from ..boundary.notebook_modules import SUFFIX as NOTEBOOK
from ..i18n import msg
from ..outcomes import GraderError
from ..protocol import CallHeader, Op, ProtocolError, SpawnReply, SpawnRequest, Stage
from . import isolation as iso
from .framing import describe_status, recv_frame
from .launch import SPAWN_TIMEOUT_S, sandbox_of
from .memory import tmp_mb
from .staging import StageError, stage
from .worker_handle import OUTPUT_LIMIT, Output, WorkerHandle, close_fd

IMPORT_GRACE_S = 1.0            # seconds past a notebook's import deadline for its own answer
ANSWER_LIMIT = 1 << 30          # bytes: a bigger answer is refused (the worker is replaced)


def _spawn_reply(answer: dict | None) -> SpawnReply | None:
    """The zygote's reply to a spawn request, None where it did not spawn."""
    try:
        return SpawnReply.from_wire(answer) if answer is not None else None
    except ProtocolError:
        return None


class SandboxExecutor:
    """Runs every request in a worker process forked from a warm zygote.

    ``run`` never raises for anything student code does: a hang answers a
    ``timeout`` outcome, a dead worker a ``crashed`` one.
    """

    def __init__(self, isolation: iso.Isolation, memory_mb: int = 4096, answer_limit: int = ANSWER_LIMIT,
                 cuda: bool = False):
        self.memory_mb = int(memory_mb)
        self.cuda = cuda  # checks run on CUDA: each torch worker starts CUDA before it is ready
        self.isolation = isolation
        self.answer_limit = answer_limit
        self.workers: dict[str, WorkerHandle] = {}
        self.last_run_seconds = 0.0
        self.closed = False
        self.unverified = False  # a worker whose processes could not be shown to be gone
        # (submission, module) -> seconds its import ran before it was stopped:
        # every later check that needs the module fails at once, not after
        # another timeout
        self.hung_imports: dict[tuple[str, str], float] = {}
        self._resolved: dict[str, str] = {}  # a submission's path -> its real path, once per executor (per session)

    def start(self) -> None:
        """Start the zygote now (it imports torch in the background); the
        first call waits for it. Safe to call more than once."""
        sandbox_of(self.isolation).start()

    def _spawn(self, directory: str, numpy_only: bool = False) -> WorkerHandle:
        sandbox = sandbox_of(self.isolation, numpy_only)
        mode = self.isolation.mode
        for attempt in range(2):
            if attempt:
                sandbox.stop()  # it did not answer: start a fresh one
            sandbox.start()
            number = f"{sandbox.prefix}{next(sandbox.counter)}"
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
            # RLIMIT_NPROC counts what the worker's uid runs already: nothing
            # of note for a uid of the sandbox's own, and root is not held to it
            runs_as = owner if owner is not None else os.getuid()
            tasks = None if runs_as == 0 else iso.tasks_of_user(runs_as) if runs_as == os.getuid() else 0
            request = SpawnRequest(directory=inside, private=str(private) if private else None,
                                   memory_mb=self.memory_mb, tmp_mb=tmp_mb(self.memory_mb), uid=uid,
                                   numpy_only=numpy_only, tasks=tasks, cuda=self.cuda,
                                   no_torch=msg("student.numpy_only") if numpy_only else None,
                                   # only its own staged submission in sight, on our CPUs
                                   cover=(iso.SANDBOX_STAGE,) if mode == "bwrap" else (),
                                   cpus=tuple(sorted(os.sched_getaffinity(0))))
            try:
                answer, fds = sandbox.ask(request.to_wire(), fds=(theirs.fileno(), out_w, status_w))
            finally:
                theirs.close()
                os.close(out_w)
                os.close(status_w)
            reply = _spawn_reply(answer)
            if reply is not None and len(fds) == 1:
                worker = WorkerHandle(ours, out_r, status_r, fds[0], reply.pidns, uid, dirs)
                if sandbox.shared and not reply.fenced:
                    # it would see the files of a student graded beside ours:
                    # a sandbox of our own instead
                    worker.retire()
                    sandbox.stop()
                    continue
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
                close_fd(fd)
            ours.close()
            os.close(out_r)
            os.close(status_r)
            for path in dirs:
                shutil.rmtree(path, ignore_errors=True)
        tail = sandbox.log_tail()
        raise GraderError(msg("sandbox.no_worker", mode=mode) + (f"\n{tail}" if tail else ""))

    def _retire(self, directory: str, worker: WorkerHandle, died: bool = False) -> int | None:
        if self.workers.get(directory) is worker:
            del self.workers[directory]
        status, gone = worker.retire(died=died)
        if not gone:
            self.unverified = True
        return status

    def _hung(self, key: str, module: str, worker: WorkerHandle, timeout: float) -> None:
        """The module's import ran out of time: every later check that needs
        it fails at once, and the worker it ran in goes."""
        self.hung_imports[(key, module)] = timeout
        self._retire(key, worker)

    # -- the Executor protocol

    def run(self, directory: str, module: str, function: str, payload: bytes, op: str, timeout: float,
            numpy_only: bool = False) -> bytes:
        """``numpy_only``: in a worker where torch cannot be imported, forked
        from a zygote that never imported it (the engine track)."""
        from ..boundary.records import Limits
        from ..boundary.wire import dumps, loads

        self.last_run_seconds = 0.0
        if self.closed:
            raise RuntimeError("the sandbox is closed")
        if directory not in self._resolved:
            self._resolved[directory] = str(Path(directory).resolve())
        directory = self._resolved[directory]
        where = {"module": module, "function": function}
        key = directory + ("\0numpy" if numpy_only else "")
        hung = self.hung_imports.get((key, module))
        if hung is not None:
            return dumps({"stage": Stage.IMPORT_TIMEOUT, "seconds": hung, "earlier": True, **where, "output": ""})
        worker = self.workers.get(key)
        if worker is None:
            try:
                worker = self.workers[key] = self._spawn(directory, numpy_only)
            except StageError as exc:
                return dumps({"stage": Stage.UNSTAGEABLE, "reason": str(exc), **where})
        else:
            Output(worker.output_fd).drain()  # what stray code printed between two calls
        started = time.monotonic()
        deadline = started + max(0.0, timeout)
        if module not in worker.loaded:
            # A notebook stops itself at 0.9 of the time to say which cell ran;
            # the grace lets that answer through on a loaded machine. An import
            # that ends within the grace still took too long (below).
            grace = IMPORT_GRACE_S if module_path(Path(directory), module).suffix == NOTEBOOK else 0.0
            kind, reply, answer, output = worker.exchange(
                CallHeader(Op.LOAD, module, "", seconds=max(0.0, timeout)), dumps({}),
                deadline + grace, self.answer_limit)
            self.last_run_seconds = time.monotonic() - started
            if kind == "timeout":
                self._hung(key, module, worker, timeout)
                return dumps({"stage": Stage.IMPORT_TIMEOUT, "seconds": timeout, **where, "output": output})
            # A thread or process the import left behind is not a reason to
            # skip the call: the call runs in this worker, which is replaced
            # after its answer (a module that starts a thread at import does
            # so in every worker, and its answers are still its answers).
            loaded = self._answer(key, worker, kind, reply, answer, output, where, timeout, replace_if_left=False)
            try:
                stage = Stage.of(loads(loaded, Limits(max_bytes=self.answer_limit)).get("stage"))
            except Exception:
                stage = None
            if stage is Stage.OK and time.monotonic() > deadline:
                self._hung(key, module, worker, timeout)
                return dumps({"stage": Stage.IMPORT_TIMEOUT, "seconds": timeout, **where, "output": output})
            if stage is Stage.IMPORT_TIMEOUT:
                # a notebook stopped itself just before the deadline: hung all the same
                self._hung(key, module, worker, timeout)
            if stage is not Stage.OK:
                return loaded  # it could not be imported: that is the answer
            worker.loaded.add(module)
        kind, reply, answer, output = worker.exchange(
            CallHeader(Op(op), module, function), payload, deadline, self.answer_limit)
        self.last_run_seconds = time.monotonic() - started
        return self._answer(key, worker, kind, reply, answer, output, where, timeout)

    def _answer(self, key: str, worker: WorkerHandle, kind: str, reply, answer, output: str, where: dict,
                timeout: float, replace_if_left: bool = True) -> bytes:
        """The answer bytes for one exchange: the worker's own, with what it
        printed added, or the sandbox's account of how it ended."""
        from ..boundary.records import Limits
        from ..boundary.wire import dumps, loads

        where = {**where, "output": output}
        if kind == "timeout":
            self._retire(key, worker)
            return dumps({"stage": Stage.TIMEOUT, "seconds": timeout, **where})
        if kind == "too_large":
            self._retire(key, worker)
            return dumps({"stage": Stage.TOO_LARGE, "size": reply, "limit": self.answer_limit, **where})
        if kind == "eof":
            status = self._retire(key, worker, died=True)
            return dumps({"stage": Stage.CRASHED, "how": describe_status(status), **where})
        if replace_if_left and worker.left_behind():
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

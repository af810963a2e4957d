"""The grader's side of the sandbox: hand workers requests, read the
answers, and decide, from outside, when a worker must go (``launch.py``
starts the sandbox, ``worker_handle.py`` holds each worker).

Nothing but plain bytes crosses back: control messages are JSON, answers are
``wire.dumps`` bytes that the grader decodes with ``wire.loads``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any

from ..boundary.layout import module_path
from ..boundary.notebook_modules import SUFFIX as NOTEBOOK
from ..i18n import msg
from ..outcomes import GraderError
from ..protocol import CallHeader, Op, ProtocolError, Ready, SpawnReply, SpawnRequest, Stage
from . import isolation as iso
from .framing import describe_status, recv_frame
from .launch import SPAWN_TIMEOUT_S, _Sandbox, sandbox_of
from .memory import tmp_mb
from .staging import StageError, stage
from .worker_handle import OUTPUT_LIMIT, Exchanged, Output, WorkerHandle, close_fd

IMPORT_GRACE_S = 1.0  # seconds past a notebook's import deadline for its own answer
ANSWER_LIMIT = 1 << 30  # bytes: a bigger answer is refused (the worker is replaced)


def _spawn_reply(answer: dict[str, Any] | None) -> SpawnReply | None:
    """The zygote's reply to a spawn request, None where it did not spawn."""
    try:
        return SpawnReply.from_wire(answer) if answer is not None else None
    except ProtocolError:
        return None


@dataclasses.dataclass(frozen=True)
class _Place:
    """Where a new worker works: its staged submission and its own folder."""

    uid: int | None  # a uid of its own (isolation "user")
    owner: int | None  # who owns its files: that uid, or the isolation's
    staged: Path
    private: Path | None  # its own folder (None: bubblewrap's tmpfs)
    inside: str  # the staged submission as the worker sees it

    @property
    def dirs(self) -> list[Path]:
        """What goes with the worker."""
        return [self.staged] + ([self.private] if self.private is not None else [])


@dataclasses.dataclass(frozen=True)
class _Call:
    """One request of ``run``, as the steps that serve it see it."""

    key: str  # the submission's worker's (its real path; apart for numpy-only)
    directory: str
    module: str
    function: str
    timeout: float
    started: float  # time.monotonic() once the worker was there
    deadline: float

    @property
    def where(self) -> dict[str, str]:
        return {"module": self.module, "function": self.function}


def _ready(worker: WorkerHandle) -> bool:
    """Whether a new worker says it is ready (else it goes)."""
    worker.sock.settimeout(SPAWN_TIMEOUT_S)
    try:
        data = recv_frame(worker.sock, limit=1 << 16)
        ready = Ready.from_wire(json.loads(data)) if data else None
    except (OSError, ValueError):  # ProtocolError is a ValueError
        ready = None
    if ready is None:
        worker.retire(died=True)
        return False
    os.set_blocking(worker.output_fd, False)
    worker.sock.settimeout(None)
    worker.find_worker()
    return True


class SandboxExecutor:
    """Runs every request in a worker process forked from a warm zygote.

    ``run`` never raises for anything student code does: a hang answers a
    ``timeout`` outcome, a dead worker a ``crashed`` one.
    """

    def __init__(
        self, isolation: iso.Isolation, memory_mb: int = 4096, answer_limit: int = ANSWER_LIMIT, cuda: bool = False
    ):
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
        for attempt in range(2):
            if attempt:
                sandbox.stop()  # it did not answer: start a fresh one
            sandbox.start()
            worker = self._try_spawn(sandbox, self._place(sandbox, directory), numpy_only)
            if worker is not None:
                return worker
        tail = sandbox.log_tail()
        raise GraderError(msg("sandbox.no_worker", mode=self.isolation.mode) + (f"\n{tail}" if tail else ""))

    def _place(self, sandbox: _Sandbox, directory: str) -> _Place:
        """Stage the submission for a new worker, and make the worker's own
        folder (not under bubblewrap: its workers have a tmpfs of their own)."""
        mode = self.isolation.mode
        assert sandbox.base is not None  # sandbox.start() made it
        number = f"{sandbox.prefix}{next(sandbox.counter)}"
        uid = iso.allocate_uid() if mode == "user" else None
        owner = uid if uid is not None else self.isolation.uid
        staged = sandbox.base / "stage" / str(number)
        stage(directory, staged, owner)
        private = None
        if mode != "bwrap":
            private = sandbox.base / "work" / str(number)
            private.mkdir(mode=0o700)
            if owner is not None:
                os.chown(private, owner, owner)
        inside = f"{iso.SANDBOX_STAGE}/{number}" if mode == "bwrap" else str(staged)
        return _Place(uid, owner, staged, private, inside)

    def _request(self, place: _Place, numpy_only: bool) -> SpawnRequest:
        mode = self.isolation.mode
        # RLIMIT_NPROC counts what the worker's uid runs already: nothing
        # of note for a uid of the sandbox's own, and root is not held to it
        runs_as = place.owner if place.owner is not None else os.getuid()
        tasks = None if runs_as == 0 else iso.tasks_of_user(runs_as) if runs_as == os.getuid() else 0
        return SpawnRequest(
            directory=place.inside,
            private=str(place.private) if place.private else None,
            memory_mb=self.memory_mb,
            tmp_mb=tmp_mb(self.memory_mb),
            uid=place.uid,
            numpy_only=numpy_only,
            tasks=tasks,
            cuda=self.cuda,
            no_torch=msg("student.numpy_only") if numpy_only else None,
            # only its own staged submission in sight, on our CPUs
            cover=(iso.SANDBOX_STAGE,) if mode == "bwrap" else (),
            cpus=tuple(sorted(os.sched_getaffinity(0))),
        )

    def _try_spawn(self, sandbox: _Sandbox, place: _Place, numpy_only: bool) -> WorkerHandle | None:
        """Ask the zygote for a worker for ``place``; None where it gave
        none, or none fit to serve."""
        request = self._request(place, numpy_only)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_r, out_w = os.pipe()
        status_r, status_w = os.pipe()
        try:
            answer, fds = sandbox.ask(request.to_wire(), fds=(theirs.fileno(), out_w, status_w))
        finally:
            theirs.close()
            os.close(out_w)
            os.close(status_w)
        reply = _spawn_reply(answer)
        if reply is None or len(fds) != 1:
            for fd in (*fds, out_r, status_r):
                close_fd(fd)
            ours.close()
            for path in place.dirs:
                shutil.rmtree(path, ignore_errors=True)
            return None
        worker = WorkerHandle(ours, out_r, status_r, fds[0], reply.pidns, place.uid, place.dirs)
        if sandbox.shared and not reply.fenced:
            # it would see the files of a student graded beside ours:
            # a sandbox of our own instead
            worker.retire()
            sandbox.stop()
            return None
        return worker if _ready(worker) else None

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

    def run(
        self,
        directory: str,
        module: str,
        function: str,
        payload: bytes,
        op: str,
        timeout: float,
        numpy_only: bool = False,
    ) -> bytes:
        """``numpy_only``: in a worker where torch cannot be imported, forked
        from a zygote that never imported it (the engine track)."""
        from ..boundary.wire import dumps

        self.last_run_seconds = 0.0
        if self.closed:
            raise RuntimeError("the sandbox is closed")
        if directory not in self._resolved:
            self._resolved[directory] = str(Path(directory).resolve())
        directory = self._resolved[directory]
        key = directory + ("\0numpy" if numpy_only else "")
        where = {"module": module, "function": function}
        hung = self.hung_imports.get((key, module))
        if hung is not None:
            return dumps({"stage": Stage.IMPORT_TIMEOUT, "seconds": hung, "earlier": True, **where, "output": ""})
        try:
            worker = self._worker_for(key, directory, numpy_only)
        except StageError as exc:
            return dumps({"stage": Stage.UNSTAGEABLE, "reason": str(exc), **where})
        started = time.monotonic()
        call = _Call(key, directory, module, function, timeout, started, started + max(0.0, timeout))
        if module not in worker.loaded:
            refused = self._load(call, worker)
            if refused is not None:
                return refused  # it could not be imported: that is the answer
        exchanged = worker.exchange(CallHeader(Op(op), module, function), payload, call.deadline, self.answer_limit)
        self.last_run_seconds = time.monotonic() - call.started
        return self._answer(call, worker, exchanged)

    def _worker_for(self, key: str, directory: str, numpy_only: bool) -> WorkerHandle:
        """The submission's worker, a new one where it has none."""
        worker = self.workers.get(key)
        if worker is None:
            worker = self.workers[key] = self._spawn(directory, numpy_only)
        else:
            Output(worker.output_fd).drain()  # what stray code printed between two calls
        return worker

    def _load(self, call: _Call, worker: WorkerHandle) -> bytes | None:
        """Import the module in the worker, alone, before its first call: an
        import that hangs is told apart from a call that does. The answer
        where it could not be imported, None once it is."""
        from ..boundary.wire import dumps

        # A notebook stops itself at 0.9 of the time to say which cell ran;
        # the grace lets that answer through on a loaded machine. An import
        # that ends within the grace still took too long (below).
        grace = IMPORT_GRACE_S if module_path(Path(call.directory), call.module).suffix == NOTEBOOK else 0.0
        exchanged = worker.exchange(
            CallHeader(Op.LOAD, call.module, "", seconds=max(0.0, call.timeout)),
            dumps({}),
            call.deadline + grace,
            self.answer_limit,
        )
        self.last_run_seconds = time.monotonic() - call.started
        if exchanged.kind == "timeout":
            return self._import_hung(call, worker, exchanged.output)
        # A thread or process the import left behind is not a reason to
        # skip the call: the call runs in this worker, which is replaced
        # after its answer (a module that starts a thread at import does
        # so in every worker, and its answers are still its answers).
        loaded = self._answer(call, worker, exchanged, replace_if_left=False)
        stage = self._stage_of(loaded)
        if stage is Stage.OK and time.monotonic() > call.deadline:
            return self._import_hung(call, worker, exchanged.output)
        if stage is Stage.IMPORT_TIMEOUT:
            # a notebook stopped itself just before the deadline: hung all the same
            self._hung(call.key, call.module, worker, call.timeout)
        if stage is not Stage.OK:
            return loaded
        worker.loaded.add(call.module)
        return None

    def _stage_of(self, answer: bytes) -> Stage | None:
        """The stage an answer ends with (None: not one, or not readable)."""
        from ..boundary.records import Limits
        from ..boundary.wire import loads

        try:
            return Stage.of(loads(answer, Limits(max_bytes=self.answer_limit)).get("stage"))
        except Exception:
            return None

    def _import_hung(self, call: _Call, worker: WorkerHandle, output: str) -> bytes:
        from ..boundary.wire import dumps

        self._hung(call.key, call.module, worker, call.timeout)
        return dumps({"stage": Stage.IMPORT_TIMEOUT, "seconds": call.timeout, **call.where, "output": output})

    def _answer(self, call: _Call, worker: WorkerHandle, exchanged: Exchanged, replace_if_left: bool = True) -> bytes:
        """The answer bytes for one exchange: the worker's own, with what it
        printed added, or the sandbox's account of how it ended."""
        from ..boundary.wire import dumps

        where = {**call.where, "output": exchanged.output}
        if exchanged.kind == "timeout":
            self._retire(call.key, worker)
            return dumps({"stage": Stage.TIMEOUT, "seconds": call.timeout, **where})
        if exchanged.kind == "too_large":
            self._retire(call.key, worker)
            return dumps({"stage": Stage.TOO_LARGE, "size": exchanged.size, "limit": self.answer_limit, **where})
        if exchanged.kind == "eof" or exchanged.answer is None:
            status = self._retire(call.key, worker, died=True)
            return dumps({"stage": Stage.CRASHED, "how": describe_status(status), **where})
        if replace_if_left and worker.left_behind():
            # a thread or process of the student's would run on between checks
            self._retire(call.key, worker)
        return self._with_output(exchanged.answer, exchanged.output)

    def _with_output(self, answer: bytes, output: str) -> bytes:
        """The worker's answer with what the call printed added to its own
        ``output`` (left as it is where it cannot be read: refused again,
        with its reason, by the caller)."""
        from ..boundary.records import Limits
        from ..boundary.wire import dumps, loads

        if not output.strip():
            return answer
        try:
            outcome = loads(answer, Limits(max_bytes=self.answer_limit))
        except Exception:
            return answer
        if type(outcome) is not dict:
            return answer
        outcome["output"] = (str(outcome.get("output") or "") + output)[: OUTPUT_LIMIT + 200]
        return dumps(outcome)

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

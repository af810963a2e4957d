"""The words the grader and its worker say to each other, and a check's status.

Both sides read and write these: the sandbox's worker (``boundary/student.py``
answers, ``sandbox/zygote.py`` serves spawn requests, ``sandbox/worker.py``
reads each call's header) and the grader (``sandbox/executor.py`` asks,
``boundary/failures.py`` turns an answer into feedback, one handler per
``Stage``). ``SpawnRequest``/``SpawnReply`` (a worker asked of the zygote)
and ``CallHeader`` (one call of a worker, its ``Op``) are dataclasses with
``to_wire``/``from_wire``; ``from_wire`` refuses a missing or unknown key.
The answers are dataclasses too: the zygote's (``SpawnReply``,
``Acknowledged``, ``Refusal``, to a ``ControlOp``) and the worker's
(``Ready`` once, then a ``CallReply`` per call). What crosses the process
boundary stays plain JSON with plain strings, as before: each enum's values are the strings on the wire, so a
worker of another build still reads and writes the same bytes.

The worker is student code's process: what it answers may be anything.
``Stage.of`` reads a stage from it and gives None for a word that is not
one; the grader then reports the generic "crashed" (a hostile worker learns
nothing from it), and warns with ``ProtocolWarning``, which the grader's
own test suite turns into an error, so that a stage added on one side only
cannot slip through unnoticed.

This module imports nothing of the package: every layer may use it.
"""

from __future__ import annotations

import dataclasses
import enum
import warnings
from typing import Any


class _WireEnum(str, enum.Enum):
    """A member is its value everywhere a string is used: formatted, hashed,
    compared, written to JSON (``str, Enum`` alone formats as
    ``Class.MEMBER`` from Python 3.11 on, and ``StrEnum`` is not in 3.10)."""

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(str.__str__(self), spec)

    def __hash__(self) -> int:
        return str.__hash__(self)


class Stage(_WireEnum):
    """How a worker's answer ends (its ``stage`` field), or, for the last
    few, what the sandbox reports in the worker's place."""

    OK = "ok"  # the value came back
    # the module could not be loaded
    MISSING = "missing"
    EMPTY = "empty"  # set by the grader: the file has nothing in it
    NOTEBOOK = "notebook"
    IMPORT_TIMEOUT = "import_timeout"
    SYNTAX = "syntax"
    IMPORT = "import"
    NO_FUNCTION = "no_function"
    # the call ended another way
    RAISED = "raised"
    EXIT = "exit"
    INTERRUPT = "interrupt"
    MEMORY = "memory"
    REQUEST = "request"  # the worker could not make the grader's arguments
    # said by the sandbox, not the worker
    TOO_LARGE = "too_large"
    UNSTAGEABLE = "unstageable"
    TIMEOUT = "timeout"
    CRASHED = "crashed"

    @classmethod
    def of(cls, value: Any) -> Stage | None:
        """The stage ``value`` names (it came from the worker), else None."""
        if isinstance(value, Stage):
            return value
        if type(value) is not str:
            return None
        try:
            return cls(value)
        except ValueError:
            return None


class Status(_WireEnum):
    """A check's status, as the JSON report writes it (DESIGN.md section 4)."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # the check itself broke
    TIMEOUT = "timeout"
    CRASHED = "crashed"  # student code killed its process
    SKIPPED = "skipped"  # not graded (no CUDA, ...)


class StudentStatus(_WireEnum):
    """A student's status in a class run, as the class worker writes it into
    the student's report and the class's outputs read it back."""

    GRADED = "graded"
    NOT_ATTEMPTED = "not attempted"  # no point, every check failing as an untouched stub fails
    MISSING = "missing"  # no module handed in
    ERROR = "error"  # grading did not finish


# Students whose scores say something about the class's understanding; a
# missing submission or a grading error says nothing about it.
SCORED = (StudentStatus.GRADED, StudentStatus.NOT_ATTEMPTED)

# statuses that mean the student's code did not earn the check
NOT_PASSED = (Status.FAILED, Status.TIMEOUT, Status.CRASHED, Status.ERROR)
# the ones whose feedback is about the student's code ("error": the check broke)
STUDENT_FAILED = (Status.FAILED, Status.TIMEOUT, Status.CRASHED)


class Op(_WireEnum):
    """What the grader asks a worker to do with a module (a call's ``op``)."""

    LOAD = "load"  # import it only: an import that hangs is told apart from a call that hangs
    CALL = "call"  # call one of its functions
    VJP = "vjp"  # call it and run backward with the grader's grad_outputs
    RUN = "run"  # a grader function drives the module (the engine track)


class ProtocolWarning(UserWarning):
    """One side said a word the other does not know (an error in the
    grader's own tests: tests/conftest.py)."""


def unknown(what: str, value: Any) -> None:
    """Warn that ``value`` is not a known ``what``. A hostile worker may
    send anything, and a warning reaches pytest's summary unredacted: the
    value is quoted only when it could be a word of the protocol (a stage
    the grader forgot), else only its type is named."""
    word = (
        type(value) is str
        and len(value) <= 40
        and value.replace("_", "").isalpha()
        and value.isascii()
        and value.islower()
    )
    said = repr(value) if word else f"a {type(value).__name__}"
    warnings.warn(ProtocolWarning(f"unknown {what}: {said}"), stacklevel=3)


class ProtocolError(ValueError):
    """A message that is not in the protocol's form."""


class ControlOp(_WireEnum):
    """What the grader asks of the zygote on its control socket (a
    message's ``op``)."""

    SPAWN = "spawn"  # a worker for one staged submission: a SpawnRequest
    SWEEP = "sweep"  # kill the orphans of keepers that had no PID namespace
    PING = "ping"  # answered once the zygote's imports are done: it is warm


def _from_wire(cls: type, data: Any) -> dict[str, Any]:
    """``data``'s fields for ``cls``: every field present, nothing else."""
    if type(data) is not dict:
        raise ProtocolError(f"a {cls.__name__} must be a JSON object, not {type(data).__name__}")
    names = {field.name for field in dataclasses.fields(cls)}
    unknown_keys, missing = sorted(set(data) - names), sorted(names - set(data))
    if unknown_keys or missing:
        raise ProtocolError(f"a {cls.__name__} with unknown keys {unknown_keys} and missing keys {missing}")
    return data


@dataclasses.dataclass(frozen=True)
class SpawnRequest:
    """What the grader asks the zygote for: a worker for one staged
    submission (sent as JSON with three file descriptors)."""

    directory: str  # the staged submission, as the worker sees it
    private: str | None  # the worker's own folder (None: bubblewrap's tmpfs)
    memory_mb: int
    tmp_mb: int  # the size of the worker's own /tmp and /dev/shm
    uid: int | None  # the uid the worker drops to, if one of its own
    numpy_only: bool
    tasks: int | None  # processes its uid runs already (RLIMIT_NPROC)
    cuda: bool  # start CUDA before the worker says it is ready
    no_torch: str | None  # what importing torch says in a numpy-only worker
    cover: tuple[str, ...]  # folders hidden from the worker
    cpus: tuple[int, ...]  # the asking grading process's CPUs

    OP = ControlOp.SPAWN

    def to_wire(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["cover"], data["cpus"] = list(self.cover), list(self.cpus)
        return {"op": self.OP, **data}

    @classmethod
    def from_wire(cls, data: Any) -> SpawnRequest:
        if type(data) is dict and data.get("op") == cls.OP:
            data = {key: value for key, value in data.items() if key != "op"}
        fields = _from_wire(cls, data)
        for name in ("cover", "cpus"):
            if type(fields[name]) is not list:
                raise ProtocolError(f"a SpawnRequest's {name} must be a list")
        return cls(**{**fields, "cover": tuple(fields["cover"]), "cpus": tuple(fields["cpus"])})


@dataclasses.dataclass(frozen=True)
class SpawnReply:
    """The zygote's answer to a spawn request that worked (the keeper's pid
    and a pidfd for it come with it)."""

    pid: int  # the keeper's
    pidns: bool  # the worker has a PID namespace of its own
    fenced: bool  # it sees only its own staged submission

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, data: Any) -> SpawnReply:
        fields = _from_wire(cls, data)
        if type(fields["pid"]) is not int:
            raise ProtocolError("a SpawnReply's pid must be an integer")
        return cls(pid=fields["pid"], pidns=fields["pidns"] is True, fenced=fields["fenced"] is True)


@dataclasses.dataclass(frozen=True)
class Acknowledged:
    """The zygote's answer to a sweep or a ping: done."""

    ok: bool = True

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, data: Any) -> Acknowledged:
        if _from_wire(cls, data)["ok"] is not True:
            raise ProtocolError("an Acknowledged's ok must be true")
        return cls()


@dataclasses.dataclass(frozen=True)
class Refusal:
    """The zygote's answer to a request it could not serve (no file
    descriptors come with it)."""

    error: str  # why, for the sandbox's log

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, data: Any) -> Refusal:
        error = _from_wire(cls, data)["error"]
        if type(error) is not str:
            raise ProtocolError("a Refusal's error must be a string")
        return cls(error)


@dataclasses.dataclass(frozen=True)
class CallHeader:
    """The header frame of one request to a worker (the arguments follow in
    a second frame, ``wire.dumps`` bytes); the worker answers with ``seq``."""

    op: Op
    module: str
    function: str  # "" for a load
    seconds: float | None = None  # a load's import deadline; None: none sent
    seq: int = 0  # numbered by the worker's handle

    def to_wire(self) -> dict[str, Any]:
        data: dict[str, Any] = {"op": str(self.op), "module": self.module, "function": self.function}
        if self.seconds is not None:
            data["seconds"] = self.seconds
        return {**data, "seq": self.seq}

    @classmethod
    def from_wire(cls, data: Any) -> CallHeader:
        if type(data) is dict and "seconds" not in data:
            data = {**data, "seconds": None}
        fields = _from_wire(cls, data)
        try:
            op = Op(fields["op"])
        except ValueError:
            raise ProtocolError(f"unknown op {fields['op']!r}") from None
        return cls(**{**fields, "op": op})


# The worker's answers. Student code runs in the worker and may write to
# its socket: the grader reads them with from_wire, which trusts no field's
# type, and treats a message in another form as the worker's end (a crash).


@dataclasses.dataclass(frozen=True)
class Ready:
    """A worker's first frame: its libraries are started, and no student
    code has run yet."""

    ready: bool = True

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, data: Any) -> Ready:
        if _from_wire(cls, data)["ready"] is not True:
            raise ProtocolError("a Ready's ready must be true")
        return cls()


@dataclasses.dataclass(frozen=True)
class CallReply:
    """The header frame of a worker's answer to one call (the answer's
    ``wire.dumps`` bytes follow in a second frame): the ``seq`` of the
    ``CallHeader`` it answers."""

    seq: int

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, data: Any) -> CallReply:
        seq = _from_wire(cls, data)["seq"]
        if type(seq) is not int:
            raise ProtocolError("a CallReply's seq must be an integer")
        return cls(seq)

"""The class runner's parent: a pool of warm workers (runner.py's
``_worker``), each sent one student at a time.

The parent starts each worker's sandboxes (sandbox/kits.py), imports pytest,
torch and the plugin once, then forks ``jobs`` workers, which share those
pages. It hands out students, collects their outcomes, stops a student
past --student-timeout (killing its worker, which costs that student only),
and replaces a worker whose memory passes ``recycle_mb``, so memory cannot
creep up with the class size. Every worker's temporary folder is removed
when it ends, however it ends.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.context import BaseContext
from pathlib import Path

from ..i18n import msg
from ..sandbox.isolation import Unavailable, sandbox_parent
from ..sandbox.kits import Kit, reap, release, start_kits, stop_shared
from ..sandbox.leftovers import claim, sweep
from .runner import BEGAN, WARM_UP_S, ClassSettings, Outcome, _worker, error_report, write_report
from .students import Student

# A worker is replaced once its memory passes RECYCLE_MB (so the run's memory
# cannot creep up with the class size), or after RECYCLE students at most; a
# fresh worker starts a fresh sandbox zygote, about 5 s of torch import.
RECYCLE_MB = 2048
RECYCLE = 500


@dataclass
class _Slot:
    process: multiprocessing.Process
    tasks: Connection
    results: Connection
    student: Student | None = None
    seed: int = 0
    started: float = 0.0  # when the worker began this student (until then, when it was sent)
    began: bool = False
    outcome: Outcome | None = None
    done: int = 0
    overdue: bool = False  # killed for taking longer than student_timeout
    scratch: Path | None = None  # the worker's temporary folder (its sandboxes'), removed when it ends
    launchers: list = field(default_factory=list)  # of the sandboxes started for it, ours to reap
    cpus: set[int] | None = None  # where it runs (_cpus)


def _scratch() -> Path:
    """A worker's temporary folder. A worker killed for --student-timeout
    cannot stop its own sandboxes: what they leave on disk lies here, and
    the parent removes it."""
    try:
        parent = sandbox_parent(for_other_uids=True)
    except Unavailable:
        parent = None  # no folder other uids reach: only a sandbox of our own uid can run
    sweep(parent if parent is not None else Path(tempfile.gettempdir()))  # what killed class runs left
    scratch = Path(tempfile.mkdtemp(prefix="grade-class-worker-", dir=parent))
    claim(scratch)
    os.chmod(scratch, 0o755)  # where the sandbox's own uid makes its folders (sandbox_parent)
    return scratch


def make_private(out: Path) -> None:
    """A class run's OUT, and everything written from here on, readable by
    the grader's user only (``cli.run`` gives its caller's umask back): in
    ``user`` isolation each student's code runs as another uid, which must
    not read a classmate's unpacked files or report. The sandbox opens what
    a worker needs of its own, by name."""
    os.umask(0o077)
    os.chmod(out, stat.S_IMODE(os.stat(out).st_mode) & 0o700)


def readable_by_others(path: Path) -> bool:
    """Whether a uid with no groups can reach ``path`` (pass through every
    folder on the way, and into it or read it): it then reads whatever
    file of a folder others may read, knowing the name, or the export's
    zip itself."""
    try:
        wanted = stat.S_IROTH if path.is_file() else stat.S_IXOTH
        return all(os.stat(part).st_mode & stat.S_IXOTH for part in reversed(path.parents)) and bool(
            os.stat(path).st_mode & wanted
        )
    except OSError:
        return False


def _refuse_readable(
    settings: ClassSettings, kits: list[Kit | None], work: list[tuple[Student, int]], on_done: Callable[[Outcome], None]
) -> list[tuple[Student, int]]:
    """Under ``user`` isolation, a class whose submissions other uids can
    reach (the export as given, a zip or a folder, or a folder graded where
    it is): each such student gets an error report saying what to do, not
    a grading that would let every classmate's code read their work
    (bubblewrap shows a worker none of it)."""
    if not any(kit is not None and kit.isolation.mode == "user" for kit in kits):
        return work
    export = settings.submissions if settings.submissions and readable_by_others(settings.submissions) else None
    kept = []
    for student, seed in work:
        exposed = export or (
            student.modules.parent if student.has_modules and readable_by_others(student.modules) else None
        )
        if exposed is not None:
            error = msg("class.readable_by_others", folder=str(exposed))
            write_report(settings.out, error_report(settings, student, seed, error))
            on_done(Outcome(student.id, "error", 0.0, 0.0, error))
        else:
            kept.append((student, seed))
    return kept


def usable_cpus(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """The CPUs this run may keep busy, the default --jobs: those it may run
    on (a Slurm job's, taskset's), fewer where the CPU quota of its cgroup
    (a container's --cpus, a Kubernetes limit) allows less, rounded up.
    os.cpu_count() counts the whole machine: on a shared server, a worker
    for each of its cores would take memory and time the run was not given.
    The quota is read where a container sees its own cgroup, as joblib's
    loky reads it."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    try:
        if (cgroup / "cpu.max").is_file():  # cgroup v2: "QUOTA PERIOD", or "max PERIOD"
            quota, period = (cgroup / "cpu.max").read_text().split()[:2]
        else:  # cgroup v1: a quota of -1 sets none
            quota = (cgroup / "cpu" / "cpu.cfs_quota_us").read_text().strip()
            period = (cgroup / "cpu" / "cpu.cfs_period_us").read_text().strip()
        if int(quota) > 0 and int(period) > 0:
            count = min(count, -(-int(quota) // int(period)))
    except (OSError, ValueError):
        pass  # no quota ("max", -1, no such file): the CPUs it may run on
    return max(1, count)


def _cpus(workers: int) -> list[set[int] | None]:
    """A CPU of its own for each worker, where there are as many workers
    as CPUs (the default -j): a worker, its zygotes and their workers then
    hand each other every call on one CPU, instead of waking another one
    for each (a class of 100 took 5% less time on 2 cores). With CPUs to
    spare, a worker gains from the idle ones (1% with -j 1 on 2 cores);
    with fewer CPUs than workers, the kernel spreads them best."""
    try:
        allowed = sorted(os.sched_getaffinity(0))  # what this run may use (a Slurm job's cores, say)
    except (AttributeError, OSError):
        return [None] * workers
    if workers != len(allowed) or workers < 2:
        return [None] * workers
    return [{cpu} for cpu in allowed]


def _start_kits(settings: ClassSettings, scratches: list[Path], cpus: list[set[int] | None]) -> list[Kit | None]:
    """The workers' sandboxes, started before the parent imports torch;
    where that fails, each worker starts its own (and reports why)."""
    try:
        return list(start_kits(settings.isolation, scratches, cpus))
    except Exception:
        return [None] * len(scratches)


def _start(
    context,
    settings: ClassSettings,
    scratch: Path | None = None,
    kit: Kit | None = None,
    others: Sequence[Kit | None] = (),
    cpus: set[int] | None = None,
) -> _Slot:
    """Fork a worker; ``kit``: its sandboxes, started already (``others``:
    kits of workers not forked yet, which this one must not hold); ``cpus``:
    where it and its sandboxes run."""
    task_r, task_w = context.Pipe(duplex=False)
    result_r, result_w = context.Pipe(duplex=False)
    scratch = scratch or _scratch()
    process = context.Process(
        target=_worker, args=(settings, task_r, result_w, scratch, kit, others, cpus), daemon=True
    )
    process.start()
    task_r.close()
    result_w.close()
    return _Slot(
        process, task_w, result_r, scratch=scratch, launchers=release(kit) if kit is not None else [], cpus=cpus
    )


def _stop(slot: _Slot, kill: bool = False) -> None:
    with contextlib.suppress(OSError, BrokenPipeError):
        if not kill:
            slot.tasks.send(None)
    if kill:
        slot.process.kill()
    slot.process.join(timeout=30)
    if slot.process.is_alive():
        slot.process.kill()
        slot.process.join()
    slot.tasks.close()
    slot.results.close()
    reap(slot.launchers)
    if slot.scratch is not None:
        shutil.rmtree(slot.scratch, ignore_errors=True)


# Imported once in the parent, so no student's session imports them again.
# torch imports the last one lazily, at the first backward given its output
# gradients (symbolic_shapes, with sympy: about half a second); the parent
# must not run a backward: autograd's threads do not survive a fork.
WARM = (
    "pytest",
    "torch",
    "numpy",
    "numpy.random",
    "pytest_autograd_grader.plugin",
    "pytest_autograd_grader.checking.autograd",
    "pytest_autograd_grader.checking.seeding",
    "pytest_autograd_grader.boundary.submission",
    "pytest_autograd_grader.boundary.blame",
    "pytest_autograd_grader.sandbox",
    "torch.fx.experimental.symbolic_shapes",
)


def warm_up() -> None:
    """Import what every student's session needs, once, before forking."""
    import importlib

    for name in WARM:
        importlib.import_module(name)
    from ..sessions import freeze_imports

    freeze_imports()  # before the fork: the workers share these pages and never scan them


@dataclass
class _Crew:
    """One ``grade_all``'s workers, the students not handed out yet, and
    what it does with each outcome."""

    settings: ClassSettings
    context: BaseContext  # multiprocessing's "fork" one
    pending: list[tuple[Student, int]]  # the next one last
    on_done: Callable[[Outcome], None]
    recycle: int
    recycle_mb: float
    slots: list[_Slot] = field(default_factory=list)


def grade_all(
    settings: ClassSettings,
    work: list[tuple[Student, int]],
    jobs: int,
    on_done: Callable[[Outcome], None],
    recycle: int = RECYCLE,
    recycle_mb: float = RECYCLE_MB,
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """Grade ``work`` ((student, seed) pairs) on ``jobs`` warm workers,
    calling ``on_done`` as each student finishes (in the parent), and
    ``meanwhile`` once they are started (the parent has time while they
    warm up)."""
    if not work:
        return  # --resume found every student done: nothing to start, probe or import
    scratches = [_scratch() for _ in range(min(jobs, len(work)))]
    cpus = _cpus(len(scratches))
    kits = _start_kits(settings, scratches, cpus)  # their torch imports overlap ours
    work = _refuse_readable(settings, kits, work, on_done)
    warm_up()
    crew = _Crew(settings, multiprocessing.get_context("fork"), list(reversed(work)), on_done, recycle, recycle_mb)
    try:
        for number, scratch in enumerate(scratches):
            crew.slots.append(_start(crew.context, settings, scratch, kits[number], kits[number + 1 :], cpus[number]))
        for slot in crew.slots:
            _give(slot, crew.pending)
        if meanwhile is not None:
            meanwhile()
        while any(slot.student is not None for slot in crew.slots):
            _next_outcomes(crew)
    finally:
        _stop_crew(crew.slots, kits, scratches)


def _next_outcomes(crew: _Crew) -> None:
    """Wait for a busy worker's outcome, its death, or the first deadline;
    then settle every busy worker that has one."""
    busy = [slot for slot in crew.slots if slot.student is not None]
    first_deadline = min(_deadline(crew.settings, slot) for slot in busy)
    ready = wait(
        [slot.results for slot in busy] + [slot.process.sentinel for slot in busy],
        timeout=max(0.0, first_deadline - time.monotonic()),
    )
    for slot in busy:
        _read(slot)
        overdue = _stop_if_overdue(crew.settings, slot)
        if overdue or slot.outcome is not None or slot.process.sentinel in ready:
            _finish_student(crew, slot)


def _stop_if_overdue(settings: ClassSettings, slot: _Slot) -> bool:
    """Kill the worker of a student past --student-timeout (which costs
    that student only)."""
    overdue = slot.outcome is None and time.monotonic() > _deadline(settings, slot)
    if overdue:
        slot.process.kill()
        slot.process.join()
        slot.overdue = True
    return overdue


def _finish_student(crew: _Crew, slot: _Slot) -> None:
    """The slot's student done: its outcome told, the worker replaced if
    it died or is spent, and the next student handed out."""
    outcome = _collect(crew.settings, slot)
    crew.on_done(outcome)
    if not slot.process.is_alive() or slot.done >= crew.recycle or outcome.rss_mb > crew.recycle_mb:
        _stop(slot, kill=not slot.process.is_alive())
        if crew.pending:
            crew.slots[crew.slots.index(slot)] = slot = _start(crew.context, crew.settings, cpus=slot.cpus)
    _give(slot, crew.pending)


def _stop_crew(slots: list[_Slot], kits: list[Kit | None], scratches: list[Path]) -> None:
    """Every worker stopped (killed mid-student), the sandboxes and
    folders of those never started removed, the shared zygotes stopped."""
    for slot in slots:
        if slot.process.is_alive() or slot.process.exitcode is None:
            _stop(slot, kill=slot.student is not None)
    for kit, scratch in list(zip(kits, scratches))[len(slots) :]:  # never handed to a worker
        for sandbox in kit.sandboxes.values() if kit is not None else ():
            sandbox.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    stop_shared(kits)  # the workers are gone: the zygotes they shared, and their folder


def _deadline(settings: ClassSettings, slot: _Slot) -> float:
    return slot.started + settings.student_timeout + (0.0 if slot.began else WARM_UP_S)


def _read(slot: _Slot) -> None:
    """Take what the worker has sent: the start of its student, its outcome."""
    with contextlib.suppress(EOFError, OSError):
        while slot.outcome is None and slot.results.poll():
            message = slot.results.recv()
            if isinstance(message, Outcome):
                slot.outcome = message
            elif message == BEGAN and not slot.began:
                slot.began, slot.started = True, time.monotonic()


def _give(slot: _Slot, pending: list[tuple[Student, int]]) -> None:
    slot.student, slot.outcome, slot.began = None, None, False
    if pending and slot.process.is_alive():
        slot.student, slot.seed = pending.pop()
        slot.started = time.monotonic()
        slot.tasks.send((slot.student, slot.seed))


def _collect(settings: ClassSettings, slot: _Slot) -> Outcome:
    student = slot.student
    assert student is not None
    slot.done += 1
    _read(slot)
    if slot.outcome is not None:
        return slot.outcome
    # the worker died while grading this student: the grader's failure,
    # which costs this student's report only
    code = slot.process.exitcode
    if slot.overdue:
        error = msg("class.student_overdue", seconds=settings.student_timeout)
    else:
        error = msg("class.worker_died", code=code)
    write_report(settings.out, error_report(settings, student, slot.seed, error))
    return Outcome(student.id, "error", 0.0, time.monotonic() - slot.started, error)

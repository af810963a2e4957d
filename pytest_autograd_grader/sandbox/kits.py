"""Sandboxes a parent starts for the processes it is about to fork (the
class runner's workers), before its own imports: each zygote's torch import
then overlaps the parent's, instead of following it in every worker.

Where a sandbox fences each worker in (bubblewrap, or a uid per worker),
the forked processes share one torch and one numpy-only zygote, each asking
on a control socket of its own: a keeper gives its worker a /tmp of its own
and hides every staged submission but its worker's (namespaces.py), so
students graded at the same time see nothing of each other; one zygote's
torch import instead of one per process is about 2.5 CPU-seconds less
before the first student. A worker that the zygote reports unfenced (the
kernel refused the keeper's mounts) makes its process start a sandbox of
its own. Elsewhere (processes only) each forked process gets a kit of its
own. The parent lets go of a kit once its worker is forked, so the zygotes
end with the workers, however they end; ``stop_shared`` ends what is left.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import isolation as iso
from .launch import _Sandbox, stop_all
from .worker_handle import close_fd


@dataclass
class Kit:
    setting: str  # the --grade-isolation the worker's sessions ask for
    isolation: iso.Isolation
    sandboxes: dict = field(default_factory=dict)  # launch.sandbox_of's keys
    shared: list = field(default_factory=list)  # the sandboxes its views belong to (the parent stops them)


def start_kits(setting: str | None, folders: list[Path], cpus: list[set[int] | None] | None = None) -> list[Kit]:
    """One kit per folder (each kit's sandboxes are made in its folder, and
    run on its ``cpus``), started, not waited for: a worker's first session
    waits for its own."""
    from .probe import isolation_for

    setting = (setting or "auto").lower()
    first = isolation_for(setting)
    stop_all()  # the probe's zygote: each kit has its own, in its own folder
    if len(folders) > 1 and first.mode in ("bwrap", "user"):
        return _shared_kits(setting, first, len(folders))
    kits: list[Kit] = []
    try:
        for number, folder in enumerate(folders):
            isolation = first
            if first.uid is not None and kits:
                taken = {kit.isolation.uid for kit in kits}
                uid = iso.allocate_uid()
                while uid in taken:
                    uid = iso.allocate_uid()
                isolation = replace(first, uid=uid)
            kit = Kit(setting, isolation)
            kits.append(kit)
            for numpy_only in (False, True):
                sandbox = _Sandbox(isolation, numpy_only, folder)
                kit.sandboxes[(isolation.mode, isolation.uid, numpy_only)] = sandbox
                with _running_on(cpus[number] if cpus else None):
                    sandbox.start()
    except BaseException:
        for kit in kits:
            for sandbox in kit.sandboxes.values():
                sandbox.stop()
        raise
    return kits


def _shared_kits(setting: str, isolation: iso.Isolation, count: int) -> list[Kit]:
    """``count`` kits that share one torch and one numpy-only zygote (made
    in the isolation's own parent folder: a worker's scratch folder goes
    with that worker)."""
    owners = []
    try:
        for numpy_only in (False, True):
            owner = _Sandbox(isolation, numpy_only, connections=count)
            owners.append(owner)
            owner.start()
    except BaseException:
        for owner in owners:
            owner.stop()
        raise
    views = [owner.views() for owner in owners]
    return [
        Kit(
            setting,
            isolation,
            {
                (isolation.mode, isolation.uid, owner.numpy_only): views[index][number]
                for index, owner in enumerate(owners)
            },
            owners,
        )
        for number in range(count)
    ]


def stop_shared(kits: list) -> None:
    """End the sandboxes the kits' views belong to (their workers are gone)."""
    for owner in {id(owner): owner for kit in kits if kit is not None for owner in kit.shared}.values():
        owner.stop()


@contextlib.contextmanager
def _running_on(cpus: set[int] | None):
    """This process on ``cpus`` for a while: what it starts meanwhile inherits them."""
    if not cpus:
        yield
        return
    try:
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, cpus)
    except (AttributeError, OSError):
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, before)


def adopt(kit: Kit) -> None:
    """In the forked process: ``kit`` becomes this process's sandboxes, the
    ones its sessions' isolation_for and sandbox_of answer."""
    from ..process_state import PROCESS

    PROCESS.sandboxes = dict(kit.sandboxes)
    PROCESS.isolations[kit.setting] = kit.isolation


def release(kit: Kit) -> list[subprocess.Popen]:
    """Let go of ``kit`` in this process (another one holds it now): our
    ends of its sockets and pipes close, so its zygotes end with their
    holder. Answers the launchers this process is the parent of, to reap."""
    launchers = []
    for sandbox in kit.sandboxes.values():
        if sandbox.control is not None:
            with contextlib.suppress(OSError):
                sandbox.control.close()
        sandbox.control, sandbox.controls = None, []
        if sandbox.shared:
            continue  # a view: its socket only; the sandbox's own handles stay with the others (stop_shared)
        for name in ("status_pipe", "launcher_fd"):
            close_fd(getattr(sandbox, name))
            setattr(sandbox, name, None)
        if sandbox.launcher is not None:
            launchers.append(sandbox.launcher)
        sandbox.launcher, sandbox.base = None, None
    return launchers


def reap(launchers: list[subprocess.Popen], seconds: float = 2.0) -> None:
    """Wait (a little) for the launchers of a kit whose holder has ended."""
    for launcher in launchers:
        with contextlib.suppress(subprocess.TimeoutExpired):
            launcher.wait(timeout=seconds)

"""The folders of grading runs that were killed.

A grading process removes its sandbox's folder (staged submissions, the
workers' folders, the zygote's log) when it ends, and the class runner's
parent removes its workers' folders. A process killed outright (SIGKILL,
the OOM killer, a CI job cancelled) cannot: its folders stay in the
temporary directory. Each folder therefore names its owner in a small
file, and the next run that makes a folder of that kind in the same place
removes those whose owner is gone.

An owner is a process of this boot and this PID namespace, told by its pid
and its start time (a pid used again by another process has another start
time). A folder whose owner cannot be told apart from a live process
(another PID namespace, no owner file, another uid's) is left alone.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

OWNER = "grade-owner.json"
PREFIXES = ("grade-sandbox-", "grade-class-worker-")  # launch.py's and the class runner's (pool.py)

_swept: set[str] = set()  # folders swept by this process: once each


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> str:
    """The process's start time (clock ticks after boot), "" when it is gone."""
    stat = _read(f"/proc/{pid}/stat")
    try:
        return stat.rsplit(")", 1)[1].split()[19]
    except IndexError:
        return ""


def _me() -> dict:
    return {
        "pid": os.getpid(),
        "start": _start_time(os.getpid()),
        "boot": _read("/proc/sys/kernel/random/boot_id"),
        "pidns": _pid_namespace(),
    }


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def claim(folder: Path) -> None:
    """Name this process as ``folder``'s owner (best effort: a folder with
    no owner is only never removed by another run)."""
    try:
        (Path(folder) / OWNER).write_text(json.dumps(_me()))
    except OSError:
        pass


def _gone(owner: dict, me: dict) -> bool:
    """Whether ``owner`` is a process that has ended; False when that
    cannot be told."""
    pid, start = owner.get("pid"), owner.get("start")
    if type(pid) is not int or type(start) is not str or not start or not me["boot"]:
        return False
    if owner.get("boot") != me["boot"]:
        return True  # the machine started again since: every process of then is gone
    if not me["pidns"] or owner.get("pidns") != me["pidns"]:
        return False  # another PID namespace's pid: not ours to look up
    return _start_time(pid) != start


def sweep(parent: Path) -> list[Path]:
    """Remove the folders in ``parent`` (once per process) left by grading
    runs that were killed; answers those removed."""
    key = str(parent)
    if key in _swept or not Path("/proc/self/stat").exists():
        return []
    _swept.add(key)
    me, removed = _me(), []
    uid = os.geteuid()
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(PREFIXES):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            owner = json.loads(Path(entry.path, OWNER).read_text())
        except (OSError, ValueError):
            continue
        if type(owner) is dict and _gone(owner, me):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed

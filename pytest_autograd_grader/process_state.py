"""What the grader keeps as long as its process, not a session: declared
here, in one place, as the one ``PROCESS`` object.

- ``sandboxes``: the sandboxes' zygotes started so far (sandbox/launch.py
  ``sandbox_of``), by (isolation mode, uid, numpy-only); they stay warm from
  one session to the next (watch mode, the class runner's workers, a
  notebook's kernel);
- ``isolations``: the isolation chosen for each ``--grade-isolation``
  setting (sandbox/probe.py ``isolation_for``): probing starts a worker, and
  a new uid would mean a new zygote;
- ``imports_frozen``: whether the imports are out of every garbage
  collection yet (sessions.py ``freeze_imports``), done once a process.

The package imports this module itself, so it lives as long as the
package: pytester's in-process runs forget every module first imported
during a run, and a registry forgotten with them would start a zygote for
every run. Per-session state lives in ``config.stash`` (session_state.py).
``reset`` is for tests: it stops the zygotes and forgets everything.
This module imports nothing of the grader's (the sandbox's worker may
import the package without pytest).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ProcessState:
    sandboxes: dict = field(default_factory=dict)  # (mode, uid, numpy_only) -> sandbox.launch._Sandbox
    isolations: dict = field(default_factory=dict)  # --grade-isolation setting -> sandbox.Isolation
    imports_frozen: bool = False


PROCESS = ProcessState()


def forget_sandboxes() -> None:
    """Stop every zygote of this process and forget the isolations chosen
    (sandbox.stop_all: a process about to fork workers that must each start
    their own). The imports stay frozen."""
    for sandbox in list(PROCESS.sandboxes.values()):
        sandbox.stop()
    PROCESS.sandboxes.clear()
    PROCESS.isolations.clear()


def reset() -> None:
    """Back to a fresh process's state: for tests (tests/conftest.py's
    ``fresh_process_state``)."""
    forget_sandboxes()
    PROCESS.imports_frozen = False

"""Student code runs in worker processes behind an operating-system
boundary; the pytest process only judges.

Processes::

    pytest (grader)            executor.SandboxExecutor: one worker per submission directory
      └─ launcher              bubblewrap (--grade-isolation bwrap; as root, after handoff.py where
           │                   its uid cannot reach Python), else python; a session of its own
           └─ zygote           imports torch once, never touches CUDA; pid 1 of a PID namespace,
                │              non-dumpable, subreaper (zygote.py)
                └─ keeper      one per worker: pid 1 of the worker's own PID namespace where the
                     │         kernel allows, else its subreaper; writes the worker's wait status
                     └─ worker student code: own uid (user mode), rlimits, no new privileges,
                               private working directory, output on a pipe (worker.py)

* ``isolation.py`` describes the boundaries (bubblewrap, a uid per worker,
  or processes only), the paths they need and bubblewrap's command line;
  ``probe.py`` picks one by starting a real worker behind it;
  ``handoff.py`` lets a root grader hand bubblewrap's uid what it cannot
  reach (Python under a 0700 home).
* ``staging.py`` copies the submission where the sandbox can read it;
  ``leftovers.py`` names each folder's owner, so that the next run removes
  the folders of a run that was killed.
* ``launch.py`` starts the launcher and zygote of an isolation, once per
  pytest process; ``kits.py`` starts them early for processes about to be
  forked (the class runner's workers); ``executor.py`` hands its workers requests;
  ``worker_handle.py`` is the grader's hold on one worker.
* The grader holds pidfds of each keeper and worker: it reads from /proc
  whether a worker left a thread or process behind (then the worker is
  replaced before the next check), kills a worker's whole namespace (or
  uid) on a timeout, a crash or at the end, and knows when it is gone.

It imports ``boundary`` (the worker runs ``boundary.student``), ``checking``'s
device set-up, ``outcomes`` and ``i18n``; never pytest's side of the grader.
"""

from .executor import SandboxExecutor
from .framing import describe_status
from .isolation import Isolation, Unavailable
from .launch import stop_all
from .probe import choose, isolation_for, prestart, require_linux

__all__ = [
    "SandboxExecutor",
    "Isolation",
    "Unavailable",
    "choose",
    "describe_status",
    "isolation_for",
    "prestart",
    "require_linux",
    "stop_all",
]

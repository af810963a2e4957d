"""The fixtures exercise authors use: ``submission``, ``autograd``,
``grade_device`` and ``grade_rng``.

They work without ``--grade`` too (plain ``pytest``: no scores or reports),
and student code still runs in the sandbox with its timeouts: only a
``--grade-inline`` typed on the command line runs it inside pytest. torch is
imported inside the fixtures, never at module level.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .session_state import CREDIT, EXECUTOR, PLACE, Credit, Place, settings_of, state_of

if TYPE_CHECKING:
    from .boundary.submission import Submission, Submissions
    from .boundary.tracing import Trace
    from .checking.autograd import Autograd
    from .checking.seeding import GradeRng
    from .options import Settings
    from .sandbox import SandboxExecutor
    from .sandbox.isolation import Isolation
    from .session_state import RunExecutor


def run_seed(config: pytest.Config) -> int:
    return settings_of(config).seed


def executor_for(config: pytest.Config) -> RunExecutor:
    """One executor per pytest process, closed when the session ends."""
    executor = config.stash.get(EXECUTOR, None)
    if executor is None:
        state = state_of(config)
        settings = settings_of(config)
        if not settings.inline:
            from .checking.devices import graded_devices
            from .sandbox import SandboxExecutor

            isolation = (state.isolation if state is not None else None) or _plain_isolation(settings)
            executor = SandboxExecutor(
                memory_mb=settings.memory_mb,
                isolation=isolation,
                answer_limit=int(settings.answer_limit_mb * (1 << 20)),
                cuda="cuda" in graded_devices(settings.device),
            )
            if state is not None:
                # Stop every worker before the reports are written, so no student
                # process is left that could overwrite them.
                config.pluginmanager.register(_CloseBeforeReports(executor), "grade-sandbox-close")
        else:
            from .boundary.submission import InlineExecutor

            executor = InlineExecutor()
        config.stash[EXECUTOR] = executor
        config.add_cleanup(executor.close)
    return executor


def forget_executor(config: pytest.Config) -> None:
    """Close the run's executor (every worker stopped) and forget it: the
    next check gets a new one, as a new session would (the class runner's
    one session grading student after student)."""
    executor = config.stash.get(EXECUTOR, None)
    if executor is not None:
        executor.close()
        del config.stash[EXECUTOR]
        closer = config.pluginmanager.get_plugin("grade-sandbox-close")
        if closer is not None:
            config.pluginmanager.unregister(closer)


def _plain_isolation(settings: Settings) -> Isolation:
    """A plain run picks its isolation when a check first needs it (a run
    with no graded checks never probes); one that cannot work fails the
    check in words."""
    from .outcomes import GraderError
    from .sandbox import Unavailable, isolation_for

    try:
        return isolation_for(settings.isolation)
    except Unavailable as exc:
        raise GraderError(str(exc)) from None


class _CloseBeforeReports:
    def __init__(self, executor: SandboxExecutor) -> None:
        self.executor = executor

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self) -> Generator[None, object, object]:
        self.executor.close()
        return (yield)


@pytest.fixture
def grade_device(request: pytest.FixtureRequest) -> str:
    """The device this check's tensors live on ("cpu" or "cuda")."""
    from .checking.devices import cuda_available, prepare

    device = getattr(request, "param", "cpu")
    if device == "cuda" and not cuda_available():
        pytest.skip("CUDA was asked for (--grade-device cuda) but torch.cuda.is_available() is False on this machine")
    prepare(device)
    return device


def _device_of(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue("grade_device") if "grade_device" in request.fixturenames else "cpu"


@pytest.fixture
def grade_rng(request: pytest.FixtureRequest) -> GradeRng:
    """Generators seeded from the run's seed and this check's id."""
    from .checking.seeding import GradeRng, check_seed

    return GradeRng.create(check_seed(run_seed(request.config), request.node.nodeid), device=_device_of(request))


@pytest.fixture
def submission(request: pytest.FixtureRequest) -> Submissions:
    """``submission("leaf")`` returns a proxy to the student's ``leaf.py``."""
    from .boundary.blame import student_values
    from .boundary.records import Limits
    from .boundary.submission import Budget, Submission, Submissions
    from .checking.autograd import DEFAULT_INSTRUCTION_SHARE
    from .checking.misconceptions import diagnose_error
    from .declarations import spec_of

    state = state_of(request.config)
    settings = settings_of(request.config)
    directory = settings.submission or Path(request.path).parent
    timeout = spec_of(request.node).timeout or settings.timeout  # the marker's timeout=, for this check
    executor = executor_for(request.config)
    limits = Limits(max_bytes=int(settings.answer_limit_mb * (1 << 20)))
    budget = Budget(timeout)  # --grade-timeout bounds the whole check, not each call
    # Every value handed back is remembered, so an error the check makes on
    # a malformed answer is blamed on the answer (blame.py).
    on_value = student_values(request.node).add if state is not None else None

    # where in the student's files the check looked: the report's file and line
    place = request.node.stash.setdefault(PLACE, Place()) if state is not None else None
    on_place = place.note if place is not None else None

    root = Path(directory).resolve()

    def load(module: str, on_trace: Callable[[Trace], None] | None = None, numpy_only: bool = False) -> Submission:
        return Submission(
            executor,
            root,
            module,
            budget,
            on_value=on_value,
            limits=limits,
            on_trace=on_trace,
            numpy_only=numpy_only,
            on_place=on_place,
            explain=diagnose_error,
            on_remark=place.remark if place is not None else None,
        )

    # a trace the student's code tampered with verifies no instruction: the check's share is lost
    credit = _credit_of(request.node)
    return Submissions(load, on_tampered=lambda text: credit.instruction(False, text, DEFAULT_INSTRUCTION_SHARE))


@pytest.fixture
def autograd(request: pytest.FixtureRequest) -> Autograd:
    """Comparisons against torch.autograd, diagnoses and partial credit."""
    from .checking.autograd import Autograd

    return Autograd(device=_device_of(request), credit=_credit_of(request.node))


def _credit_of(item: pytest.Item) -> Credit:
    """The check's partial credit and instructions, shared by its fixtures."""
    from .declarations import spec_of

    spec = spec_of(item)
    return item.stash.setdefault(CREDIT, Credit(points=spec.points, share=spec.instruction_share))

"""Complete ``pytest --grade`` sessions run one after another in one warm
process (the class runner's workers, watch mode): pytest, torch and the
plugin are imported once, the sandbox's zygote stays up between sessions,
and each session imports the checks afresh, as a lone run would.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

WARM_UP_S = 120.0  # the zygote's cold start: torch imported once


def run_session(args: list[str], checks: Path, keep_checks: bool = False, plugins: list | None = None) -> int:
    """``pytest.main(args)`` in this process. Modules loaded from ``checks``
    (the checks files, their conftest) are forgotten afterwards, so the next
    session sees an edited check; libraries loaded on the way stay (torch
    cannot be imported twice in one process). ``keep_checks``: the checks
    cannot change between sessions (a class run, which hashed them), so
    their modules stay imported and the next session collects from them
    without compiling them again. ``plugins``: objects pytest registers
    for this session (the class runner's session loop)."""
    import pytest

    modules = set(sys.modules)
    path = list(sys.path)
    folder = str(Path(checks).resolve()) + os.sep
    try:
        return int(pytest.main(args, plugins=plugins))
    finally:
        if not keep_checks:
            for name in set(sys.modules) - modules:
                file = str(getattr(sys.modules[name], "__file__", None) or "")
                if file and (os.path.realpath(file).startswith(folder) or file.startswith(folder)):
                    del sys.modules[name]
        sys.path[:] = path


def warm_sandbox(isolation: str | None, timeout: float = WARM_UP_S) -> None:
    """Start the zygote sessions with ``--grade-isolation isolation`` will
    use and wait for its torch import, so no session's clock counts it."""
    from .sandbox import prestart

    with contextlib.suppress(Exception):  # the session itself reports a sandbox that cannot start
        prestart((isolation or "auto").lower(), timeout=timeout)

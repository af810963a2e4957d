"""pytest-autograd-grader: grade PyTorch autograd exercises per concept.

Course files import what checks use from here::

    from pytest_autograd_grader import TensorRecord, msg, same, values

Each name is imported when first asked for: the sandbox's worker imports
this package before student code runs and must not import torch with it.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import process_state  # noqa: F401  (the process's registries live as long as the package)

# the one place the version is written: pyproject.toml reads it (dynamic),
# the platform set-ups name their wheel with it; CHANGELOG.md says what changed
__version__ = "0.1.0"

# name -> the module that defines it
_PUBLIC = {
    "TensorRecord": "boundary.records",
    "ErrorRecord": "boundary.records",
    "ObjectRecord": "boundary.records",
    "Trace": "boundary.tracing",
    "RaisedError": "boundary.call_facts",
    "Retained": "boundary.call_facts",
    "same": "checking.compare",
    "values": "checking.compare",
    "first_suspect": "checking.compare",
    "Context": "checking.misconceptions",
    "diagnose_error": "checking.misconceptions",
    "diagnose_update": "checking.misconceptions",
    "diagnose_values": "checking.misconceptions",
    "error_name": "checking.misconceptions",
    "Divisor": "checking.misconceptions",
    "shared_memory": "checking.misconceptions",
    "COPIES_MEMORY": "checking.misconceptions",
    "sgd_variant": "checking.sgd_variants",
    "GradeFailure": "outcomes",
    "StudentFailure": "outcomes",
    "CheckError": "outcomes",
    "Concept": "concepts",
    "fuzz_engine": "engine_fuzz",
    "msg": "i18n",
}
__all__ = sorted(_PUBLIC)


# Any: what the lazily imported name is varies by name, and a type checker
# asks this function for every public name it cannot find above
def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Looked up on every access, never cached here: a process that imports
    # the grader's modules afresh (pytester's in-process runs forget them)
    # must get the class the decoder builds, not an earlier copy of it.
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))

"""Module names of release 0.1 that course files may still import.

Checks written for 0.1 import ``pytest_autograd_grader.compare``,
``.messages``, ``.diagnose`` or ``.records``; those modules now live in the
package's subpackages. A finder on ``sys.meta_path`` answers each former
name with the module that holds it now, imported only when asked for (the
sandbox's worker must not import torch because the package was imported).
New course files import from the package itself:
``from pytest_autograd_grader import same, msg, TensorRecord``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

FORMER = {
    "pytest_autograd_grader.blame": "pytest_autograd_grader.boundary.blame",
    "pytest_autograd_grader.compare": "pytest_autograd_grader.checking.compare",
    "pytest_autograd_grader.devices": "pytest_autograd_grader.checking.devices",
    "pytest_autograd_grader.diagnose": "pytest_autograd_grader.checking.diagnose",
    "pytest_autograd_grader.layout": "pytest_autograd_grader.boundary.layout",
    "pytest_autograd_grader.manifest": "pytest_autograd_grader.platforms.manifest",
    "pytest_autograd_grader.messages": "pytest_autograd_grader.i18n",
    "pytest_autograd_grader.messages_zh": "pytest_autograd_grader.i18n.zh",
    "pytest_autograd_grader.records": "pytest_autograd_grader.boundary.records",
    "pytest_autograd_grader.seeding": "pytest_autograd_grader.checking.seeding",
    "pytest_autograd_grader.student": "pytest_autograd_grader.boundary.student",
    "pytest_autograd_grader.submission": "pytest_autograd_grader.boundary.submission",
    "pytest_autograd_grader.tracing": "pytest_autograd_grader.boundary.tracing",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, current: str):
        self.current = current

    def exec_module(self, module) -> None:
        # The import system returns what sys.modules holds once this returns:
        # the current module itself, so both names share one module object.
        sys.modules[module.__name__] = importlib.import_module(self.current)


class FormerNames(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path=None, target=None):
        current = FORMER.get(name)
        return importlib.util.spec_from_loader(name, _Alias(current)) if current else None


def install() -> None:
    if not any(isinstance(finder, FormerNames) for finder in sys.meta_path):
        sys.meta_path.append(FormerNames())

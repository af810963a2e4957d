"""The package's shape: its import contracts (``[tool.importlinter]`` in
pyproject.toml, checked by import-linter) and the size of its modules.

The contracts are checked on the package as it is, and on copies of it
with one import added against them, so that a contract which could never
break would fail here too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_autograd_grader

PACKAGE = Path(pytest_autograd_grader.__file__).resolve().parent
ROOT = PACKAGE.parent
CONFIG = ROOT / "pyproject.toml"
# message catalogues: one sentence per line, as long as the grader has things to say
CATALOGUES = {"i18n/en.py", "i18n/zh.py"}
MAX_LINES = 420


def lint_imports(package_parent: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on the package found under ``package_parent``, with
    the repository's contracts; no cache is written anywhere."""
    env = {**os.environ, "PYTHONPATH": str(package_parent), "NO_COLOR": "1", "COLUMNS": "200"}
    code = (
        "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(**dict("
        f"config_filename={str(CONFIG)!r}, no_cache=True, no_logo=True)))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=package_parent, timeout=120
    )


def copy_package(tmp_path: Path) -> Path:
    """A copy of the package under ``tmp_path``; returns its folder."""
    return Path(shutil.copytree(PACKAGE, tmp_path / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__")))


def copy_with(tmp_path: Path, file: str, line: str) -> Path:
    """A copy of the package with ``line`` added at the end of ``file``."""
    target = copy_package(tmp_path) / file
    target.write_text(target.read_text() + f"\n{line}\n")
    return tmp_path


def test_the_package_keeps_its_import_contracts():
    done = lint_imports(ROOT)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "each layer imports only the layers below it KEPT" in done.stdout
    assert "no import circle between the modules of any one package KEPT" in done.stdout
    assert "what the sandbox's worker imports never imports pytest KEPT" in done.stdout
    assert "Contracts: 3 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    "file, line, broken",
    [
        # the student's side of the boundary reaching up into the verdicts
        (
            "boundary/records.py",
            "from ..checking import compare  # noqa",
            [
                "each layer imports only the layers below it BROKEN",
                "pytest_autograd_grader.boundary is not allowed to import",
                "pytest_autograd_grader.boundary.records -> pytest_autograd_grader.checking.compare",
            ],
        ),
        # probe.py imports isolation.py; the reverse closes a circle
        (
            "sandbox/isolation.py",
            "from . import probe  # noqa",
            [
                "no import circle between the modules of any one package BROKEN",
                "No cycles are allowed in pytest_autograd_grader.sandbox",
            ],
        ),
        # the worker importing pytest, through a module of the boundary it loads
        (
            "boundary/tracing.py",
            "import pytest  # noqa",
            [
                "what the sandbox's worker imports never imports pytest BROKEN",
                "pytest_autograd_grader.boundary.tracing -> pytest",
            ],
        ),
    ],
    ids=["upwards", "circle", "worker-imports-pytest"],
)
def test_an_import_against_a_contract_breaks_it(tmp_path, file, line, broken):
    done = lint_imports(copy_with(tmp_path, file, line))
    assert done.returncode == 1, done.stdout
    for text in broken:
        assert text in done.stdout, done.stdout


def test_a_module_outside_every_layer_breaks_the_contract(tmp_path):
    (copy_package(tmp_path) / "helpers.py").write_text('"""A module nobody placed in a layer."""\n')
    done = lint_imports(tmp_path)
    assert done.returncode == 1
    assert "pytest_autograd_grader.helpers" in done.stdout


def test_no_module_outgrows_one_idea():
    sizes = {
        p.relative_to(PACKAGE).as_posix(): len(p.read_text().splitlines())
        for p in PACKAGE.rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert len(sizes) > 50
    too_long = {path: n for path, n in sizes.items() if n > MAX_LINES and path not in CATALOGUES}
    assert too_long == {}, "split these along the seams their sections show"

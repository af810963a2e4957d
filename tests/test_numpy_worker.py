"""submission(module, numpy_only=True): student code that cannot reach torch
(the engine track builds its own autograd and must not delegate to
torch.autograd), in a worker forked from a zygote that never imported it."""

import pytest
from conftest import grade_checks

from pytest_autograd_grader.i18n import msg

CHECKS = """
import numpy
import pytest

pytestmark = pytest.mark.grade(concept="engine")

def test_plain_numpy(submission, autograd):
    engine = submission("engine", numpy_only=True)
    got = engine.double([1.0, 2.5])
    assert type(got) is numpy.ndarray and got.tolist() == [2.0, 5.0]
    autograd.assert_equal(engine.torch_loaded(), False, "torch in sys.modules")

def test_import_inside(submission, autograd):
    submission("engine", numpy_only=True).sneaky()

def test_import_at_the_top(submission, autograd):
    submission("cheat", numpy_only=True).double([1.0])

def test_torch_for_the_others(submission, autograd):
    autograd.assert_equal(submission("engine").torch_loaded(), True, "torch in sys.modules")
"""

ENGINE = """
import sys
import numpy as np

def double(values):
    return np.asarray(values, dtype=np.float64) * 2

def torch_loaded():
    return "torch" in sys.modules

def sneaky():
    import torch.autograd
    return 1
"""

CHEAT = """
import torch

def double(values):
    return torch.tensor(values).mul(2).numpy()
"""


@pytest.mark.parametrize("isolation", ["auto", "process"])
def test_numpy_only_workers_have_no_torch(pytester, isolation):
    graded = grade_checks(pytester, CHECKS, f"--grade-isolation={isolation}", engine=ENGINE, cheat=CHEAT)
    assert graded.check("test_plain_numpy")["status"] == "passed", graded.check("test_plain_numpy")["feedback"]
    assert graded.check("test_torch_for_the_others")["status"] == "passed"
    inside = graded.check("test_import_inside")
    assert inside["status"] == "failed"
    assert f"engine.sneaky raised ImportError: {msg('student.numpy_only')}" in inside["feedback"]
    top = graded.check("test_import_at_the_top")
    assert top["status"] == "failed"
    assert f"cheat.py could not be loaded: ImportError: {msg('student.numpy_only')}" in top["feedback"]


# An engine that removes the import hook before importing torch, and drops
# whatever the zygote may have cached of it.
UNHOOKED = """
import sys


def reach():
    sys.meta_path[:] = [f for f in sys.meta_path if "NoTorch" not in type(f).__name__]
    for name in [n for n in sys.modules if n.split(".")[0] in ("torch", "functorch", "torchgen")]:
        del sys.modules[name]
    try:
        import torch
        x = torch.ones(2, requires_grad=True)
        (x * x).sum().backward()
        return "torch.autograd ran: " + str(x.grad.tolist())
    except Exception:
        # what came of the empty folder must not stay behind for the worker to find
        for name in [n for n in sys.modules if n.split(".")[0] == "torch"]:
            del sys.modules[name]
        return "blocked"
"""

UNHOOKED_CHECKS = """
import pytest

pytestmark = pytest.mark.grade(concept="engine")

def test_no_torch_even_without_the_hook(submission, autograd):
    autograd.assert_equal(submission("unhooked", numpy_only=True).reach(), "blocked", "torch in the engine's sandbox")
"""


@pytest.mark.parametrize("mode", ["bwrap", "user", "process"])
def test_only_bubblewrap_keeps_torch_from_an_engine_that_removes_the_hook(pytester, mode):
    from test_isolation import require_isolation

    require_isolation(mode)
    graded = grade_checks(pytester, UNHOOKED_CHECKS, f"--grade-isolation={mode}", unhooked=UNHOOKED)
    check = graded.check("test_no_torch_even_without_the_hook")
    unenforced = msg("isolation.missing.numpy_only")
    if mode == "bwrap":
        # its sandbox holds no torch: nothing to import, whatever the engine does
        assert check["status"] == "passed", check
        assert unenforced not in graded.report["isolation_missing"]
        assert unenforced not in graded.text
    else:
        # said plainly where instructors look: the header and the report
        assert check["status"] == "failed" and "torch.autograd ran" in check["feedback"], check
        assert unenforced in graded.report["isolation_missing"]
        assert unenforced in graded.text


# What a worker imports after its fork, every worker imports again: about
# 5 ms of page faults each time, twice per student. The zygotes import the
# grader's code a worker runs (the engine track's interpreter, telling an
# error) before they fork.
PROBE = """
import sys

AT_IMPORT = set(sys.modules)


def fail():
    raise ValueError("told through the grader's error encoding")


def imported_since():
    return sorted(name for name in set(sys.modules) - AT_IMPORT if "_grade_submission_" not in name)
"""

IMPORTS_CHECKS = """
import pytest

from pytest_autograd_grader.engine_fuzz.interpret import run_engine_batch

pytestmark = pytest.mark.grade(concept="engine")


def test_workers_import_nothing_of_ours_after_the_fork(submission, autograd):
    for numpy_only in (True, False):
        probe = submission("probe", numpy_only=numpy_only)
        try:
            probe.fail()
        except Exception:
            pass
        if numpy_only:  # the engine track's calls: only its workers make them
            probe.run(run_engine_batch, "[]")
        autograd.assert_equal(probe.imported_since(), [], "modules imported in the worker after its fork")
"""


def test_workers_find_the_graders_code_imported_before_their_fork(pytester):
    graded = grade_checks(pytester, IMPORTS_CHECKS, probe=PROBE)
    check = graded.check("test_workers_import_nothing_of_ours_after_the_fork")
    assert check["status"] == "passed", check["feedback"]

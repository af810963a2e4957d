"""submission(module, numpy_only=True): student code that cannot reach torch
(the engine track builds its own autograd and must not delegate to
torch.autograd), in a worker forked from a zygote that never imported it."""

import pytest
from conftest import grade_checks

from pytest_autograd_grader.i18n import msg

CHECKS = '''
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
'''

ENGINE = '''
import sys
import numpy as np

def double(values):
    return np.asarray(values, dtype=np.float64) * 2

def torch_loaded():
    return "torch" in sys.modules

def sneaky():
    import torch.autograd
    return 1
'''

CHEAT = '''
import torch

def double(values):
    return torch.tensor(values).mul(2).numpy()
'''


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

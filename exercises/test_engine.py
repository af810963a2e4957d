"""The engine track: your numpy autograd engine (engine.py) is fuzzed
against torch.autograd. Each check draws random programs of one kind (a
few ops over random shapes, backward calls, zero_grad, no_grad, ...),
among them one for every behaviour engine.py's docstrings specify, runs
them on your engine and in PyTorch, and compares outputs, every .grad,
is_leaf, requires_grad, node names and the errors raised. When they
disagree, the feedback shows the smallest program that disagrees, as
Python you can run, with the likely mistake."""

import pytest

from pytest_autograd_grader import fuzz_engine

pytestmark = pytest.mark.grade(concept="engine")


def fuzz(submission, kind, grade_rng, grade_device):
    # numpy only: an engine cannot hand its work to torch.autograd
    fuzz_engine(submission("engine", numpy_only=True), kind, grade_rng, grade_device)


@pytest.mark.grade(points=2)
def test_op_derivatives(submission, grade_rng, grade_device):
    """Each op's forward values, node name and local derivative"""
    fuzz(submission, "ops", grade_rng, grade_device)


@pytest.mark.grade(points=2)
def test_broadcasting(submission, grade_rng, grade_device):
    """Gradients of broadcast inputs summed back to their shapes"""
    fuzz(submission, "broadcasting", grade_rng, grade_device)


@pytest.mark.grade(points=2)
def test_graph_traversal(submission, grade_rng, grade_device):
    """Fan-out, diamonds and reused intermediates: every path counted once"""
    fuzz(submission, "traversal", grade_rng, grade_device)


@pytest.mark.grade(concept="leaf", points=2)
def test_leaves_and_requires_grad(submission, grade_rng, grade_device):
    """is_leaf, requires_grad, grad_fn and .grad of every tensor

    Under no_grad and after detach too, and which tensors keep a .grad
    (retain_grad included)."""
    fuzz(submission, "leaf", grade_rng, grade_device)


@pytest.mark.grade(concept="accumulation", points=2)
def test_accumulation_and_zeroing(submission, grade_rng, grade_device):
    """.grad adds up over backward calls until zero_grad() clears it"""
    fuzz(submission, "accumulation", grade_rng, grade_device)


@pytest.mark.grade(concept="retain_graph", points=1)
def test_retain_graph_errors(submission, grade_rng, grade_device):
    """A second backward through a freed graph raises; retain_graph keeps it

    The error is PyTorch's, word for word; retain_graph=True keeps the
    graph for the next backward."""
    fuzz(submission, "retain_graph", grade_rng, grade_device)


@pytest.mark.grade(concept="vector_backward", points=2)
def test_vector_backward(submission, grade_rng, grade_device):
    """backward of non-scalar outputs, with a gradient or PyTorch's error

    backward(gradient) of a non-scalar output, the error when the gradient
    is left out, and the module-level backward(tensors, grad_tensors)."""
    fuzz(submission, "vector_backward", grade_rng, grade_device)

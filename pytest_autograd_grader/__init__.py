"""pytest-autograd-grader: grade PyTorch autograd exercises per concept."""

__version__ = "0.1.0"

# The record types checks receive from student code (no torch import here).
from .records import ErrorRecord, ObjectRecord, TensorRecord  # noqa: E402,F401

"""pytest-autograd-grader: grade PyTorch autograd exercises per concept."""

__version__ = "0.1.0"

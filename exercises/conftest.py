"""The shipped course's concepts and messages, given to the grader through the
same hooks any instructor's course uses (README: "Hooks" and "Feedback text").

Its messages live in course_messages_en.py and course_messages_zh.py beside
this file: the checks' labels, requirements and diagnoses, and each concept's
title as ``concept.<id>`` (what --grade-lang shows; ``Concept.title`` below is
the fallback).
"""

import importlib.util
from pathlib import Path

from pytest_autograd_grader import Concept

HERE = Path(__file__).resolve().parent

CONCEPTS = [
    Concept("graph", "Computational graphs",
            "a forward pass records a DAG; backward sums the chain rule over every path"),
    Concept("leaf", "Leaf tensors", "which tensors are leaves, and why only leaves keep .grad"),
    Concept("retain_grad", "Gradients of intermediates", "keeping the gradient of a non-leaf with retain_grad()"),
    Concept("dynamic_graph", "Dynamic graphs",
            "the graph is rebuilt on every forward pass, so Python control flow is allowed"),
    Concept("retain_graph", "Backward twice",
            "backward frees saved tensors; a second backward needs retain_graph=True"),
    Concept("vector_backward", "Backward of non-scalars",
            "a non-scalar output needs grad_tensors; the result is a vector-Jacobian product"),
    Concept("accumulation", "Gradient accumulation", ".grad accumulates across backward calls; zero it between steps"),
    Concept("inplace", "In-place operations",
            "in-place changes to leaves or saved tensors are errors; updates go under no_grad"),
    Concept("no_grad", "Turning gradients off", "how requires_grad propagates; detach() and torch.no_grad()"),
    Concept("higher_order", "Higher-order gradients", "create_graph=True makes the gradient itself differentiable"),
    Concept("custom_function", "Custom autograd Functions",
            "a torch.autograd.Function whose hand-written backward agrees with autograd"),
    Concept("engine", "Your own autograd engine", "the operation rules of a small numpy autograd engine"),
]


def pytest_grade_concepts(config):
    return CONCEPTS


def pytest_grade_messages(config):
    return {"en": _course_module("course_messages_en").EN, "zh": _course_module("course_messages_zh").ZH}


def _course_module(name):
    # Loaded from this folder by path, not imported by name: a module of the
    # same name elsewhere on sys.path (a student's) must not stand in for it.
    spec = importlib.util.spec_from_file_location(f"autograd_course_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

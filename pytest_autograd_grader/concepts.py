"""The concepts a check can be graded under (DESIGN section 6).

A course adds its own through the ``pytest_grade_concepts`` hook; the ids and
titles here are the built-in ones every report understands.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Concept:
    id: str
    title: str
    description: str = ""


BUILTIN_CONCEPTS: tuple[Concept, ...] = (
    Concept("graph", "Computational graphs",
            "a forward pass records a DAG; backward sums the chain rule over every path"),
    Concept("leaf", "Leaf tensors",
            "which tensors are leaves, and why only leaves keep .grad"),
    Concept("retain_grad", "Gradients of intermediates",
            "keeping the gradient of a non-leaf with retain_grad()"),
    Concept("dynamic_graph", "Dynamic graphs",
            "the graph is rebuilt on every forward pass, so Python control flow is allowed"),
    Concept("retain_graph", "Backward twice",
            "backward frees saved tensors; a second backward needs retain_graph=True"),
    Concept("vector_backward", "Backward of non-scalars",
            "a non-scalar output needs grad_tensors; the result is a vector-Jacobian product"),
    Concept("accumulation", "Gradient accumulation",
            ".grad accumulates across backward calls; zero it between steps"),
    Concept("inplace", "In-place operations",
            "in-place changes to leaves or saved tensors are errors; updates go under no_grad"),
    Concept("no_grad", "Turning gradients off",
            "how requires_grad propagates; detach() and torch.no_grad()"),
    Concept("higher_order", "Higher-order gradients",
            "create_graph=True makes the gradient itself differentiable"),
    Concept("custom_function", "Custom autograd Functions",
            "a torch.autograd.Function whose hand-written backward agrees with autograd"),
    Concept("engine", "Your own autograd engine",
            "the operation rules of a small numpy autograd engine"),
)


def merge_concepts(groups: list[list[Concept]]) -> dict[str, Concept]:
    """Combine the hook results; the first plugin to name an id wins."""
    known: dict[str, Concept] = {}
    for group in groups:
        for concept in group or ():
            if not isinstance(concept, Concept):
                concept = Concept(*concept) if isinstance(concept, (tuple, list)) else Concept(str(concept), str(concept))
            known.setdefault(concept.id, concept)
    return known

"""A fuzz program as a graph, for telling which behaviours it exercises
(``behaviours.py``): the shapes of its values, which require grad, what
each op value was made from and how often it is used, and what its
backward steps go through, free, run again and add up. It reads the
program only, never a result.
"""

from __future__ import annotations

from .builder import Builder
from .rules import NOTHING_SAVED


class Graph:
    """A program's values as the tests need them: shapes, which require
    grad, what each op value was made from, and how often each is used."""

    def __init__(self, program: dict):
        self.program = program
        built = Builder.of(program)
        self.shapes, self.grad = built.shapes, built.grad
        self.n_leaves = len(program["leaves"])
        self.ops = [s for s in program["steps"] if s["kind"] == "op"]
        self.args = {self.n_leaves + i: s["args"] for i, s in enumerate(self.ops)}
        self.step_of = {self.n_leaves + i: s for i, s in enumerate(self.ops)}
        self.uses: dict[int, int] = {}
        for s in self.ops:
            for a in s["args"]:
                self.uses[a] = self.uses.get(a, 0) + 1

    def reach(self, value: int) -> set[int]:
        """The values a backward from ``value`` goes through (itself too)."""
        seen, stack = {value}, [value]
        while stack:
            for a in self.args.get(stack.pop(), ()):
                if self.grad[a] and a not in seen:
                    seen.add(a)
                    stack.append(a)
        return seen

    def nodes(self, value: int) -> set[int]:
        """The recorded nodes (op values that require grad) ``value`` reaches."""
        return {v for v in self.reach(value) if v in self.args and self.grad[v]}

    def saves(self, value: int) -> bool:
        return self.step_of[value]["op"] not in NOTHING_SAVED

    def backwards(self):
        """Each backward step with its roots and the nodes it frees."""
        for i, s in enumerate(self.program["steps"]):
            if s["kind"] in ("backward", "backward_many"):
                roots = [s["value"]] if s["kind"] == "backward" else s["values"]
                yield i, s, roots, set().union(*(self.nodes(r) for r in roots))

    def leaf_values(self, value: int) -> list[float]:
        return self.program["leaves"][value]["values"] if value < self.n_leaves else []


def unequal_paths(g: Graph) -> bool:
    """A value reached from a backward's root along paths of two lengths."""
    for _, _, roots, _ in g.backwards():
        for root in roots:
            lengths: dict[int, set[int]] = {}
            frontier = {root: {0}}
            while frontier:
                following: dict[int, set[int]] = {}
                for v, ds in frontier.items():
                    lengths.setdefault(v, set()).update(ds)
                    for a in g.args.get(v, ()):
                        following.setdefault(a, set()).update(d + 1 for d in ds)
                frontier = following
            if any(len(ds) > 1 for ds in lengths.values()):
                return True
    return False


def freeing(g: Graph):
    """What each backward step finds, as PyTorch frees: (the freed nodes it
    reaches, the nodes it reaches that are not freed, the nodes it reaches
    that an earlier backward ran, whether anything was freed before)."""
    freed: set[int] = set()
    ran: set[int] = set()
    for _, s, _, nodes in g.backwards():
        yield nodes & freed, nodes - freed, nodes & ran, bool(freed)
        ran |= nodes
        if not s.get("retain_graph"):
            freed |= {n for n in nodes if g.saves(n)}


def steps_of(g: Graph, kind: str):
    """The program's steps of ``kind`` ("backward", "zero_grad", ...)."""
    return [s for s in g.program["steps"] if s["kind"] == kind]


def backward_after(g: Graph, condition) -> bool:
    """A backward step comes after a step for which ``condition(step)``."""
    seen = False
    for s in g.program["steps"]:
        if s["kind"] in ("backward", "backward_many") and seen:
            return True
        seen = seen or condition(s)
    return False


def twice_without_zeroing(g: Graph, fresh: bool) -> bool:
    """Two backward calls deliver into one leaf with no zero_grad between;
    ``fresh``: with a new forward pass between them."""
    last: dict[int, int] = {}
    for i, s, roots, _nodes in g.backwards():
        leaves = {v for r in roots for v in g.reach(r) if v < g.n_leaves and g.grad[v]}
        for leaf in leaves:
            if leaf in last:
                between = g.program["steps"][last[leaf] + 1 : i]
                if (
                    not any(b["kind"] == "zero_grad" and b["value"] == leaf for b in between)
                    and any(b["kind"] == "op" for b in between) == fresh
                    and (fresh or roots == [s.get("value")])
                ):
                    return True
            last[leaf] = i
    return False

"""A stand-in for the real mutant generator (GUIDE's API), so that the
audit's core runs and is tested before it is merged: two operators only."""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider


class MutantsError(Exception):
    """The solution cannot be mutated (it does not parse); says why."""


@dataclass(frozen=True)
class Mutant:
    id: str
    module: str
    function: str
    operator: str
    description: str
    line: int
    source: str
    diff: str


class _Sites(cst.CSTVisitor):
    """Where each operator applies: (operator, node, function) in order."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        self.sites: list[tuple[str, cst.CSTNode, str]] = []
        self.scope: list[str] = []
        self.functions: dict[str, cst.CSTNode] = {}

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope.append(node.name.value)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scope.append(node.name.value)
        self.functions.setdefault(".".join(self.scope), node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scope.pop()

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if self.scope and isinstance(node.operator, (cst.Add, cst.Subtract)):
            self.sites.append(("flip_plus_minus", node, ".".join(self.scope)))

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if self.scope and isinstance(node.operator, cst.Minus):
            self.sites.append(("drop_minus", node, ".".join(self.scope)))

    def visit_Arg(self, node: cst.Arg) -> None:
        if self.scope and node.keyword is not None and node.keyword.value == "retain_graph":
            self.sites.append(("drop_retain_graph", node, ".".join(self.scope)))


class _Apply(cst.CSTTransformer):
    def __init__(self, target: cst.CSTNode, operator: str):
        self.target, self.operator = target, operator

    def leave_BinaryOperation(self, original, updated):
        if original is self.target:
            flipped = cst.Subtract() if isinstance(updated.operator, cst.Add) else cst.Add()
            return updated.with_changes(operator=flipped.with_changes(
                whitespace_before=updated.operator.whitespace_before,
                whitespace_after=updated.operator.whitespace_after))
        return updated

    def leave_UnaryOperation(self, original, updated):
        return updated.expression if original is self.target else updated

    def leave_Arg(self, original, updated):
        return cst.RemoveFromParent() if original is self.target else updated


DESCRIPTIONS = {"flip_plus_minus": "a + turned into - (or - into +)",
                "drop_minus": "a minus sign dropped",
                "drop_retain_graph": "retain_graph=True dropped from a call"}


def mutants_of(source: str, module: str, path_label: str = "") -> list[Mutant]:
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
    except cst.ParserSyntaxError as exc:
        raise MutantsError(f"{path_label or module}: {exc}") from None
    sites = _Sites()
    wrapper.visit(sites)
    positions = wrapper.resolve(PositionProvider)
    found: dict[str, Mutant] = {}
    for number, (operator, node, function) in enumerate(sites.sites):
        mutated = wrapper.module.visit(_Apply(node, operator)).code
        try:
            compile(mutated, path_label or module, "exec")
        except SyntaxError:
            continue
        digest = hashlib.sha256(f"{mutated}\0{number}".encode()).hexdigest()[:8]
        diff = "".join(difflib.unified_diff(source.splitlines(True), mutated.splitlines(True),
                                            path_label or f"solutions/{module}.py", "mutant", n=2))
        mutant = Mutant(f"{module}.{function}:{operator}:{digest}", module, function, operator,
                        DESCRIPTIONS[operator], positions[node].start.line, mutated, diff)
        found.setdefault(mutant.id, mutant)
    return list(found.values())


OPERATORS = DESCRIPTIONS

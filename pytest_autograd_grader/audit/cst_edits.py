"""Rewriting one libcst node with its formatting kept: what the operators share.

Every helper returns a new node (libcst nodes are immutable); commas,
spaces and parentheses of the code around stay where they were, so that a
mutant's diff shows only its change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol, TypeVar, cast

import libcst as cst

Replacement = cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel
DROP = cst.RemoveFromParent()  # a statement dropped (mutants.py puts `pass` where a block would be empty)
_EMPTY = cst.Module(body=[])


class Change(NamedTuple):
    new: Replacement
    old_code: str  # the code changed, for the description
    new_code: str  # what it became ("" for a dropped statement)


def code(node: cst.CSTNode, limit: int = 60) -> str:
    """One line of code for a description: whitespace collapsed, long code cut."""
    text = " ".join(_EMPTY.code_for_node(node).split())
    half = (limit - 5) // 2  # both ends kept: a change is often at the end of a long expression
    return text if len(text) <= limit else text[:half] + " ... " + text[-half:]


def changed(node: cst.CSTNode, new: cst.CSTNode) -> Change:
    return Change(new, code(node), code(new))


# the nodes whose operator an operator respells
_Operation = TypeVar("_Operation", cst.BinaryOperation, cst.AugAssign, cst.ComparisonTarget, cst.BooleanOperation)


class _Spaced(Protocol):
    whitespace_before: cst.BaseParenthesizableWhitespace
    whitespace_after: cst.BaseParenthesizableWhitespace


def respelled(node: _Operation, operator: Callable[..., cst.CSTNode]) -> _Operation:
    """``node`` with its operator replaced by ``operator``, spacing kept."""
    # cast: every concrete libcst operator (one token or two) has this
    # spacing, but BaseBinaryOp, BaseAugOp and BaseCompOp do not declare it
    old = cast(_Spaced, node.operator)
    return node.with_changes(
        operator=operator(whitespace_before=old.whitespace_before, whitespace_after=old.whitespace_after)
    )


def called(call: cst.Call) -> str:
    return code(call.func) + "(...)"


def method(node: cst.CSTNode, names: tuple[str, ...]) -> bool:
    """``node`` is a call ``<something>.<name>(...)`` for one of ``names``."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in names


def named(node: cst.CSTNode, names: tuple[str, ...]) -> bool:
    """``node`` is ``name`` or ``<something>.name`` for one of ``names``."""
    if isinstance(node, cst.Name):
        return node.value in names
    return isinstance(node, cst.Attribute) and node.attr.value in names


def call_statement(line: cst.CSTNode) -> cst.Call | None:
    """The call a statement line consists of (``x.retain_grad()``), else None."""
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        expr = line.body[0]
        if isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call):
            return expr.value
    return None


def without_arg(call: cst.Call, index: int) -> cst.Call:
    args = list(call.args)
    gone = args.pop(index)
    if args and index == len(args):  # the new last argument takes the dropped one's (absent) comma
        args[-1] = args[-1].with_changes(comma=gone.comma)
    return call.with_changes(args=args)


def swapped(items: list, i: int, j: int) -> list:
    """``items`` with the values of positions i and j swapped, commas and spacing staying in place."""
    out = list(items)
    out[i] = items[i].with_changes(value=items[j].value)
    out[j] = items[j].with_changes(value=items[i].value)
    return out


def receiver(call: cst.Call) -> cst.BaseExpression:
    """``x`` of ``x.method(...)``, keeping the call's own parentheses."""
    assert isinstance(call.func, cst.Attribute), "only for a method call (see method())"
    receiver = call.func.value
    return receiver.with_changes(lpar=list(call.lpar) + list(receiver.lpar), rpar=list(receiver.rpar) + list(call.rpar))

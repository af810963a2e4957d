"""The mutation operators: each makes one kind of mistake autograd students make.

As in mutmut's node table and cosmic-ray's operator classes, an operator
looks at one syntax node at a time and yields every way it can change it;
mutants.py enumerates the nodes in source order and applies one change per
mutant. Each operator is one small function registered with ``@_operator``
behind the ``Operator`` protocol, rewriting nodes with cst_edits.py's
helpers (formatting kept); its user-visible description is the
catalogue's ``audit.op.<name>``, filled with ``{old}`` (the code changed) and
``{new}`` (what it became). The autograd-specific operators come first, so
that where two operators make the same source of one node (mutants.py keeps
the first of equal sources), the mutant bears the specific name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import libcst as cst

from .cst_edits import (
    DROP,
    Change,
    call_statement,
    called,
    changed,
    code,
    method,
    named,
    receiver,
    respelled,
    swapped,
    without_arg,
)

GRAPH_KEYWORDS = ("retain_graph", "create_graph")
ARMED_KEYWORDS = GRAPH_KEYWORDS + ("requires_grad",)  # dropping them is its own operator, flipping them a duplicate
# swapping their arguments is no mistake: no effect (commutative) or a crash only
_NOT_SWAPPED = (
    "print",
    "isinstance",
    "issubclass",
    "getattr",
    "setattr",
    "hasattr",
    "super",
    "format",
    "add",
    "mul",
    "multiply",
    "maximum",
    "minimum",
    "max",
    "min",
    "save_for_backward",
)


class Operator(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def doc(self) -> str:
        """One line, for developers; authors read the catalogue's audit.op.<name>."""

    def mutations(self, node: cst.CSTNode, ancestors: tuple[cst.CSTNode, ...]) -> Iterator[Change]:
        """Every change of ``node``; ``ancestors`` run from the module down to its parent."""


@dataclass(frozen=True)
class _FunctionOperator:
    name: str
    doc: str
    node_types: tuple[type, ...]
    mutate: Callable[[cst.CSTNode, tuple[cst.CSTNode, ...]], Iterator[Change]]

    def mutations(self, node: cst.CSTNode, ancestors: tuple[cst.CSTNode, ...]) -> Iterator[Change]:
        if isinstance(node, self.node_types):
            yield from self.mutate(node, ancestors)


OPERATORS: dict[str, Operator] = {}


def _operator(*node_types: type):
    def register(function):
        name = function.__name__.lstrip("_")
        doc = (function.__doc__ or "").strip().splitlines()[0]
        OPERATORS[name] = _FunctionOperator(name, doc, node_types, function)
        return function

    return register


def _drop_keyword(call: cst.Call, names: tuple[str, ...]) -> Iterator[Change]:
    for index, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value in names:
            yield Change(without_arg(call, index), code(arg), called(call))


def _drop_method(call: cst.Call, names: tuple[str, ...]) -> Iterator[Change]:
    if method(call, names):
        yield changed(call, receiver(call))


# --- autograd-specific ----------------------------------------------------


@_operator(cst.Call)
def _drop_retain_graph(node, ancestors):
    """Drop retain_graph=... from a backward or autograd.grad call."""
    yield from _drop_keyword(node, ("retain_graph",))


@_operator(cst.Call)
def _drop_create_graph(node, ancestors):
    """Drop create_graph=... from a backward or autograd.grad call."""
    yield from _drop_keyword(node, ("create_graph",))


@_operator(cst.SimpleStatementLine)
def _drop_retain_grad(node, ancestors):
    """Drop a statement x.retain_grad()."""
    call = call_statement(node)
    if call is not None and method(call, ("retain_grad",)):
        yield Change(DROP, code(call), "")


def _zeroes_grad(line: cst.SimpleStatementLine) -> bool:
    call = call_statement(line)
    if call is not None:
        return method(call, ("zero_", "zero_grad"))
    if len(line.body) != 1 or not isinstance(line.body[0], cst.Assign):
        return False
    assign = line.body[0]
    return (
        isinstance(assign.value, cst.Name)
        and assign.value.value == "None"
        and any(named(target.target, ("grad",)) for target in assign.targets)
    )


@_operator(cst.SimpleStatementLine)
def _drop_zero_grad(node, ancestors):
    """Drop a statement that clears a gradient: x.grad = None, x.grad.zero_(), opt.zero_grad()."""
    if _zeroes_grad(node):
        yield Change(DROP, code(node.body[0]), "")


@_operator(cst.With)
def _drop_no_grad(node, ancestors):
    """Remove `with torch.no_grad():` (or `with torch.enable_grad():`), keeping its body."""
    if len(node.items) != 1 or not isinstance(node.body, cst.IndentedBlock):
        return
    item = node.items[0].item
    if isinstance(item, cst.Call) and named(item.func, ("no_grad", "enable_grad")):
        body = list(node.body.body)
        first = body[0]
        # libcst's BaseStatement has just these two kinds, both with leading lines
        assert isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        body[0] = first.with_changes(leading_lines=list(node.leading_lines) + list(first.leading_lines))
        yield Change(cst.FlattenSentinel(body), "with " + code(item) + ":", "")


@_operator(cst.Call)
def _drop_detach(node, ancestors):
    """x.detach() -> x."""
    yield from _drop_method(node, ("detach",))


@_operator(cst.Call)
def _drop_clone(node, ancestors):
    """x.clone() -> x."""
    yield from _drop_method(node, ("clone",))


@_operator(cst.Call, cst.SimpleStatementLine)
def _drop_requires_grad(node, ancestors):
    """x.requires_grad_() -> x, requires_grad=... dropped from a call, a statement x.requires_grad = True dropped."""
    if isinstance(node, cst.Call):  # {old}: what lost its requires_grad
        for change in _drop_method(node, ("requires_grad_",)):
            yield change._replace(new_code="")
        for change in _drop_keyword(node, ("requires_grad",)):
            yield change._replace(old_code=change.new_code, new_code="")
    elif len(node.body) == 1 and isinstance(node.body[0], cst.Assign):
        for target in node.body[0].targets:
            if isinstance(target.target, cst.Attribute) and target.target.attr.value == "requires_grad":
                yield Change(DROP, code(target.target.value), "")


@_operator(cst.Call)
def _swap_sum_mean(node, ancestors):
    """x.sum() <-> x.mean(), torch.sum(x) <-> torch.mean(x)."""
    if method(node, ("sum", "mean")):
        other = {"sum": "mean", "mean": "sum"}[node.func.attr.value]
        yield changed(node, node.with_changes(func=node.func.with_changes(attr=cst.Name(other))))


@_operator(cst.Call)
def _swap_saved(node, ancestors):
    """Swap two neighbouring arguments of ctx.save_for_backward(...)."""
    if method(node, ("save_for_backward",)):
        for i in range(len(node.args) - 1):
            yield changed(node, node.with_changes(args=swapped(list(node.args), i, i + 1)))


# --- generic --------------------------------------------------------------

_CONTAINERS = (cst.List, cst.Tuple, cst.ListComp, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def _arithmetic(node: cst.BinaryOperation) -> bool:
    """Numbers or tensors on both sides, as far as syntax tells (not [None] * n or "-" * 20)."""
    return not isinstance(node.left, _CONTAINERS) and not isinstance(node.right, _CONTAINERS)


def _is_number(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) or (
        isinstance(node, cst.UnaryOperation) and isinstance(node.expression, (cst.Integer, cst.Float))
    )


def _operand(binary: cst.BinaryOperation, side: cst.BaseExpression) -> cst.BaseExpression:
    """``side`` in place of ``binary``: the binary's parentheses go with it unless ``side`` is an atom."""
    if not binary.lpar or side.lpar or isinstance(side, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        return side
    return side.with_changes(lpar=list(binary.lpar) + list(side.lpar), rpar=list(side.rpar) + list(binary.rpar))


def _keep_one(node: cst.BinaryOperation, sides: tuple[cst.BaseExpression, ...]) -> Iterator[Change]:
    for side in sides:
        if not _is_number(side):  # `2 * w` -> `2` is no mistake anyone makes
            yield changed(node, _operand(node, side))


@_operator(cst.BinaryOperation)
def _drop_factor(node, ancestors):
    """A missing factor or divisor: a * b -> a and -> b, a / b -> a."""
    if not _arithmetic(node):
        return
    if isinstance(node.operator, cst.Multiply):
        yield from _keep_one(node, (node.left, node.right))
    elif isinstance(node.operator, cst.Divide):
        yield from _keep_one(node, (node.left,))


@_operator(cst.BinaryOperation)
def _drop_term(node, ancestors):
    """A missing term: a + b -> a and -> b, a - b -> a."""
    if isinstance(node.operator, cst.Add):
        yield from _keep_one(node, (node.left, node.right))
    elif isinstance(node.operator, cst.Subtract):
        yield from _keep_one(node, (node.left,))


@_operator(cst.BinaryOperation)
def _drop_power(node, ancestors):
    """A missing power: (x - y) ** 2 -> (x - y)."""
    if isinstance(node.operator, cst.Power) and _arithmetic(node):
        yield from _keep_one(node, (node.left,))


_VARIABLES = (cst.Name, cst.Attribute, cst.Subscript)


@_operator(cst.Call)
def _swap_args(node, ancestors):
    """Swap the first two positional arguments of a call when both are variables (where(c, a, b): a and b)."""
    positional = [i for i, arg in enumerate(node.args) if arg.keyword is None and not arg.star]
    if named(node.func, _NOT_SWAPPED):
        return
    first = 1 if named(node.func, ("where",)) else 0
    if positional[first : first + 2] != [first, first + 1]:
        return
    if all(isinstance(node.args[i].value, _VARIABLES) for i in (first, first + 1)):
        yield changed(node, node.with_changes(args=swapped(list(node.args), first, first + 1)))


@_operator(cst.Return)
def _swap_returned(node, ancestors):
    """Swap two neighbouring values of a returned tuple."""
    if isinstance(node.value, cst.Tuple):
        elements = list(node.value.elements)
        for i in range(len(elements) - 1):
            if not isinstance(elements[i], cst.StarredElement) and not isinstance(elements[i + 1], cst.StarredElement):
                new = node.with_changes(value=node.value.with_changes(elements=swapped(elements, i, i + 1)))
                yield Change(new, code(node), code(new))


@_operator(cst.BinaryOperation)
def _swap_operands(node, ancestors):
    """Operands of a non-commutative operator swapped: a - b -> b - a, a / b, a @ b."""
    if isinstance(node.operator, cst.Divide) and (_is_number(node.left) or _is_number(node.right)):
        return
    if isinstance(node.operator, (cst.Subtract, cst.Divide, cst.MatrixMultiply)) and _arithmetic(node):
        yield changed(node, node.with_changes(left=node.right.with_changes(), right=node.left.with_changes()))


@_operator(cst.UnaryOperation)
def _drop_minus(node, ancestors):
    """A lost sign: -x -> x."""
    if isinstance(node.operator, cst.Minus) and not _is_number(node.expression):
        yield changed(
            node,
            node.expression.with_changes(
                lpar=list(node.lpar) + list(node.expression.lpar), rpar=list(node.expression.rpar) + list(node.rpar)
            ),
        )


_SIGNS = {
    cst.Add: cst.Subtract,
    cst.Subtract: cst.Add,
    cst.AddAssign: cst.SubtractAssign,
    cst.SubtractAssign: cst.AddAssign,
}


@_operator(cst.BinaryOperation, cst.AugAssign)
def _swap_sign(node, ancestors):
    """A wrong sign: a + b <-> a - b, w -= d <-> w += d."""
    other = _SIGNS.get(type(node.operator))
    if other is not None:
        yield changed(node, respelled(node, other))


@_operator(cst.BinaryOperation)
def _swap_mul_div(node, ancestors):
    """a * b <-> a / b."""
    other = {cst.Multiply: cst.Divide, cst.Divide: cst.Multiply}.get(type(node.operator))
    if other is not None and not _is_number(node.left) and _arithmetic(node) and code(node.left) != code(node.right):
        yield changed(node, respelled(node, other))


_COMPARISONS: dict[type[cst.BaseCompOp], type[cst.BaseCompOp]] = {
    cst.LessThan: cst.LessThanEqual,
    cst.LessThanEqual: cst.LessThan,
    cst.GreaterThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.GreaterThan,
    cst.Equal: cst.NotEqual,
    cst.NotEqual: cst.Equal,
}


@_operator(cst.Comparison)
def _swap_comparison(node, ancestors):
    """< <-> <=, > <-> >=, == <-> != (one comparison of a chain at a time)."""
    for index, target in enumerate(node.comparisons):
        other = _COMPARISONS.get(type(target.operator))
        if other is None:
            continue
        comparisons = list(node.comparisons)
        comparisons[index] = respelled(target, other)
        yield changed(node, node.with_changes(comparisons=comparisons))


@_operator(cst.BooleanOperation)
def _swap_and_or(node, ancestors):
    """a and b <-> a or b."""
    yield changed(node, respelled(node, cst.Or if isinstance(node.operator, cst.And) else cst.And))


@_operator(cst.Name)
def _flip_bool(node, ancestors):
    """True <-> False (not where dropping retain_graph, create_graph or requires_grad says it)."""
    if node.value not in ("True", "False"):
        return
    parent = ancestors[-1]
    if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value in ARMED_KEYWORDS:
        return
    new = node.with_changes(value="False" if node.value == "True" else "True")
    yield Change(new, node.value, new.value)


_NOT_COUNTED = (cst.SubscriptElement, cst.Index, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget)


@_operator(cst.Integer, cst.Float)
def _off_by_one(node, ancestors):
    """A number one off: n -> n + 1, 1.0 -> 2.0."""
    # Indexes, positional arguments, signed numbers and comparison bounds: many, and mostly crashes or
    # duplicates of swap_comparison; keyword values (axis=0) and arithmetic (x ** 2, 1 - s) stay.
    parent = ancestors[-1]
    if isinstance(parent, _NOT_COUNTED) or (isinstance(parent, cst.Arg) and parent.keyword is None):
        return
    value = node.evaluated_value + 1
    new = node.with_changes(value=repr(value) if isinstance(node, cst.Float) else str(value))
    yield Change(new, node.value, new.value)


@_operator(cst.Call)
def _range_off_by_one(node, ancestors):
    """An off-by-one loop: range(n) -> range(n - 1) and range(1, n)."""
    if not (isinstance(node.func, cst.Name) and node.func.value == "range") or len(node.args) != 1:
        return
    if node.args[0].keyword is not None or node.args[0].star:
        return
    stop = node.args[0].value
    shorter = cst.BinaryOperation(stop, cst.Subtract(), cst.Integer("1"))
    if isinstance(stop, (cst.BinaryOperation, cst.BooleanOperation, cst.IfExp, cst.Lambda)):
        shorter = shorter.with_changes(left=stop.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
    for args in ([node.args[0].with_changes(value=shorter)], [cst.Arg(cst.Integer("1")), node.args[0]]):
        yield changed(node, node.with_changes(args=args))


@_operator(cst.Return)
def _return_none(node, ancestors):
    """return x -> return None, for the closing return of a function outside a class."""
    if len(ancestors) < 3 or any(isinstance(node, cst.ClassDef) for node in ancestors):
        return
    line, block, function = ancestors[-1], ancestors[-2], ancestors[-3]
    if not (isinstance(function, cst.FunctionDef) and block.body[-1] is line):
        return
    if node.value is not None and not (isinstance(node.value, cst.Name) and node.value.value == "None"):
        new = node.with_changes(value=cst.Name("None"))
        yield Change(new, code(node), "return None")

"""Smaller programs than a disagreeing one, for the fuzzer to try after
hypothesis has shrunk it: hypothesis shrinks the choices a program was
drawn from (smaller shapes, simpler values), which leaves ops a program
no longer needs (a fan-out shown through two tanh where ``(a * a).sum()``
shows it). Each candidate here takes one thing away: a step that is not
an op, an op whose result is replaced by one of its operands, or a value
nothing uses. The fuzzer keeps the smallest candidate that still
disagrees, until none does: the program it shows is 1-minimal.

A candidate keeps the strategies' promises (log, division and fractional
powers see positive values, relu values away from 0 or a leaf's exact
values), so that a rounding
difference at a kink or a pole never passes for the student's mistake."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .builder import Builder, numel


def size(program: dict) -> tuple:
    """What the fuzzer minimises: ops first, then steps, leaves, elements."""
    ops = sum(s["kind"] == "op" for s in program["steps"])
    elements = sum(len(leaf["values"]) for leaf in program["leaves"])
    return ops, len(program["steps"]), len(program["leaves"]), elements


def _uses(step) -> list[int]:
    return list(step.get("args", ())) + ([step["value"]] if "value" in step else []) + list(step.get("values", ()))


def _renumber(step, mapping):
    step = dict(step)
    for key in ("args", "values"):
        if key in step:
            step[key] = [mapping(v) for v in step[key]]
    if "value" in step:
        step["value"] = mapping(step["value"])
    return step


def _without_op(program, index, replacement=None):
    """``program`` without op step ``index``; its value replaced by
    ``replacement`` wherever it is used (None: it must be unused)."""
    steps = program["steps"]
    n_leaves = len(program["leaves"])
    value = n_leaves + sum(s["kind"] == "op" for s in steps[:index])

    def mapping(v):
        if v == value:
            return replacement
        return v - 1 if v > value else v

    later = [_renumber(s, mapping) for s in steps[index + 1 :]]
    if any(None in _uses(s) for s in later):
        return None
    return {**program, "steps": steps[:index] + later}


def _without_leaf(program, leaf):
    def mapping(v):
        return v - 1 if v > leaf else v

    leaves = program["leaves"][:leaf] + program["leaves"][leaf + 1 :]
    return {**program, "leaves": leaves, "steps": [_renumber(s, mapping) for s in program["steps"]]}


def _valid(program: dict[str, Any]) -> bool:
    """The shapes fit and every op sees the values the strategies promise it."""
    try:
        b = Builder.of(program)
    except (IndexError, KeyError, ValueError, TypeError, ZeroDivisionError):
        return False
    value = len(program["leaves"])  # the id of the value the next op makes
    for step in program["steps"]:
        if step["kind"] != "op":
            if any(not 0 <= v < value for v in _uses(step)):
                return False
            continue
        shapes = [b.shapes[a] for a in step["args"]]
        fits = _FITS.get(step["op"])
        if fits is not None and not fits(step, shapes, b):
            return False
        value += 1
    return True


# What each op needs of its arguments' shapes and values.
Fits = Callable[[dict[str, Any], list[tuple[int, ...]], Builder], bool]


def _elementwise_fits(step: dict[str, Any], shapes: list[tuple[int, ...]], b: Builder) -> bool:
    return _broadcastable(*shapes)


def _div_fits(step: dict[str, Any], shapes: list[tuple[int, ...]], b: Builder) -> bool:
    return _broadcastable(*shapes) and b.positive[step["args"][1]]


def _matmul_fits(step: dict[str, Any], shapes: list[tuple[int, ...]], b: Builder) -> bool:
    return all(1 <= len(s) <= 2 for s in shapes) and len(shapes[0]) >= len(shapes[1]) and shapes[0][-1] == shapes[1][0]


def _relu_fits(step: dict[str, Any], shapes: list[tuple[int, ...]], b: Builder) -> bool:
    # away from 0, or a leaf's exact values (an exact 0 is on the kink, not about it)
    return bool(b.safe[step["args"][0]] or b.given[step["args"][0]])


def _log_fits(step: dict[str, Any], shapes: list[tuple[int, ...]], b: Builder) -> bool:
    return bool(b.positive[step["args"][0]])


def _pow_fits(step: dict[str, Any], shapes: list[tuple[int, ...]], b: Builder) -> bool:
    return step["const"] in (0, 2, 3) or bool(b.positive[step["args"][0]])


def _reshape_fits(step: dict[str, Any], shapes: list[tuple[int, ...]], b: Builder) -> bool:
    return numel(shapes[0]) == numel(step["shape"])


def _axis_fits(step: dict[str, Any], shapes: list[tuple[int, ...]], b: Builder) -> bool:
    return step.get("axis") is None or -len(shapes[0]) <= step["axis"] < len(shapes[0])


def _transpose_fits(step: dict[str, Any], shapes: list[tuple[int, ...]], b: Builder) -> bool:
    return len(shapes[0]) == 2


_FITS: dict[str, Fits] = {
    "add": _elementwise_fits,
    "sub": _elementwise_fits,
    "mul": _elementwise_fits,
    "div": _div_fits,
    "matmul": _matmul_fits,
    "relu": _relu_fits,
    "log": _log_fits,
    "pow": _pow_fits,
    "reshape": _reshape_fits,
    "sum": _axis_fits,
    "mean": _axis_fits,
    "T": _transpose_fits,
}


def _broadcastable(a, b) -> bool:
    return all(x == y or 1 in (x, y) for x, y in zip(reversed(a), reversed(b)))


def candidates(program: dict) -> list[dict]:
    """Every valid program one step smaller than ``program``, smallest first."""
    steps = program["steps"]
    n_leaves = len(program["leaves"])
    shapes = Builder.of(program).shapes
    found = []
    value = n_leaves
    for index, step in enumerate(steps):
        if step["kind"] != "op":
            found.append({**program, "steps": steps[:index] + steps[index + 1 :]})
            continue
        for arg in dict.fromkeys(step["args"]):
            if shapes[arg] == shapes[value]:
                found.append(_without_op(program, index, arg))
        found.append(_without_op(program, index))  # an op nothing uses
        value += 1
    used = {v for s in steps for v in _uses(s)}
    found += [_without_leaf(program, leaf) for leaf in range(n_leaves) if leaf not in used]
    unique: dict[str, dict[str, Any]] = {}
    for candidate in found:
        if candidate is not None and candidate["steps"] and _valid(candidate):
            unique.setdefault(repr(candidate), candidate)
    return sorted(unique.values(), key=size)

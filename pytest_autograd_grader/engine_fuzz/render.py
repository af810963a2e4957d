"""A program as the student reads it: Python lines that build the same
graph with their engine's names, its leaves' values and its shapes.
"""

from __future__ import annotations

from typing import Any

from .builder import Builder

# -- rendering ----------------------------------------------------------------


def names(program) -> list[str]:
    """The variable name of every value: a, b, c, ... for the leaves,
    y1, y2, ... for the results of ops."""
    leaves = [chr(ord("a") + i) for i in range(len(program["leaves"]))]
    ops = [s for s in program["steps"] if s["kind"] == "op"]
    return leaves + [f"y{i + 1}" for i in range(len(ops))]


def _number(x) -> str:
    return repr(float(x)) if not float(x).is_integer() else str(float(x))


def array_text(values, shape) -> str:
    shape = tuple(shape)
    if shape == ():
        return f"np.array({_number(values[0])})"
    text = "[" + ", ".join(_number(v) for v in values) + "]"
    if len(shape) == 1:
        return f"np.array({text})"
    return f"np.array({text}).reshape{shape}"


_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "matmul": "@"}
_WITH_NUMBER = {"add_c": "{x} + {c}", "mul_c": "{x} * {c}", "rsub_c": "{c} - {x}"}
_POSTFIX = {"neg": "-{x}", "T": "{x}.T"}


def expression(step: dict[str, Any], names_: list[str]) -> str:
    """An op step as the student would write it, on its arguments' names."""
    a = [names_[i] for i in step["args"]]
    op = step["op"]
    if op in _INFIX:
        return f"{a[0]} {_INFIX[op]} {a[1]}"
    if op in _WITH_NUMBER:
        return _WITH_NUMBER[op].format(x=a[0], c=_number(step.get("const", 0)))
    if op == "pow":
        return f"{a[0]} ** {step['const']}"
    if op in _POSTFIX:
        return _POSTFIX[op].format(x=a[0])
    if op in ("sum", "mean"):
        return f"{a[0]}.{op}({', '.join(_reduction_keywords(step))})"
    if op == "reshape":
        return f"{a[0]}.reshape({', '.join(str(n) for n in step['shape'])})"
    return f"{a[0]}.{op}()"


def _reduction_keywords(step: dict[str, Any]) -> list[str]:
    params = []
    if step.get("axis") is not None:
        params.append(f"axis={step['axis']}")
    if step.get("keepdims"):
        params.append("keepdims=True")
    return params


def render(program, module: str = "engine", prints: dict | None = None, raises: dict | None = None) -> str:
    """The program as runnable Python on the student's engine (its module
    ``module``); ``prints`` {step: [lines]} go right after a step's line;
    ``raises`` {step: error type}: steps where torch.autograd raises, run
    inside try so that the script goes on to the lines after them."""
    names_ = names(program)
    prints, raises = prints or {}, raises or {}
    lines = ["import numpy as np", f"from {module} import Tensor, backward, no_grad", ""]
    for name, leaf in zip(names_, program["leaves"]):
        flag = ", requires_grad=True" if leaf["requires_grad"] else ""
        lines.append(f"{name} = Tensor({array_text(leaf['values'], leaf['shape'])}{flag})")
    value = len(program["leaves"])
    for index, step in enumerate(program["steps"]):
        lines += prints.get(index - 1, []) if index else []
        kind = step["kind"]
        if kind == "op":
            line = f"{names_[value]} = {expression(step, names_)}"
            value += 1
        elif kind == "backward":
            args = []
            if step.get("gradient") is not None:
                shape = step.get("gradient_shape", _shape_of(program, step["value"]))
                args.append(f"Tensor({array_text(step['gradient'], tuple(shape))})")
            if step.get("retain_graph"):
                args.append("retain_graph=True")
            line = f"{names_[step['value']]}.backward({', '.join(args)})"
        elif kind == "backward_many":
            outs = ", ".join(names_[v] for v in step["values"])
            grads = ", ".join(
                "None" if g is None else f"Tensor({array_text(g, _shape_of(program, v))})"
                for v, g in zip(step["values"], step["grad_tensors"])
            )
            extra = ", retain_graph=True" if step.get("retain_graph") else ""
            line = f"backward([{outs}], grad_tensors=[{grads}]{extra})"
        else:  # zero_grad, retain_grad
            line = f"{names_[step['value']]}.{kind}()"
        block = ["with no_grad():", "    " + line] if step.get("no_grad") else [line]
        if index in raises:
            block = [
                "try:",
                *("    " + b for b in block),
                f"except Exception as error:  # torch.autograd raises {raises[index]} here too",
                "    print(type(error).__name__, error)",
            ]
        lines += block
    lines += prints.get(len(program["steps"]) - 1, [])
    return "\n".join(lines)


def shapes_of(program) -> list[tuple]:
    """The shape of every value, computed as the strategies do."""
    return Builder.of(program).shapes


def _shape_of(program, value):
    return shapes_of(program)[value]


def op_names(program) -> list[str]:
    return [s["op"] for s in program["steps"] if s["kind"] == "op"]

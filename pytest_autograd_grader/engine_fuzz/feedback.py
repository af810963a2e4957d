"""What the student reads when their engine disagrees: the program as a
script to run, what differed, and the misconception that fits
(``explain_difference.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..i18n import msg
from .explain_difference import diagnose
from .render import names as names_of
from .render import op_names, render

# -- feedback --------------------------------------------------------------------


def show(x, other=None) -> str:
    if x is None:
        return "None"
    if isinstance(x, str):
        return x
    a = np.asarray(x, dtype=np.float64)
    text = str(float(np.round(a, 4))) if a.ndim == 0 else str(np.round(a, 4).tolist())
    if other is not None and not isinstance(other, str) and np.shape(other) != a.shape:
        text += " " + msg("engine.shape", shape=tuple(a.shape))
    return text


def _lines(program: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The rendered line of each step (the line a leaf's creation is on for -1)."""
    names = names_of(program)
    text = render(program).splitlines()
    body = [line for line in text[3:] if not line.startswith("with no_grad")]  # one line a step
    return body[len(program["leaves"]) :], names


def describe(program, diff) -> str:
    body, names = _lines(program)
    step = diff["step"]
    line = body[step].strip() if 0 <= step < len(body) else ""
    if diff["what"] == "error":
        e, p = diff["expected"], diff["produced"]
        if e is None:
            return msg("engine.error_unexpected", line=line, produced=f"{p[0]}: {p[1]}")
        if p is None:
            return msg("engine.error_missing", line=line, expected=f"{e[0]}: {e[1].split('.')[0]}")
        return msg(
            "engine.error_other", line=line, expected=f"{e[0]}: {e[1].split('.')[0]}", produced=f"{p[0]}: {p[1]}"
        )
    name = names[diff["value"]]
    if diff["what"] == "value":
        return msg(
            "engine.value",
            name=name,
            line=line,
            expected=show(diff["expected"], diff["produced"]),
            produced=show(diff["produced"], diff["expected"]),
        )
    if diff["what"] == "meta":
        field = "grad_fn is not None" if diff["field"] == "has_grad_fn" else diff["field"]
        return msg("engine.meta", name=name, field=field, expected=diff["expected"], produced=diff["produced"])
    if diff["what"] == "received":
        return msg(
            "engine.received",
            name=name,
            line=line,
            expected=show(diff["expected"], diff["produced"]),
            produced=show(diff["produced"], diff["expected"]),
        )
    return msg(
        "engine.grad",
        name=name,
        line=line,
        expected=show(diff["expected"], diff["produced"]),
        produced=show(diff["produced"], diff["expected"]),
    )


def _prints(program, diffs, expected) -> dict[int, list[str]]:
    """After the step where each difference shows: a print of what the
    student's engine holds, with torch's answer beside it as a comment."""
    names = names_of(program)
    out: dict[int, list[str]] = {}
    for diff in diffs[:3]:
        if diff["what"] == "error" or diff["step"] < 0:
            continue
        name = names[diff["value"]]
        target = {"grad": f"{name}.grad", "received": f"{name}.grad", "value": f"{name}.data"}.get(
            diff["what"], f"{name}.{diff.get('field', '')}".replace(".has_grad_fn", ".grad_fn")
        )
        # what torch holds there: for a backward that raised halfway, the whole .grad, not what it received
        answer = (
            expected["steps"][diff["step"]]["grads"][diff["value"]] if diff["what"] == "received" else diff["expected"]
        )
        answer = show(answer, diff["produced"]).replace("\n", " ")
        out.setdefault(diff["step"], []).append(f"print({target!r}, {target})  # torch.autograd: {answer}")
    return out


def feedback(kind, program, expected, produced, diffs, device="cpu", fuzzer=None) -> str:
    ops = len(op_names(program))
    # the student's module by the name it was loaded under
    module = getattr(getattr(fuzzer, "proxy", None), "module", None) or "engine"
    # a script the student can run as it is: their engine's module imported, the differences printed
    raises = {i: s["error"][0] for i, s in enumerate(expected["steps"]) if s["error"] and s["error"][0] != "Skipped"}
    code = render(program, module=module, prints=_prints(program, diffs, expected), raises=raises)
    parts = [msg("engine.header", ops=ops), code, ""]
    parts += [describe(program, d) for d in diffs[:3]]
    if len(diffs) > 3:
        parts.append(msg("engine.more", count=len(diffs) - 3))
    diagnosis = diagnose(kind, program, expected, produced, diffs, device, fuzzer)
    if diagnosis:
        parts.append(diagnosis)
    return "\n".join(parts)

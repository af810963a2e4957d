"""Which way a student's ``unbroadcast`` goes wrong, told by small probe
programs run through their engine (one worker call): an input of each
broadcast shape added to a (2, 3) or a (2, 3, 4) tensor, weighted and
summed. Each mistake fails its own set of them:

- no unbroadcast at all: every probe;
- the leading axes not summed away: (3,) against (2, 3) only;
- no sum over axes of length 1: (2, 1) against (2, 3), and the 3-D ones;
- only the first stretched axis summed: (1, 3, 1) against (2, 3, 4), wrong values;
- only axes 0 and -1 looked at: (2, 1, 4) against (2, 3, 4), a middle axis;
- sums without keepdims, so that the next axis's index points past the
  axis it meant: (1, 3, 1) raises (the last axis is gone)."""

from __future__ import annotations

import numpy as np

from ..i18n import msg
from .builder import Builder
from .differences import compare


def _probe(small, big) -> dict:
    b = Builder()
    n = int(np.prod(big))
    x = b.leaf(None, big, values=[(0.5, -1.5, 2.0, 1.25, 0.3, -0.4)[i % 6] + 0.1 * (i // 6) for i in range(n)])
    c = b.leaf(None, small, values=[0.8] * int(np.prod(small)))
    w = b.leaf(
        None, big, values=[(1.5, -0.5, 2.0, 0.25, -1.25)[i % 5] + 0.2 * (i // 5) for i in range(n)], requires_grad=False
    )
    b.backward(b.op("sum", [b.op("mul", [b.op("add", [x, c]), w])], axis=None))
    return b.program()


# the probes, by the mistake a probe that fails alone names
PROBES = {
    "unbroadcast_leading": _probe((3,), (2, 3)),
    "unbroadcast_ones": _probe((2, 1), (2, 3)),
    "unbroadcast_first": _probe((1, 3, 1), (2, 3, 4)),
    "unbroadcast_ends": _probe((2, 1, 4), (2, 3, 4)),
}


def _outcomes(fuzzer) -> dict[str, str] | None:
    """Each probe's outcome on the student's engine: "right", "wrong"
    (values) or "raises"; None when the engine could not run them."""
    try:
        results = fuzzer.results(list(PROBES.values()))
    except BaseException:
        return None
    outcomes = {}
    for name, (program, expected, produced) in zip(PROBES, results):
        diffs = compare("probe", program, expected, produced)
        raised = any(d["what"] == "error" and d["produced"] is not None for d in diffs)
        outcomes[name] = "raises" if raised else "wrong" if diffs else "right"
    return outcomes


def _example(program, probe: str, wanted) -> dict:
    """An operand of ``program`` stretched along the axes ``wanted``
    accepts (the axes of length 1 in it that the result stretched, in its
    own numbering, as unbroadcast goes through them after the leading ones),
    as the message's shapes and axes; else the probe's own."""
    shapes = Builder.of(program).shapes if program is not None else []
    n_leaves = len(program["leaves"]) if program is not None else 0
    ops = [s for s in program["steps"] if s["kind"] == "op"] if program is not None else []
    for value, step in enumerate(ops, start=n_leaves):
        if step["op"] not in ("add", "sub", "mul", "div"):
            continue
        out = shapes[value]
        for arg in step["args"]:
            shape = shapes[arg]
            added = len(out) - len(shape)
            axes = tuple(i for i, n in enumerate(shape) if n == 1 < out[added + i])
            if shape and wanted(shape, axes):
                return {"shape": shape, "out": out, "axes": axes}
    step = PROBES[probe]
    shape, out = (tuple(leaf["shape"]) for leaf in reversed(step["leaves"][:2]))
    return {"shape": shape, "out": out, "axes": tuple(i for i, n in enumerate(shape) if n == 1)}


def _several(shape, axes):
    return len(axes) >= 2


def _inner(shape, axes):
    return any(0 < a < len(shape) - 1 for a in axes)


def _text(key: str, program, wanted) -> str:
    found = _example(program, key, wanted)
    axes = found["axes"]
    return msg(
        f"diag.engine.{key}",
        shape=found["shape"],
        out=found["out"],
        axes=" and ".join(str(a) for a in axes),
        axis=next((a for a in axes if 0 < a < len(found["shape"]) - 1), axes[0] if axes else 1),
    )


def mistake(fuzzer, program=None) -> str:
    """The diagnosis (catalogue text) of a broadcast that went wrong in
    ``program``, whose shapes the message names where they show it."""
    how = _outcomes(fuzzer)
    if how is None or how["unbroadcast_leading"] != "right" and how["unbroadcast_ones"] != "right":
        return msg("diag.engine.no_unbroadcast")
    if how["unbroadcast_leading"] != "right":
        return msg("diag.engine.unbroadcast_leading")
    if how["unbroadcast_ones"] != "right":
        return msg("diag.engine.unbroadcast_ones")
    if how["unbroadcast_ends"] != "right":
        return _text("unbroadcast_ends", program, _inner)
    if how["unbroadcast_first"] == "raises":
        return _text("unbroadcast_shifted", program, _several)
    if how["unbroadcast_first"] == "wrong":
        return _text("unbroadcast_first", program, _several)
    return msg("diag.engine.no_unbroadcast")

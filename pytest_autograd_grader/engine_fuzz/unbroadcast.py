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
    w = b.leaf(None, big, values=[(1.5, -0.5, 2.0, 0.25, -1.25)[i % 5] + 0.2 * (i // 5) for i in range(n)],
               requires_grad=False)
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


def mistake(fuzzer) -> str:
    """The diagnosis (catalogue text) of a broadcast that went wrong."""
    how = _outcomes(fuzzer)
    if how is None or how["unbroadcast_leading"] != "right" and how["unbroadcast_ones"] != "right":
        return msg("diag.engine.no_unbroadcast")
    if how["unbroadcast_leading"] != "right":
        return msg("diag.engine.unbroadcast_leading")
    if how["unbroadcast_ones"] != "right":
        return msg("diag.engine.unbroadcast_ones")
    if how["unbroadcast_ends"] != "right":
        return msg("diag.engine.unbroadcast_ends")
    if how["unbroadcast_first"] == "raises":
        return msg("diag.engine.unbroadcast_shifted")
    if how["unbroadcast_first"] == "wrong":
        return msg("diag.engine.unbroadcast_first")
    return msg("diag.engine.no_unbroadcast")

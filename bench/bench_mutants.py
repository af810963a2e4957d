"""How many mutants `autograd-grader audit` writes of each solution module, which
operators fire where, and how fast they are written (not graded).

    python bench/bench_mutants.py [--solutions solutions] [--rounds 3]

Printed per module: the number of mutants, the number from autograd-specific
operators, and the count per operator; then the total and mutants written per
second (the best of --rounds, as a shared machine's speed drifts). Figures are
printed, not asserted.
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path

from pytest_autograd_grader.audit.mutants import mutants_of

REPO = Path(__file__).resolve().parent.parent
AUTOGRAD = {
    "drop_retain_graph",
    "drop_create_graph",
    "drop_retain_grad",
    "drop_zero_grad",
    "drop_no_grad",
    "drop_detach",
    "drop_clone",
    "drop_requires_grad",
    "swap_sum_mean",
    "swap_saved",
}


def write_all(paths: list[Path]) -> dict[str, list]:
    return {path.stem: mutants_of(path.read_text(), path.stem, f"{path.parent.name}/{path.name}") for path in paths}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solutions", type=Path, default=REPO / "solutions")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    paths = sorted(args.solutions.glob("*.py"))
    best = float("inf")
    for _ in range(max(args.rounds, 1)):
        start = time.perf_counter()
        made = write_all(paths)
        best = min(best, time.perf_counter() - start)
    total = 0
    for module, mutants in made.items():
        counts = collections.Counter(m.operator for m in mutants)
        specific = sum(n for name, n in counts.items() if name in AUTOGRAD)
        lines = len((args.solutions / f"{module}.py").read_text().splitlines())
        print(
            f"{module:16} {len(mutants):4} mutants ({specific:2} autograd-specific) from {lines:3} lines: "
            + ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))
        )
        total += len(mutants)
    print(f"total {total} mutants of {len(paths)} modules in {best:.2f} s: {total / best:.0f} mutants/s")


if __name__ == "__main__":
    main()

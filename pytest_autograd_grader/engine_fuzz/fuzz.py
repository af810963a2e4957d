"""Differential fuzzing of a student's engine against torch.autograd.

``fuzz(proxy, kind, grade_rng, device)`` draws batches of programs of one
kind (``programs.STRATEGIES``) with hypothesis, runs each batch on the
student's engine in the worker (one call per batch) and in torch.autograd
here, and when a program disagrees lets hypothesis shrink the batch to the
smallest disagreeing program. It returns None (no disagreement) or the
feedback (``feedback.py``): the program as Python, expected against
produced (``differences.py``), a diagnosis.

Reproducible: no example database, hypothesis's random generator seeded
from the check's ``grade_rng``; the number of examples and of shrink
steps is bounded by counts, never by time."""

from __future__ import annotations

import contextlib
import json
import random
import time

from . import diagnosis, reduce
from . import programs as P
from .differences import compare
from .feedback import feedback
from .interpret import run_engine_batch, run_torch, unpack

BATCH = 12          # programs per worker call, at least (one per case, then random ones)
MAX_EXAMPLES = 4    # batches tried when every program agrees
EXAMPLES = {"ops": 2}  # the op check's batches hold one program per op and more: fewer of them
SHRINK_SEARCH = 40  # single programs tried to find one to shrink, once a batch disagreed
SHRINK_CALLS = 30   # worker calls spent shrinking a disagreement at most
SHRINK_TRIES = 200  # candidates hypothesis's shrinker may try at most
REDUCE_ROUNDS = 12  # rounds of taking one op or step away (reduce.py), one worker call each


def _reference(function):
    """``function`` by module and name: the worker imports it from the
    package (sending a plain function costs an inspect.getsource, ~0.3 s)."""
    from ..boundary.records import FunctionRef

    return FunctionRef(module=function.__module__, qualname=function.__qualname__)


RUN_ENGINE_BATCH = _reference(run_engine_batch)


UNTESTABLE = "untestable"  # run()'s answer when the engine's ops leave nothing to test with


class _Stop(BaseException):
    """The shrinking budget is spent: the smallest failing batch so far stands."""


class _Abort(BaseException):
    """The student's code failed as a whole (not implemented, hang, crash):
    carried through hypothesis untouched and re-raised as it was."""

    def __init__(self, failure):
        super().__init__()
        self.failure = failure


# -- the search and the shrinking ------------------------------------------------

class Fuzzer:
    def __init__(self, proxy, kind: str, seed: int, device: str):
        self.proxy, self.kind, self.seed, self.device = proxy, kind, seed, device
        self.engine: dict[str, dict] = {}
        self.torch: dict[str, dict] = {}
        self.verdicts: dict[str, bool] = {}
        self.tried = 0
        self.calls = 0
        self.failing_calls = None  # worker calls when the first disagreement was found
        self.tries = 0
        self.best = None
        self.worker_s = self.torch_s = 0.0  # time in worker calls and in torch (for bench/)
        self.drawn: list[dict] = []  # the programs of the batches searched (behaviours.py reads them)

    def results(self, batch):
        """(program, torch result, engine result) for each program of the
        batch; each program runs once (shrinking repeats most of a batch)."""
        keys = [json.dumps(p, sort_keys=True) for p in batch]
        missing = {}
        for key, program in zip(keys, batch):
            if key not in self.engine:
                missing.setdefault(key, dict(program))  # plain data to cross to the worker
        if missing:
            start = time.perf_counter()
            try:
                produced = self.proxy.run(RUN_ENGINE_BATCH, list(missing.values()))
            except Exception as failure:  # the proxy's StudentFailure: not implemented, hang, crash
                raise _Abort(failure) from None
            self.calls += 1
            self.tried += len(missing)
            middle = time.perf_counter()
            for (key, program), result in zip(missing.items(), produced):
                self.engine[key] = unpack(json.loads(result) if isinstance(result, str) else result)
                self.torch[key] = run_torch(program, self.device)
            self.worker_s += middle - start
            self.torch_s += time.perf_counter() - middle
        return [(p, self.torch[k], self.engine[k]) for p, k in zip(batch, keys)]

    def disagrees(self, batch) -> bool:
        key = json.dumps(batch, sort_keys=True)
        if self.failing_calls is not None:
            self.tries += 1
            if self.tries > SHRINK_TRIES or (self.calls - self.failing_calls >= SHRINK_CALLS and any(
                    json.dumps(p, sort_keys=True) not in self.engine for p in batch)):
                raise _Stop()
        if self.failing_calls is None and self.best is None:
            self.drawn += batch
        if key not in self.verdicts:
            self.verdicts[key] = any(compare(self.kind, p, e, r) for p, e, r in self.results(batch))
        found = self.verdicts[key]
        if found:
            # the shrinker only tries candidates smaller than the best so far
            self.best = batch
            if self.failing_calls is None:
                self.failing_calls = self.calls
        return found

    def _find(self, strategy, condition, max_examples, phases):
        from hypothesis import HealthCheck, Verbosity, find, settings

        config = settings(database=None, deadline=None, max_examples=max_examples,
                          suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet, phases=phases)
        with _no_local_constants():
            return find(strategy.map(_quiet), condition, settings=config, random=random.Random(self.seed))

    def trusted_ops(self) -> set[str]:
        """The ops a traversal or a broadcast is built from that the
        student's engine computes right on their own (one worker call)."""
        from hypothesis import Phase

        try:
            probe = self._find(P.op_probe(), lambda batch: True, 1, (Phase.generate,))
            return {p["case"] for p, e, r in self.results(probe) if not compare("ops", p, e, r)}
        except _Abort as abort:
            raise abort.failure from None

    def options(self) -> dict | None:
        """The strategy's options: for a traversal and a broadcast, the ops
        the student got right (a wrong derivative is the op check's to
        tell, not these as well); None where no op is left to build with."""
        if self.kind not in ("traversal", "broadcasting"):
            return {}
        right = self.trusted_ops()
        if self.kind == "broadcasting":
            options = {"ops": tuple(op for op in P.BROADCAST_OPS if op in right)}
        else:
            options = {"ops": tuple(op for op in P.TRAVERSAL_OPS if op in right),
                       "joins": tuple(op for op in P.TRAVERSAL_JOINS if op in right)}
        if all(options.values()) or self.kind == "traversal" and options["joins"]:
            return options
        # no op works even alone: either their derivatives are all wrong (the
        # op check tells), or the engine fails every backward of more than
        # one node (an order or freeing mistake), which any program shows
        return {} if diagnosis.backward_broken(self) else None

    def batches(self, options: dict):
        """Batches that hold one program of each case of the kind (the
        behaviours its docstrings specify) and random programs beside them."""
        from hypothesis import strategies as st

        strategy = P.STRATEGIES[self.kind]
        if self.kind in P.SWEEPS:
            covered = P.SWEEPS[self.kind](**options)
        else:
            covered = st.tuples(*(strategy(case=c, **options) for c in P.CASES[self.kind])).map(list)
        extra = BATCH - len(P.CASES[self.kind])
        if extra <= 0:
            return covered
        return st.tuples(covered, st.lists(strategy(**options), min_size=1, max_size=extra)).map(
            lambda t: t[0] + t[1])

    def run(self):
        """Search in batches (one worker call each, no shrinking); when a
        batch disagrees, search again program by program, from hypothesis's
        simplest programs on, and shrink the first that disagrees."""
        from hypothesis import Phase
        from hypothesis.errors import NoSuchExample

        options = self.options()
        if options is None:
            return UNTESTABLE  # no op to build with: the op check tells why
        try:
            batch = self._find(self.batches(options), self.disagrees, EXAMPLES.get(self.kind, MAX_EXAMPLES),
                               (Phase.generate,))
        except NoSuchExample:
            return None
        except _Abort as abort:
            raise abort.failure from None
        fallback = next(p for p, e, r in self.results(batch) if compare(self.kind, p, e, r))
        self.failing_calls, self.best = None, None
        single = P.STRATEGIES[self.kind](case=fallback["case"], **options)
        try:
            program = self._find(single, lambda p: self.disagrees([p]), SHRINK_SEARCH,
                                 (Phase.generate, Phase.shrink))
        except NoSuchExample:
            program = fallback
        except _Stop:
            program = self.best[0]
        except _Abort as abort:
            raise abort.failure from None
        program = self.reduce(program)
        ((program, expected, produced),) = self.results([program])
        return program, expected, produced, compare(self.kind, program, expected, produced)

    def reduce(self, program: dict) -> dict:
        """Take away one op or step at a time while the program still
        disagrees (``reduce.py``; one worker call a round), until nothing
        can go: the program shown is 1-minimal."""
        for _ in range(REDUCE_ROUNDS):
            smaller = reduce.candidates(program)
            try:
                found = next((p for p, e, r in self.results(smaller) if compare(self.kind, p, e, r)), None)
            except _Abort:
                break  # a candidate the engine cannot run at all: the program so far stands
            if found is None:
                break
            program = found
        return program


class _Batch(list):
    """Programs that hypothesis prints in one word: it pretty-prints the
    example it found, which for a batch of programs took 40% of a failing
    check's time (and nobody reads it)."""

    def _repr_pretty_(self, printer, cycle):
        printer.text(f"<{len(self)} programs>")


class _Program(dict):
    def _repr_pretty_(self, printer, cycle):
        printer.text("<program>")


def _quiet(value):
    return _Batch(value) if isinstance(value, list) else _Program(value)


@contextlib.contextmanager
def _no_local_constants():
    """Hypothesis (from 6.131) mixes into its draws constants it reads from the
    source of "local" modules (any not under site-packages: the checks, an
    editable install of this grader) and caches them in ``.hypothesis/`` in
    the working directory. The programs drawn for a seed would then depend on
    how the grader was installed and what lies beside the checks, and every
    grading run would leave a folder behind. Within the fuzzer's searches no
    module counts as local; a hypothesis without these internals (older or
    newer) is left as it is."""
    try:
        from hypothesis.internal.conjecture import providers

        real = providers._get_local_constants
        empty = providers.Constants(integers=providers.SortedSet(), floats=providers.SortedSet(key=providers.float_to_int),
                                    bytes=providers.SortedSet(), strings=providers.SortedSet())
        cache = providers.CONSTANTS_CACHE.cache
    except (ImportError, AttributeError, TypeError):
        yield
        return
    cache.clear()  # entries another search made with local constants in them
    providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        providers._get_local_constants = real
        cache.clear()


def fuzz(proxy, kind: str, grade_rng, device: str = "cpu"):
    """None when the student's engine agrees with torch.autograd on every
    program tried, else the feedback for the smallest program that shows
    a disagreement."""
    fuzzer = Fuzzer(proxy, kind, int(grade_rng.seed), device)
    found = fuzzer.run()
    if found is None:
        return None
    if found == UNTESTABLE:
        from ..i18n import msg

        if kind == "broadcasting":
            return msg("engine.broadcasting_untested", ops=", ".join(P.BROADCAST_OPS))
        return msg("engine.traversal_untested", joins=", ".join(P.TRAVERSAL_JOINS))
    program, expected, produced, diffs = found
    return feedback(kind, program, expected, produced, diffs, device, fuzzer)


def check(proxy, kind: str, grade_rng, device: str = "cpu") -> None:
    """Fail the check with the feedback of ``fuzz`` when there is one."""
    from ..outcomes import GradeFailure

    text = fuzz(proxy, kind, grade_rng, device)
    if text is not None:
        raise GradeFailure(text)

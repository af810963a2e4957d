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

from . import programs as P
from .differences import compare
from .feedback import feedback
from .interpret import run_engine_batch, run_torch, unpack

BATCH = 12          # programs per worker call
MAX_EXAMPLES = 5    # batches tried when every program agrees
SWEEP_EXAMPLES = 3  # sweeps tried (a sweep: one program for each op or graph shape)
SHRINK_SEARCH = 40  # single programs tried to find one to shrink, once a batch disagreed
SHRINK_CALLS = 30   # worker calls spent shrinking a disagreement at most
SHRINK_TRIES = 200  # candidates hypothesis's shrinker may try at most


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

    def results(self, batch):
        """(program, torch result, engine result) for each program of the
        batch; each program runs once (shrinking repeats most of a batch)."""
        keys = [json.dumps(p, sort_keys=True) for p in batch]
        missing = {}
        for key, program in zip(keys, batch):
            if key not in self.engine:
                missing.setdefault(key, program)
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
            return find(strategy, condition, settings=config, random=random.Random(self.seed))

    def trusted_ops(self) -> tuple[tuple, tuple]:
        """The unary ops and the joins of a traversal that the student's
        engine computes right on their own (one worker call)."""
        from hypothesis import Phase

        try:
            probe = self._find(P.op_probe(), lambda batch: True, 1, (Phase.generate,))
            right = {p["case"] for p, e, r in self.results(probe) if not compare("traversal", p, e, r)}
        except _Abort as abort:
            raise abort.failure from None
        return (tuple(op for op in P.TRAVERSAL_OPS if op in right),
                tuple(op for op in P.TRAVERSAL_JOINS if op in right))

    def run(self):
        """Search in batches (one worker call each, no shrinking); when a
        batch disagrees, search again program by program, from hypothesis's
        simplest programs on, and shrink the first that disagrees."""
        from hypothesis import Phase
        from hypothesis import strategies as st
        from hypothesis.errors import NoSuchExample

        options = {}
        if self.kind == "traversal":
            # a traversal built from the ops the student got right: a wrong
            # derivative is the op check's to tell, not this one's as well
            ops, joins = self.trusted_ops()
            if not joins:
                return UNTESTABLE  # no op to join two paths with: the op check tells why
            options = {"ops": ops, "joins": joins}
        single = P.STRATEGIES[self.kind](**options)
        if self.kind in P.SWEEPS:
            batches, examples = P.SWEEPS[self.kind](**options), SWEEP_EXAMPLES
        else:
            must = P.MUST.get(self.kind, ())
            batches = st.tuples(*(P.STRATEGIES[self.kind](case=c, **options) for c in must),
                                st.lists(single, min_size=1, max_size=BATCH - len(must))).map(
                lambda t: [*t[:-1], *t[-1]])
            examples = MAX_EXAMPLES
        try:
            batch = self._find(batches, self.disagrees, examples, (Phase.generate,))
        except NoSuchExample:
            return None
        except _Abort as abort:
            raise abort.failure from None
        fallback = next(p for p, e, r in self.results(batch) if compare(self.kind, p, e, r))
        self.failing_calls, self.best = None, None
        if self.kind in P.CASES and "case" in fallback:
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
        ((program, expected, produced),) = self.results([program])
        return program, expected, produced, compare(self.kind, program, expected, produced)


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

        return msg("engine.traversal_untested", joins=", ".join(P.TRAVERSAL_JOINS))
    program, expected, produced, diffs = found
    return feedback(kind, program, expected, produced, diffs, device, fuzzer)


def check(proxy, kind: str, grade_rng, device: str = "cpu") -> None:
    """Fail the check with the feedback of ``fuzz`` when there is one."""
    from ..outcomes import GradeFailure

    text = fuzz(proxy, kind, grade_rng, device)
    if text is not None:
        raise GradeFailure(text)

"""Differential fuzzing of a student's engine against torch.autograd.

``fuzz(proxy, kind, grade_rng, device)`` draws batches of programs of one
kind (``programs.GENERATORS``; every batch holds each case of the kind),
runs each batch on the student's engine in the worker (one call per batch)
and in torch.autograd here, and when a program disagrees lets hypothesis
find and shrink the simplest program of that case that disagrees, then
takes away every op and step it does not need (``reduce.py``). It returns
None (no disagreement) or the feedback (``feedback.py``): the program as
Python, expected against produced (``differences.py``), a diagnosis
(``explain_difference.py``).

Reproducible: the search draws from a generator seeded from the check's
``grade_rng``, hypothesis from a generator seeded the same way, with no
example database; the number of examples and of shrink steps is bounded
by counts, never by time."""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections import OrderedDict
from typing import Any

from . import explain_difference, reduce
from . import programs as P
from .builder import RandomDraws, strategy
from .differences import compare
from .feedback import feedback
from .interpret import run_engine_batch, run_torch, unpack, unpack_text
from .staged import run_staged_batch

BATCH = 12  # programs per worker call, at least (one per case, then random ones)
MAX_EXAMPLES = 4  # batches tried when every program agrees
EXAMPLES = {"ops": 2}  # the op check's batches hold one program per op and more: fewer of them
SHRINK_SEARCH = 40  # single programs tried to find one to shrink, once a batch disagreed
SHRINK_CALLS = 30  # worker calls spent shrinking a disagreement at most
SHRINK_TRIES = 200  # candidates hypothesis's shrinker may try at most
REDUCE_ROUNDS = 12  # rounds of taking one op or step away (reduce.py), one worker call each


def _reference(function):
    """``function`` by module and name: the worker imports it from the
    package (sending a plain function costs an inspect.getsource, ~0.3 s)."""
    from ..boundary.records import FunctionRef

    return FunctionRef(module=function.__module__, qualname=function.__qualname__)


RUN_ENGINE_BATCH = _reference(run_engine_batch)
RUN_STAGED_BATCH = _reference(run_staged_batch)


# What depends on the seed and the programs alone, never on the student:
# where one process grades many students with one seed (a class run with
# --seed, watch mode re-grading a file), the batches drawn and torch's
# results for their programs are kept, so every student after the first
# pays only for their own engine's runs. Bounded: the least recently used
# torch result goes first.
SHARED_RESULTS = 8192
_torch_results: OrderedDict[tuple[str, str], dict] = OrderedDict()
_batches: dict[tuple[int, str, str], tuple[RandomDraws, list[list[dict]]]] = {}
_probes: dict[int, list[dict]] = {}


def _torch_result(key: str, program: dict, device: str) -> dict:
    """torch's result for ``program`` (``key``: its JSON text); the results
    are read, never changed, by the comparison and the feedback."""
    found = _torch_results.get((key, device))
    if found is None:
        found = _torch_results[(key, device)] = run_torch(program, device)
        if len(_torch_results) > SHARED_RESULTS:
            _torch_results.popitem(last=False)
    else:
        _torch_results.move_to_end((key, device))
    return found


UNTESTABLE = "untestable"  # run()'s answer when the engine's ops leave nothing to test with


class _Stop(BaseException):
    """The shrinking budget is spent: the smallest disagreeing program so far stands."""


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
        self.failing_calls = 0  # worker calls when the first disagreement was found
        self.tries = 0
        self.best = None
        self.worker_s = self.torch_s = 0.0  # time in worker calls and in torch (for bench/)
        self.drawn: list[dict] = []  # the programs of the batches searched (behaviours.py reads them)

    def results(self, batch):
        """(program, torch result, engine result) for each program of the
        batch; each program runs once (shrinking repeats most of a batch)."""
        drawn = isinstance(batch, _Drawn)
        keys = batch.keys if drawn else [json.dumps(p, sort_keys=True) for p in batch]
        missing: dict[str, dict[str, Any]] = {}
        for key, program in zip(keys, batch):
            if key not in self.engine:
                missing.setdefault(key, dict(program))  # plain data to cross to the worker
        if missing:
            start = time.perf_counter()
            request = batch.request if drawn and len(missing) == batch.unique else json.dumps(list(missing.values()))
            try:
                # the op check runs before the student's backward pass exists (staged tasks)
                produced = self.proxy.run(RUN_STAGED_BATCH if self.kind == "ops" else RUN_ENGINE_BATCH, request)
            except Exception as failure:  # the proxy's StudentFailure: not implemented, hang, crash
                raise _Abort(failure) from None
            self.calls += 1
            self.tried += len(missing)
            middle = time.perf_counter()
            for (key, program), result in zip(missing.items(), produced):
                self.engine[key] = unpack_text(result) if isinstance(result, str) else unpack(result)
                self.torch[key] = _torch_result(key, program, self.device)
            self.worker_s += middle - start
            self.torch_s += time.perf_counter() - middle
        return [(p, self.torch[k], self.engine[k]) for p, k in zip(batch, keys)]

    def disagrees(self, batch) -> bool:
        """Whether a program of ``batch`` disagrees (hypothesis's condition
        while it shrinks); ``_Stop`` once the shrinking budget is spent."""
        key = json.dumps(batch, sort_keys=True)
        self.tries += 1
        if self.tries > SHRINK_TRIES or (
            self.calls - self.failing_calls >= SHRINK_CALLS
            and any(json.dumps(p, sort_keys=True) not in self.engine for p in batch)
        ):
            raise _Stop()
        if key not in self.verdicts:
            self.verdicts[key] = any(compare(self.kind, p, e, r) for p, e, r in self.results(batch))
        found = self.verdicts[key]
        if found:
            self.best = batch  # the shrinker only tries candidates smaller than the best so far
        return found

    def _find(self, strategy, condition, max_examples, phases):
        from hypothesis import HealthCheck, Verbosity, find, settings

        config = settings(
            database=None,
            deadline=None,
            max_examples=max_examples,
            suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.quiet,
            phases=phases,
        )
        with _no_local_constants():
            return find(strategy.map(_quiet), condition, settings=config, random=random.Random(self.seed))

    def _run(self, batch):
        try:
            return self.results(batch)
        except _Abort as abort:
            raise abort.failure from None

    def trusted_ops(self) -> set[str]:
        """The ops a traversal or a broadcast is built from that the
        student's engine computes right on their own (one worker call)."""
        if self.seed not in _probes:
            _probes.clear()  # one seed's probe at a time: a class run's, or the last student's
            _probes[self.seed] = P.op_probe(RandomDraws(f"{self.seed}:probe"))
        probe = _probes[self.seed]
        return {p["case"] for p, e, r in self._run(probe) if not compare("ops", p, e, r)}

    def options(self) -> dict | None:
        """The generator's options: for a traversal and a broadcast, the ops
        the student got right (a wrong derivative is the op check's to
        tell, not these as well); None where no op is left to build with."""
        if self.kind not in ("traversal", "broadcasting"):
            return {}
        right = self.trusted_ops()
        if self.kind == "broadcasting":
            options = {"ops": tuple(op for op in P.BROADCAST_OPS if op in right)}
        else:
            options = {
                "ops": tuple(op for op in P.TRAVERSAL_OPS if op in right),
                "joins": tuple(op for op in P.TRAVERSAL_JOINS if op in right),
            }
        if all(options.values()) or self.kind == "traversal" and options["joins"]:
            return options
        # no op works even alone: either their derivatives are all wrong (the
        # op check tells), or the engine fails every backward of more than
        # one node (an order or freeing mistake), which any program shows
        return {} if explain_difference.backward_broken(self) else None

    def batch(self, d: RandomDraws, options: dict) -> list[dict]:
        """One program of each case of the kind (the behaviours its
        docstrings specify) and random programs beside them."""
        generate = P.GENERATORS[self.kind]
        if self.kind in P.SWEEPS:
            covered = P.SWEEPS[self.kind](d, **options)
        else:
            covered = [generate(d, case=c, **options) for c in P.CASES[self.kind]]
        extra = BATCH - len(P.CASES[self.kind])
        return covered + [generate(d, **options) for _ in range(d.integer(1, extra) if extra > 0 else 0)]

    def batch_at(self, index: int, options: dict) -> list[dict]:
        """The ``index``-th batch drawn from the seed for this kind and these
        options: drawn once per process, as the search goes."""
        key = (self.seed, self.kind, json.dumps(options, sort_keys=True))
        if key not in _batches:
            if len(_batches) >= 4 * len(P.GENERATORS):
                _batches.clear()  # another seed's: a class run keeps one
            _batches[key] = (RandomDraws(f"{self.seed}:{self.kind}"), [])
        draws, batches = _batches[key]
        while len(batches) <= index:
            batches.append(_Drawn(self.batch(draws, options)))
        return batches[index]

    def run(self):
        """Search in batches drawn from the seed (one worker call each);
        when a program disagrees, search again program by program with
        hypothesis, from its simplest programs of that case on, shrink the
        first that disagrees, then take away what it does not need."""
        from hypothesis import Phase
        from hypothesis.errors import NoSuchExample

        options = self.options()
        if options is None:
            return UNTESTABLE  # no op to build with: the op check tells why
        fallback = None
        for index in range(EXAMPLES.get(self.kind, MAX_EXAMPLES)):
            batch = self.batch_at(index, options)
            self.drawn += batch
            fallback = next((p for p, e, r in self._run(batch) if compare(self.kind, p, e, r)), None)
            if fallback is not None:
                break
        if fallback is None:
            return None
        self.failing_calls = self.calls
        single = strategy(P.GENERATORS[self.kind], case=fallback["case"], **options)
        try:
            program = self._find(single, lambda p: self.disagrees([p]), SHRINK_SEARCH, (Phase.generate, Phase.shrink))
        except NoSuchExample:
            program = fallback
        except _Stop:
            program = self.best[0] if self.best else fallback
        except _Abort as abort:
            raise abort.failure from None
        program = self.reduce(dict(program))
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


class _Drawn(list):
    """A batch drawn from the seed, with what every student's fuzzer would
    compute again from it (the same for a whole class): its programs' keys
    and, for a fuzzer that has run none of them yet, the worker's request."""

    def __init__(self, programs: list[dict]):
        super().__init__(programs)
        self.keys = [json.dumps(p, sort_keys=True) for p in programs]
        unique: dict[str, dict] = {}
        for key, program in zip(self.keys, programs):
            unique.setdefault(key, dict(program))  # as results() gathers what is missing
        self.unique = len(unique)
        self.request = json.dumps(list(unique.values()))


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
        empty = providers.Constants(
            integers=providers.SortedSet(),
            floats=providers.SortedSet(key=providers.float_to_int),
            bytes=providers.SortedSet(),
            strings=providers.SortedSet(),
        )
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

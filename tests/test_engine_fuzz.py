"""The engine track's fuzzer, in-process (the student's engine imported
here instead of run in the sandbox's worker, the same programs and
verdicts; test_topic_engine.py grades through the sandbox):

- every behaviour the engine's docstrings specify is drawn on every seed,
  and the reference engine agrees with torch.autograd on all of them;
- every planted mistake (engine_mistakes.py) fails exactly the checks of
  the concepts it touches, on every seed, with its own diagnosis and no
  other, and the program shown is 1-minimal: taking away any op or step
  makes the disagreement go away;
- the programs mean what their strategies meant (leaves numbered first)
  and never meet relu's kink by rounding (only as a leaf's exact 0)."""

from __future__ import annotations

import json
import re
import types
import warnings

import numpy as np
import pytest
from conftest import SEEDS, pattern
from engine_mistakes import ALL, ALSO, KINK_STYLES, MAX_OPS, MISTAKES, SOURCE, STYLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_autograd_grader.boundary import given as given_modules
from pytest_autograd_grader.checking.seeding import check_seed
from pytest_autograd_grader.engine_fuzz import behaviours, programs, reduce
from pytest_autograd_grader.engine_fuzz import fuzz as fuzz_module
from pytest_autograd_grader.engine_fuzz.builder import Builder, strategy
from pytest_autograd_grader.engine_fuzz.differences import compare
from pytest_autograd_grader.engine_fuzz.feedback import feedback
from pytest_autograd_grader.engine_fuzz.fuzz import UNTESTABLE, Fuzzer
from pytest_autograd_grader.engine_fuzz.interpret import run_engine_batch, run_torch
from pytest_autograd_grader.engine_fuzz.program_graph import Graph
from pytest_autograd_grader.engine_fuzz.staged import run_staged_batch
from pytest_autograd_grader.i18n.en import EN

# the check of each kind, as test_engine.py names it
KINDS = {
    "test_op_derivatives": "ops",
    "test_broadcasting": "broadcasting",
    "test_graph_traversal": "traversal",
    "test_leaves_and_requires_grad": "leaf",
    "test_accumulation_and_zeroing": "accumulation",
    "test_retain_graph_errors": "retain_graph",
    "test_vector_backward": "vector_backward",
}


class InProcess:
    """The submission proxy's part the fuzzer uses, over a module made here
    from source: each program batch runs as the worker would run it."""

    def __init__(self, source: str, name: str = "engine"):
        given_modules.install()  # engine_given from the grader's curriculum, as a worker's loader does
        self.engine = types.ModuleType(name)
        exec(compile(source, f"{name}.py", "exec"), self.engine.__dict__)
        self.module = name

    def run(self, function, programs_):
        run = run_staged_batch if function.qualname == "run_staged_batch" else run_engine_batch
        return run(self.engine, programs_)


def fuzzer(source: str, check: str, seed: int) -> Fuzzer:
    """The fuzzer of ``check`` with the seed ``--grade-seed SEED`` gives it."""
    return Fuzzer(InProcess(source), KINDS[check], check_seed(seed, f"exercises/test_engine.py::{check}[cpu]"), "cpu")


@pytest.mark.parametrize("check", list(KINDS))
def test_every_behaviour_is_drawn_on_every_seed_and_the_reference_agrees(check):
    kind = KINDS[check]
    for seed in SEEDS:
        found = fuzzer(SOURCE, check, seed)
        assert found.run() is None, (seed, check)
        assert behaviours.missing(kind, found.drawn) == [], (seed, check)


@pytest.mark.parametrize("style", list(STYLES))
def test_a_right_engine_in_another_style_keeps_full_marks(style):
    # recursive topological sort, Kahn's algorithm, closures: other orders
    # of the nodes, the same rules
    for check in KINDS:
        for seed in SEEDS[:6]:
            found = fuzzer(STYLES[style], check, seed)
            assert found.run() is None, (style, check, seed)


@pytest.mark.parametrize("style", list(KINK_STYLES))
def test_a_right_unbroadcast_or_relu_in_another_style_keeps_full_marks_on_every_seed(style):
    # several axes of one operand stretched, relu at an exact 0: the right
    # answers the new draws meet must not lose a point on any seed
    for check in ("test_op_derivatives", "test_broadcasting"):
        for seed in SEEDS:
            assert fuzzer(KINK_STYLES[style], check, seed).run() is None, (style, check, seed)


def test_no_behaviour_holds_for_every_program():
    # a test that every program passes would prove nothing drawn
    for kind, table in behaviours.BEHAVIOURS.items():
        check = next(c for c, k in KINDS.items() if k == kind)
        found = fuzzer(SOURCE, check, SEEDS[0])
        found.run()
        graphs = [Graph(p) for p in found.drawn]
        for name, (_, test) in table.items():
            assert not all(test(g) for g in graphs), (kind, name)
    # random programs alone leave behaviours out: the cases are what draws them
    misses = set()
    for kind, generate in programs.GENERATORS.items():

        @settings(
            max_examples=5, database=None, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
        )
        @given(st.lists(strategy(generate), min_size=8, max_size=8))
        def random_only(batch):
            # called at once below, in this iteration
            misses.update((kind, name) for name in behaviours.missing(kind, batch))  # noqa: B023

        random_only()
    assert {kind for kind, _ in misses} >= {"ops", "leaf", "retain_graph", "vector_backward"}, misses


def _ops(text: str) -> int:
    found = re.search(r"\((\d+) ops\)", text)
    assert found, text
    return int(found.group(1))


@pytest.mark.parametrize("name", list(MISTAKES))
def test_each_mistake_fails_its_checks_on_every_seed_with_its_diagnosis(name):
    source, checks, diagnosis = MISTAKES[name]
    others = [key for key in EN if key.startswith("diag.engine.") and key != diagnosis]
    for check in checks:
        for seed in SEEDS[:6]:
            found = fuzzer(source, check, seed)
            result = found.run()
            assert result not in (None, UNTESTABLE), (name, check, seed)
            program, expected, produced, diffs = result
            text = feedback(KINDS[check], program, expected, produced, diffs, "cpu", found)
            assert pattern(diagnosis).search(text), (name, check, seed, text)
            assert not [key for key in others if pattern(key).search(text)], (name, check, seed, text)
            assert _ops(text) <= MAX_OPS, (name, check, text)
            # 1-minimal: no program with one op or step less still disagrees
            smaller = reduce.candidates(program)
            assert not any(compare(KINDS[check], *r) for r in found.results(smaller)), (name, check, text)
    # and it costs nothing elsewhere: the other concepts' checks pass
    engine_checks = [c for c in ALL if KINDS[c] in ("ops", "broadcasting", "traversal")]
    for check in ALL:
        if (
            check in checks
            or check in ALSO.get(name, ())
            or (set(checks) & set(engine_checks) and check in engine_checks)
        ):
            continue
        for seed in SEEDS[:2]:
            assert fuzzer(source, check, seed).run() is None, (name, check, seed)


def _verdict(source: str, check: str, seed: int):
    found = fuzzer(source, check, seed)
    result = found.run()
    if result in (None, UNTESTABLE):
        return result, found.drawn
    return feedback(KINDS[check], *result[:4], "cpu", found), found.drawn


def test_an_unbroadcast_diagnosis_names_the_shapes_of_the_program_it_shows():
    # not a fixed example's (1, 3, 1): the operand the student's own script makes
    for name in ("unbroadcast_first", "unbroadcast_ends", "unbroadcast_shifted"):
        for seed in SEEDS[:3]:
            text, _ = _verdict(MISTAKES[name][0], "test_broadcasting", seed)
            shape, out = re.search(r"an input of shape (\([\d, ]+\)) used against (\([\d, ]+\))", text).groups()
            assert f".reshape{shape}" in text and f".reshape{out}" in text, (name, seed, text)


def test_what_one_process_keeps_between_students_changes_no_verdict():
    # a class graded with one seed keeps the batches drawn and torch's results
    # in the grading process: a student graded after others gets the programs
    # and the feedback a process of their own would give
    # a wrong derivative of / or tanh leaves that op out of the traversal's
    # and the broadcast's programs: other options, other batches
    engines = [
        SOURCE,
        MISTAKES["div_derivative"][0],
        MISTAKES["no_unbroadcast"][0],
        MISTAKES["tanh_derivative"][0],
        MISTAKES["wrong_order"][0],
        MISTAKES["never_freed"][0],
    ]
    checks = ["test_broadcasting", "test_graph_traversal", "test_retain_graph_errors"]
    fresh = {}
    for number, source in enumerate(engines):
        for check in checks:
            fuzz_module._torch_results.clear()
            fuzz_module._batches.clear()
            fuzz_module._probes.clear()
            fresh[number, check] = _verdict(source, check, SEEDS[0])
    assert any(isinstance(text, str) for text, _ in fresh.values())
    for number in reversed(range(len(engines))):  # the caches now hold every other student's work
        for check in checks:
            assert _verdict(engines[number], check, SEEDS[0]) == fresh[number, check], (number, check)
    assert fuzz_module._torch_results and fuzz_module._batches


def test_the_builder_numbers_leaves_first_as_the_interpreter_does():
    # a weights leaf made after an op is the value the strategy meant: x * W,
    # not W * W; before, the builder numbered values as they were made
    b = Builder()
    x = b.leaf(None, (2,), values=[0.5, -1.5])
    h = b.op("tanh", [x])
    w = b.leaf(None, (2,), values=[2.0, 3.0], requires_grad=False)
    b.backward(b.scalar(b.op("mul", [h, w])))
    program = b.program()
    assert [s.get("args") for s in program["steps"][:2]] == [[0], [2, 1]], program
    result = run_torch(program)
    assert np.allclose(result["values"][3]["data"], np.tanh([0.5, -1.5]) * [2.0, 3.0])
    assert np.allclose(result["steps"][-1]["grads"][0], (1 - np.tanh([0.5, -1.5]) ** 2) * [2.0, 3.0])


@settings(max_examples=150, database=None, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.sampled_from(sorted(programs.GENERATORS)).flatmap(lambda kind: strategy(programs.GENERATORS[kind])))
def test_every_program_means_what_its_builder_built_and_relu_meets_its_kink_only_exactly(program):
    shapes = Builder.of(program).shapes
    result = run_torch(program)
    value = len(program["leaves"])
    for step in program["steps"]:
        if step["kind"] != "op":
            continue
        made = result["values"][value]
        if made is not None:
            assert tuple(np.shape(made["data"])) == shapes[value], (program, step)
            if step["op"] == "relu":
                # a sum that cancels to about 0 rounds to either side of the kink;
                # an exact 0 (a leaf's, drawn on purpose) lies on it
                inputs = np.asarray(result["values"][step["args"][0]]["data"])
                exact = step["args"][0] < len(program["leaves"])
                assert np.all((np.abs(inputs) > 1e-6) | exact & (inputs == 0)), program
        value += 1
    json.dumps(program)  # plain data, as it crosses to the worker


def test_results_cross_the_worker_boundary_as_the_same_text_whatever_the_arrays_hold():
    from pytest_autograd_grader.engine_fuzz.interpret import _packed_array, pack

    tree = {
        "values": [
            np.array(2.5),
            np.arange(6, dtype=np.int64).reshape(2, 3),
            np.array([True, False]),
            np.array([1.5, np.nan, -0.0], dtype=np.float32),
            np.zeros((0, 2)),
            np.array([1, 2.5], dtype=object),
            np.array([1 + 2j]),
            None,
            "<ValueError>",
        ],
        "steps": [{"grads": (np.ones(2), 3.0), "is_leaf": True}],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's, for the complex array: float() drops its imaginary part
        assert json.dumps(tree, default=_packed_array) == json.dumps(pack(tree))
    broken = np.array(["a"], dtype=object)
    with pytest.raises(ValueError):
        pack(broken)
    with pytest.raises(ValueError):  # as it did after pack
        json.dumps({"x": broken}, default=_packed_array)


def test_the_kink_diagnosis_reads_any_gradient_an_engine_gives_without_failing():
    from pytest_autograd_grader.engine_fuzz.differences import wrong_only_at_zeros

    x, torch_grad = [0.0, 0.5, -1.5], [0.0, 1.0, 0.0]
    assert wrong_only_at_zeros(x, torch_grad, [1.0, 1.0, 0.0])  # x >= 0: off at the 0 only
    assert not wrong_only_at_zeros(x, torch_grad, [1.0, 1.0, 1.0])  # off at -1.5 too: another mistake
    assert not wrong_only_at_zeros(x, torch_grad, torch_grad)
    for odd in (None, "<ValueError>", [[1.0], [1.0, 2.0]], [1.0, 1.0], {"a": 1}, [1 + 2j, 0, 0]):
        assert wrong_only_at_zeros(x, torch_grad, odd) in (True, False)

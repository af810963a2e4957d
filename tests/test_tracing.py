"""submission.trace: how a student's answer was computed, seen by the grader."""

import pytest
import torch
from conftest import grade_checks

from pytest_autograd_grader.boundary.submission import InlineExecutor, Submission, Submissions
from pytest_autograd_grader.boundary.wire import dumps
from pytest_autograd_grader.i18n import msg

STUDENT = """
import torch

def by_hand(x, w):
    return 2 * w + x + 1, w + 1

def with_backward(x, w):
    y = ((x + w) * (w + 1)).sum()
    y.backward(retain_graph=True)
    y.backward()
    return w.grad, x.grad

def with_grad(x):
    y = (x ** 3).sum()
    g, = torch.autograd.grad(y, x, create_graph=True)
    return g

def frozen(x, w):
    with torch.no_grad():
        f = x * 2
    d = w.detach()
    v = torch.zeros(2)
    return (f * w).sum() + d.sum() + v.sum()

def vector(x):
    y = x * 3
    torch.autograd.backward(y, grad_tensors=torch.ones_like(y))
    return x.grad

def twice_fails(x):
    y = (x * x).sum()
    y.backward()
    y.backward()

def many_backward(x):
    for _ in range(60):
        (x * 2).sum().backward()

def many_errors(x):
    for _ in range(100):
        try:
            x.add_(1)  # an in-place change of a leaf that requires grad
        except RuntimeError:
            pass

def retains(x, W):
    x.retain_grad()  # an argument (a leaf: it changes nothing)
    z = x @ W
    z.retain_grad()  # what h is made from
    h = torch.tanh(z)
    kept = h.clone()
    kept.retain_grad()  # a copy made from h
    out = h * 2
    out.retain_grad()
    out.retain_grad()  # the same tensor again: one entry
    (out ** 2).sum().backward()
    return h, out

def many_retains(x):
    for _ in range(100):
        (x * 2).retain_grad()

def hides(x):
    # a student's own mode, and one that pops the grader's off the stack
    torch._C._pop_torch_function_stack()
    return x * 2
"""


@pytest.fixture
def student(tmp_path):
    (tmp_path / "graph.py").write_text(STUDENT)
    traces = Submissions(
        lambda module, on_trace=None, numpy_only=False: Submission(
            InlineExecutor(), tmp_path, module, 10.0, on_trace=on_trace
        )
    )
    return traces


def test_backward_calls_with_their_flags(student):
    x, w = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    student("graph").by_hand(x, w)
    assert student.trace.calls == () and student.trace.nodes == (
        "MulBackward0",
        "AddBackward0",
        "AddBackward0",
        "AddBackward0",
    )
    student("graph").with_backward(x, w)
    first, second = student.trace.backward_calls
    assert (first.retain_graph, first.keeps_graph, second.retain_graph, second.keeps_graph) == (True, True, None, False)
    assert student.trace.nodes == ("AddBackward0", "AddBackward0", "MulBackward0", "SumBackward0")
    student("graph").with_grad(x)
    (call,) = student.trace.grad_calls
    assert call.create_graph and call.keeps_graph and call.inputs == 1 and not call.gradient
    student("graph").vector(x)
    (call,) = student.trace.backward_calls
    assert call.gradient and call.outputs == 1
    assert len(student.traces) == 4


def test_grad_mode_detach_and_created_tensors(student):
    student("graph").frozen(torch.randn(2), torch.randn(2, requires_grad=True))
    trace = student.trace
    assert [op.name for op in trace.ops_without_grad] == ["mul"]
    assert trace.count("detach") == 1 and trace.tensors_created == 1
    assert trace.grad_mode_end


def test_a_backward_that_raised_is_recorded_as_raised(student):
    student("graph").twice_fails.capture(torch.randn(2, requires_grad=True))
    first, second = student.trace.backward_calls
    assert first.raised == "" and second.raised == "RuntimeError"


def test_each_call_says_what_it_added_to_the_functions_leaves(student):
    x, w = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    student("graph").with_backward(x, w)
    first, second = student.trace.backward_calls
    # y = ((x + w) * (w + 1)).sum(): each call adds dy/dx = w + 1 and dy/dw = 2w + x + 1.
    # The second call's addition is read as .grad after less .grad before, so it
    # carries the rounding of the sum: near zero that is beyond allclose's default
    # relative tolerance (the grader allows the same slack, provenance._slack)
    near = {"rtol": 1e-5, "atol": 1e-5}
    for call in (first, second):
        assert torch.allclose(call.added[0], w.detach() + 1, **near)
        assert torch.allclose(call.added[1], (2 * w + x + 1).detach(), **near)
    student("graph").with_grad(x)
    (call,) = student.trace.grad_calls
    assert torch.allclose(call.added[0], 3 * x.detach() ** 2)  # what autograd.grad returned for x
    student("graph").vector(torch.randn(2, requires_grad=True))
    assert torch.equal(student.trace.backward_calls[0].added[0], torch.full((2,), 3.0))


def test_a_raising_call_says_whether_an_earlier_call_freed_its_graph(student):
    error = student("graph").twice_fails.capture(torch.randn(2, requires_grad=True))
    first, second = student.trace.backward_calls
    assert second.raised == "RuntimeError" and second.through_freed is True
    (raised,) = student.trace.errors
    assert (raised.op, raised.type, raised.call, raised.own_code) == ("backward", "RuntimeError", 1, False)
    assert error.raised_at == 0 and error.trace is not None and error.trace.errors == student.trace.errors


def test_what_calls_added_and_raised_stays_bounded(student):
    from pytest_autograd_grader.boundary.call_facts import MAX_ADDED, MAX_ERRORS

    student("graph").many_backward(torch.randn(4000, requires_grad=True))
    added = [call.added[0] for call in student.trace.backward_calls]
    assert len(added) == 60 and added[0] is not None and added[-1] is None
    assert sum(a.numel() for a in added if a is not None) <= MAX_ADDED
    student("graph").many_errors(torch.randn(3, requires_grad=True))
    assert len(student.trace.errors) == MAX_ERRORS and student.trace.errors[0].leaf
    assert student.trace.errors[0].op == "add_" and student.trace.errors[0].call == -1


def test_the_trace_says_which_tensors_retain_grad_was_called_on(student):
    from pytest_autograd_grader.boundary.call_facts import MAX_RETAINED, Retained

    student("graph").retains(torch.randn(2, 3, requires_grad=True), torch.randn(3, 2, requires_grad=True))
    assert student.trace.retained == (
        Retained(arg=0),
        Retained(node="MmBackward0", feeds=0),
        Retained(node="CloneBackward0", source=0),
        Retained(returned=1, node="MulBackward0", source=0),
    )
    student("graph").many_retains(torch.randn(2, requires_grad=True))
    assert len(student.trace.retained) == MAX_RETAINED


def test_what_retain_grad_concerned_is_read_one_level_deep():
    from pytest_autograd_grader.boundary.call_facts import Facts

    facts = Facts()
    h = torch.randn(2, requires_grad=True) * 2
    facts.retain((h,))
    nest = [h]
    for _ in range(12):
        nest = [nest] * 64  # 64 ** 12 paths to h: a walk would never end
    assert facts.retained_on((h, nest)) == [
        {"arg": -1, "returned": 0, "node": "MulBackward0", "source": -1, "feeds": -1}
    ]


def test_student_code_that_pops_the_recorder_leaves_torch_as_it_was(student):
    depth = torch._C._len_torch_function_stack()
    student("graph").hides(torch.randn(2))
    assert torch._C._len_torch_function_stack() == depth
    student("graph").with_grad(torch.randn(2, requires_grad=True))
    assert len(student.trace.grad_calls) == 1


class Forged:
    def __init__(self, trace):
        self.trace = trace

    def run(self, *args):
        return dumps({"stage": "ok", "value": 1, "output": "", "trace": self.trace})

    def close(self):
        pass


@pytest.mark.parametrize(
    "trace",
    [
        "not a dict",
        {"ops": ["mul", 1]},
        {"ops": "mul\t2\t"},
        {"calls": [{"kind": "explode"}]},
        {"calls": [{"kind": "grad", "retain_graph": "yes"}]},
        {"dropped": "many"},
        {"calls": [{"kind": "grad", "added": ["w"]}]},
        {"calls": [{"kind": "grad", "added": [__import__("torch").ones(2, dtype=__import__("torch").long)]}]},
        {"calls": [{"kind": "grad", "through_freed": 1}]},
        {"errors": [{"op": 1, "type": "RuntimeError"}]},
        {"errors": {"op": "backward"}},
        {"retained": "all"},
        {"retained": [{"arg": "x"}]},
        {"retained": [{"feeds": 10**9}]},
        {"retained": [{"node": 7}]},
    ],
)
def test_a_forged_trace_fails_the_students_check(tmp_path, trace):
    from pytest_autograd_grader.outcomes import StudentFailure

    proxy = Submission(Forged(trace), tmp_path, "graph", 10.0)
    with pytest.raises(StudentFailure) as failure:
        proxy.f()
    assert failure.value.grade_status == "failed"
    assert "could not be read" in failure.value.feedback


CHECKS = """
import pytest

pytestmark = pytest.mark.grade(concept="graph")

def test_by_hand(submission, autograd, grade_rng):
    x, w = grade_rng.randn(3, requires_grad=True), grade_rng.randn(3, requires_grad=True)
    got = submission("graph").{function}(x, w)
    autograd.require(not submission.trace.calls, "derive the gradients by hand: your code called backward "
                     + str(len(submission.trace.calls)) + " times")
"""


@pytest.mark.parametrize("function, status", [("by_hand", "passed"), ("with_backward", "failed")])
def test_the_trace_crosses_the_sandbox(pytester, function, status):
    graded = grade_checks(pytester, CHECKS.replace("{function}", function), graph=STUDENT)
    check = graded.check("test_by_hand")
    assert check["status"] == status
    if status == "failed":
        assert check["feedback"].endswith("derive the gradients by hand: your code called backward 2 times")


# "By hand" (no backward call) while calling backward, hiding it from the
# recording the cheap ways; the values are right each time.
ENGINE_ARGS = "(y,), (torch.ones(()),), False, False, (), True, True"
HIDE = {
    "popped": ("mode_removed", "torch._C._pop_torch_function_stack()  # the grader's recorder"),
    "replaced_backward": (
        "entry_points",
        "real = torch.Tensor.backward\n"
        "    torch.Tensor.backward = lambda self, *args, **kwargs: real(self, *args, **kwargs)",
    ),
    "patched_recorder": (
        "recorder_patched",
        "recorder = type(torch._C._get_function_stack_at(0))\n"
        "    recorder._call = lambda self, func, args, kwargs, kind, name, enabled: "
        "func(*args, **kwargs)",
    ),
    "torch_function_off": ("engine_unseen", "with torch._C.DisableTorchFunction():\n        y.backward()"),
    "popped_for_a_moment": (
        "engine_unseen",
        "from torch.overrides import _pop_mode_temporarily\n    with _pop_mode_temporarily():\n        y.backward()",
    ),
    "another_thread": (
        "engine_unseen",
        "import threading\n    t = threading.Thread(target=y.backward)\n    t.start()\n    t.join()",
    ),
    "engine_called": (
        "engine_unseen",
        f"from torch.autograd import Variable\n    Variable._execution_engine.run_backward({ENGINE_ARGS})",
    ),
    "new_engine": ("engine_unseen", f"torch._C._ImperativeEngine().run_backward({ENGINE_ARGS})"),
}
FORGERIES = {
    name: f"""
def hand_gradients(x, w):
    import torch
    w = w.detach().requires_grad_(True)
    x = x.detach().requires_grad_(True)
    y = ((x + w) * (w + 1)).sum()
    {hide if how == "engine_unseen" else hide + chr(10) + "    y.backward()"}
    return w.grad, x.grad
"""
    for name, (how, hide) in HIDE.items()
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_hiding_calls_from_the_recording_breaks_the_instruction(grade_topics, name):
    from conftest import instruction_only, solution_with_all

    graded = grade_topics(["graph"], modules={"graph": solution_with_all("graph", {"hand_gradients": FORGERIES[name]})})
    check = graded.check("test_hand_gradients[cpu]")
    # the values are right and keep their points; the instruction the
    # hidden call would break cannot be verified, so its share is lost
    assert check["status"] == "failed" and check["score"] == instruction_only(3), check
    assert msg(f"trace.tampered.{HIDE[name][0]}") in check["feedback"], check["feedback"]
    assert check["instruction"]["followed"] is False
    # the other checks of the module are graded as usual, unless the change
    # outlives the call (torch's backward replaced for the worker's later calls)
    others = [c for c in graded.report["checks"] if "hand_gradients" not in c["id"]]
    if name != "replaced_backward":
        assert all(c["status"] == "passed" for c in others), others


MODE_CHECKS = """
import pytest
import torch

NAMES = {names!r}


@pytest.mark.grade(concept="graph", points=4, instruction_share=0.25)
@pytest.mark.parametrize("name", NAMES)
def test_by_hand(submission, autograd, name):
    x = torch.tensor([1.0, -2.0], dtype=torch.float64)
    w = torch.tensor([0.5, 3.0], dtype=torch.float64)
    got = getattr(submission("forge"), name)(x, w)
    calls = len(submission.trace.calls)
    autograd.instruction(calls == 0, "req.graph.by_hand", count=calls)
    dy_dw, dy_dx = autograd.unpack(got, 2, "(dy_dw, dy_dx)")
    autograd.assert_close(dy_dw, 2 * w + x + 1, "dy/dw")
    autograd.assert_close(dy_dx, w + 1, "dy/dx")


@pytest.mark.grade(concept="retain_graph", points=4)
def test_made_up_error(submission, autograd):
    autograd.expect_error("backward_twice", submission("forge").made_up_error)
"""
MADE_UP_ERROR = """
def made_up_error():
    raise RuntimeError("Trying to backward through the graph a second time (or directly access saved tensors "
                       "after they have already been freed). Saved intermediate values of the graph are freed "
                       "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
                       "backward through the graph a second time or if you need to access saved tensors after "
                       "calling backward.")
"""


@pytest.mark.parametrize("mode", ["bwrap", "user", "process"])
def test_every_way_of_hiding_a_call_costs_the_instruction_in_every_mode(pytester, mode):
    from test_isolation import require_isolation

    require_isolation(mode)
    # torch's backward replaced outlives its call: last, so it taints no other check
    names = sorted(set(HIDE) - {"replaced_backward"}) + ["replaced_backward"]
    module = "\n".join(FORGERIES[name].replace("def hand_gradients(", f"def {name}(") for name in names)
    module += MADE_UP_ERROR
    graded = grade_checks(pytester, MODE_CHECKS.format(names=names), f"--grade-isolation={mode}", forge=module)
    assert graded.report["isolation"] == mode
    for name in names:
        check = graded.check(f"test_by_hand[{name}]")
        assert (check["status"], check["score"]) == ("failed", 3.0), (name, check)
        assert msg(f"trace.tampered.{HIDE[name][0]}") in check["feedback"], (name, check["feedback"])
    # PyTorch's very words, raised by the student's own code: no points
    made_up = graded.check("test_made_up_error")
    assert (made_up["status"], made_up["score"]) == ("failed", 0.0), made_up
    assert "this RuntimeError was raised by your own code, not by PyTorch" in made_up["feedback"]

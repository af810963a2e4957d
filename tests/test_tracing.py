"""submission.trace: how a student's answer was computed, seen by the grader."""

import pytest
import torch
from conftest import grade_checks

from pytest_autograd_grader.boundary.submission import InlineExecutor, Submission, Submissions
from pytest_autograd_grader.boundary.wire import dumps

STUDENT = '''
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

def hides(x):
    # a student's own mode, and one that pops the grader's off the stack
    torch._C._pop_torch_function_stack()
    return x * 2
'''


@pytest.fixture
def student(tmp_path):
    (tmp_path / "graph.py").write_text(STUDENT)
    traces = Submissions(lambda module, on_trace=None, numpy_only=False: Submission(
        InlineExecutor(), tmp_path, module, 10.0, on_trace=on_trace))
    return traces


def test_backward_calls_with_their_flags(student):
    x, w = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    student("graph").by_hand(x, w)
    assert student.trace.calls == () and student.trace.nodes == ("MulBackward0", "AddBackward0", "AddBackward0",
                                                                 "AddBackward0")
    student("graph").with_backward(x, w)
    first, second = student.trace.backward_calls
    assert (first.retain_graph, first.keeps_graph, second.retain_graph, second.keeps_graph) == (True, True, None, False)
    assert student.trace.nodes == ("AddBackward0", "AddBackward0", "MulBackward0", "SumBackward0")
    student("graph").with_grad(x)
    call, = student.trace.grad_calls
    assert call.create_graph and call.keeps_graph and call.inputs == 1 and not call.gradient
    student("graph").vector(x)
    call, = student.trace.backward_calls
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


@pytest.mark.parametrize("trace", [
    "not a dict", {"ops": ["mul", 1]}, {"ops": "mul\t2\t"}, {"calls": [{"kind": "explode"}]},
    {"calls": [{"kind": "grad", "retain_graph": "yes"}]}, {"dropped": "many"},
])
def test_a_forged_trace_fails_the_students_check(tmp_path, trace):
    from pytest_autograd_grader.outcomes import StudentFailure

    proxy = Submission(Forged(trace), tmp_path, "graph", 10.0)
    with pytest.raises(StudentFailure) as failure:
        proxy.f()
    assert failure.value.grade_status == "failed"
    assert "could not be read" in failure.value.feedback


CHECKS = '''
import pytest

pytestmark = pytest.mark.grade(concept="graph")

def test_by_hand(submission, autograd, grade_rng):
    x, w = grade_rng.randn(3, requires_grad=True), grade_rng.randn(3, requires_grad=True)
    got = submission("graph").{function}(x, w)
    autograd.require(not submission.trace.calls, "derive the gradients by hand: your code called backward "
                     + str(len(submission.trace.calls)) + " times")
'''


@pytest.mark.parametrize("function, status", [("by_hand", "passed"), ("with_backward", "failed")])
def test_the_trace_crosses_the_sandbox(pytester, function, status):
    graded = grade_checks(pytester, CHECKS.replace("{function}", function), graph=STUDENT)
    check = graded.check("test_by_hand")
    assert check["status"] == status
    if status == "failed":
        assert check["feedback"].endswith("derive the gradients by hand: your code called backward 2 times")


# "By hand" (no backward call) while calling backward, hiding it from the
# recording three cheap ways; the values are right each time.
HIDE = {
    "mode_removed": "torch._C._pop_torch_function_stack()  # the grader's recorder",
    "entry_points": "real = torch.Tensor.backward\n"
                    "    torch.Tensor.backward = lambda self, *args, **kwargs: real(self, *args, **kwargs)",
    "recorder_patched": "recorder = type(torch._C._get_function_stack_at(0))\n"
                        "    recorder._call = lambda self, func, args, kwargs, kind, name, enabled: func(*args, **kwargs)",
}
FORGERIES = {how: f"""
def hand_gradients(x, w):
    import torch
    {hide}
    w = w.detach().requires_grad_(True)
    x = x.detach().requires_grad_(True)
    ((x + w) * (w + 1)).sum().backward()
    return w.grad, x.grad
""" for how, hide in HIDE.items()}


@pytest.mark.parametrize("how", sorted(FORGERIES))
def test_hiding_calls_from_the_recording_fails_the_instruction(grade_topics, how):
    from conftest import solution_with_all

    from pytest_autograd_grader.i18n import msg

    graded = grade_topics(["graph"], modules={"graph": solution_with_all("graph", {"hand_gradients": FORGERIES[how]})})
    check = graded.check("test_hand_gradients[cpu]")
    assert check["status"] == "failed" and check["score"] == 0, check
    assert msg(f"trace.tampered.{how}") in check["feedback"], check["feedback"]
    # the other checks of the module are graded as usual, unless the change
    # outlives the call (torch's backward replaced for the worker's later calls)
    others = [c for c in graded.report["checks"] if "hand_gradients" not in c["id"]]
    if how != "entry_points":
        assert all(c["status"] == "passed" for c in others), others

"""The grader-worker protocol (``protocol.py``): one vocabulary both sides
use, the same bytes on the wire as before, and a word only one side knows
caught here rather than shown to a student as a crash."""

from __future__ import annotations

import ast
import json
import warnings
from pathlib import Path

import pytest

import pytest_autograd_grader
from pytest_autograd_grader.boundary.failures import HANDLERS, failure_from
from pytest_autograd_grader.boundary.records import Limits
from pytest_autograd_grader.boundary.wire import dumps, loads
from pytest_autograd_grader.protocol import (
    NOT_PASSED,
    STUDENT_FAILED,
    Acknowledged,
    CallHeader,
    CallReply,
    Op,
    ProtocolError,
    ProtocolWarning,
    Ready,
    Refusal,
    SpawnReply,
    SpawnRequest,
    Stage,
    Status,
    StudentStatus,
)
from pytest_autograd_grader.scoring import CheckResult

PACKAGE = Path(pytest_autograd_grader.__file__).resolve().parent
# the words on the wire before the protocol had a module: a worker of
# another build reads and writes these
WIRE_STAGES = {
    "ok",
    "missing",
    "empty",
    "notebook",
    "import_timeout",
    "syntax",
    "import",
    "no_function",
    "raised",
    "exit",
    "interrupt",
    "memory",
    "too_large",
    "request",
    "unstageable",
    "timeout",
    "crashed",
}
# DESIGN.md section 4
REPORT_STATUSES = {"passed", "failed", "error", "timeout", "crashed", "skipped"}


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        if "i18n" not in path.parts:
            yield path.relative_to(PACKAGE), ast.parse(path.read_text(encoding="utf-8"))


def _is_stage_key(node: ast.AST) -> bool:
    """``"stage"`` as a dict key, ``x["stage"]``, ``x.get("stage")`` or a name ``stage``."""
    if isinstance(node, ast.Constant):
        return node.value == "stage"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "stage"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "stage"
    return isinstance(node, ast.Name) and node.id == "stage"


def _stage_values():
    """(where, node) for every value a stage is given or compared with in the package."""
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if key is not None and _is_stage_key(key):
                        yield f"{path}:{value.lineno}", value
            elif (
                isinstance(node, ast.Assign)
                and any(_is_stage_key(t) for t in node.targets)
                and not isinstance(node.value, (ast.Call, ast.Subscript, ast.IfExp, ast.Name))
            ):
                yield f"{path}:{node.lineno}", node.value
            elif isinstance(node, ast.Compare) and _is_stage_key(node.left):
                for right in node.comparators:
                    for value in right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]:
                        yield f"{path}:{value.lineno}", value


def test_the_wire_keeps_its_words():
    assert {stage.value for stage in Stage} == WIRE_STAGES
    assert {status.value for status in Status} == REPORT_STATUSES
    answer = loads(dumps({"stage": Stage.IMPORT_TIMEOUT, "seconds": 1}), Limits())
    assert answer == {"stage": "import_timeout", "seconds": 1} and type(answer["stage"]) is str


def test_every_stage_but_ok_has_a_handler():
    assert set(HANDLERS) == set(Stage) - {Stage.OK}


def test_every_stage_the_package_produces_or_reads_is_a_member():
    found = list(_stage_values())
    assert len(found) > 40  # the scan sees the producers and readers (it would pass on nothing otherwise)
    bare = [where for where, value in found if isinstance(value, ast.Constant) and value.value is not None]
    assert not bare, f"a stage written as a string, not a Stage member: {bare}"
    for where, value in found:
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "Stage":
            assert value.attr in Stage.__members__, where


def test_the_producers_stages_reach_a_handler():
    # each file that answers for the worker or the sandbox names its stages by member
    named = {
        value.attr
        for _, value in _stage_values()
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "Stage"
    }
    assert named <= set(Stage.__members__)
    assert {Stage[name] for name in named} - {Stage.OK} <= set(HANDLERS)


def test_an_unknown_stage_is_a_crash_for_the_student_and_loud_here():
    outcome = {"stage": "stage_from_the_future", "module": "leaf", "function": "f"}
    with pytest.raises(ProtocolWarning, match="stage_from_the_future"):
        failure_from(outcome)  # the suite's filterwarnings (conftest.py)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProtocolWarning)  # as a grading run without the suite's filter
        failure = failure_from(outcome)
    assert failure.grade_status == "crashed"
    assert "unexpected answer 'stage_from_the_future'" in failure.feedback


@pytest.mark.parametrize("stage", ["::error::forged\nline", "x" * 200, ["stage"], "étape"])
def test_the_warning_for_an_unknown_stage_quotes_no_text_a_worker_chose(stage):
    # pytest's warnings summary prints the warning as it is, unredacted
    with pytest.warns(ProtocolWarning) as caught, warnings.catch_warnings():
        warnings.simplefilter("always", ProtocolWarning)
        failure_from({"stage": stage})
    said = str(caught[0].message)
    assert said == f"unknown stage: a {type(stage).__name__}"


@pytest.mark.parametrize("stage", [["ok"], 7, None, {"$": "x"}, "OK", "Stage.OK"])
def test_what_a_hostile_worker_sends_as_a_stage_is_a_crash(stage):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProtocolWarning)
        failure = failure_from({"stage": stage})
    assert failure.grade_status == "crashed" and "unexpected answer" in failure.feedback


def _request(**changes) -> SpawnRequest:
    fields = dict(
        directory="/run/grader/stage/1",
        private=None,
        memory_mb=4096,
        tmp_mb=1024,
        uid=None,
        numpy_only=False,
        tasks=3,
        cuda=False,
        no_torch=None,
        cover=("/run/grader/stage",),
        cpus=(0, 1),
    )
    return SpawnRequest(**{**fields, **changes})


def test_a_spawn_request_crosses_as_the_same_json():
    request = _request()
    wire = json.loads(json.dumps(request.to_wire()))
    assert wire == {
        "op": "spawn",
        "directory": "/run/grader/stage/1",
        "private": None,
        "memory_mb": 4096,
        "tmp_mb": 1024,
        "uid": None,
        "numpy_only": False,
        "tasks": 3,
        "cuda": False,
        "no_torch": None,
        "cover": ["/run/grader/stage"],
        "cpus": [0, 1],
    }
    assert SpawnRequest.from_wire(wire) == request


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda w: {**w, "shell": "rm -rf /"}, "unknown keys ['shell']"),
        (lambda w: {k: v for k, v in w.items() if k != "memory_mb"}, "missing keys ['memory_mb']"),
        (lambda w: {**w, "cover": "/"}, "cover must be a list"),
        (lambda w: ["spawn"], "must be a JSON object"),
    ],
)
def test_a_spawn_request_in_another_form_is_refused(change, problem):
    with pytest.raises(ProtocolError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        SpawnRequest.from_wire(change(_request().to_wire()))


def test_a_spawn_reply_is_read_or_refused():
    assert SpawnReply.from_wire({"pid": 12, "pidns": True, "fenced": False}) == SpawnReply(12, True, False)
    for reply in ({"error": "the keeper did not start"}, {"pid": "12", "pidns": True, "fenced": True}):
        with pytest.raises(ProtocolError):
            SpawnReply.from_wire(reply)


def test_the_answers_cross_as_the_same_json():
    # the bytes the worker and the zygote sent before the answers had classes
    assert json.dumps(Ready().to_wire()) == '{"ready": true}'
    assert json.dumps(CallReply(seq=7).to_wire()) == '{"seq": 7}'
    assert json.dumps(Acknowledged().to_wire()) == '{"ok": true}'
    assert json.dumps(Refusal("bad request").to_wire()) == '{"error": "bad request"}'
    for answer in (Ready(), CallReply(seq=7), Acknowledged(), Refusal("bad request")):
        assert type(answer).from_wire(json.loads(json.dumps(answer.to_wire()))) == answer


@pytest.mark.parametrize(
    "cls, wire",
    [
        # what student code in the worker might write on its socket instead
        (CallReply, {"seq": "7"}),
        (CallReply, {"seq": True}),
        (CallReply, {"seq": 7.0}),
        (CallReply, {}),
        (CallReply, {"seq": 7, "stage": "ok"}),
        (CallReply, [7]),
        (CallReply, None),
        (Ready, {"ready": 1}),
        (Ready, {"ready": True, "pid": 1}),
        (Ready, {}),
        (Acknowledged, {"ok": False}),
        (Refusal, {"error": ["x"]}),
        (Refusal, {"ok": True}),
    ],
)
def test_an_answer_in_another_form_is_refused(cls, wire):
    with pytest.raises(ProtocolError):
        cls.from_wire(wire)


def test_a_status_is_its_string_everywhere():
    assert json.dumps([Status.PASSED, Status.CRASHED]) == '["passed", "crashed"]'
    assert json.dumps({"s": Status.TIMEOUT}, indent=1) == '{\n "s": "timeout"\n}'
    assert f"github.status.{Status.ERROR}" == "github.status.error" and str(Status.SKIPPED) == "skipped"
    assert {"failed": 1}[Status.FAILED] == 1 and {Status.FAILED: 1}["failed"] == 1
    assert set(STUDENT_FAILED) < set(NOT_PASSED) < set(Status)


def test_a_report_writes_the_status_as_a_plain_string():
    result = CheckResult(id="t::x", concept="leaf", score=0.0, max_score=1.0, status=Status.CRASHED)
    data = result.to_dict()
    # pytest-xdist's serializer takes plain strings only
    assert data["status"] == "crashed" and type(data["status"]) is str
    assert json.loads(json.dumps(data))["status"] == "crashed"
    assert CheckResult(id="t::y", concept="", score=0.0, max_score=0.0, status=None).to_dict()["status"] is None


def test_a_call_header_crosses_as_the_same_json():
    load = CallHeader(Op.LOAD, "leaf", "", seconds=2.5, seq=3)
    assert json.dumps(load.to_wire()) == '{"op": "load", "module": "leaf", "function": "", "seconds": 2.5, "seq": 3}'
    call = CallHeader(Op.CALL, "leaf", "f", seq=4)
    assert json.dumps(call.to_wire()) == '{"op": "call", "module": "leaf", "function": "f", "seq": 4}'
    for header in (load, call):
        assert CallHeader.from_wire(json.loads(json.dumps(header.to_wire()))) == header
    for wrong in ({**call.to_wire(), "op": "exec"}, {**call.to_wire(), "env": {}}, {"op": "call"}):
        with pytest.raises(ProtocolError):
            CallHeader.from_wire(wrong)


class _Answers:
    """An executor whose worker answers with the outcome it is given."""

    last_run_seconds = 0.0

    def __init__(self, outcome: dict):
        self.outcome = outcome

    def run(self, directory, module, function, payload, op, timeout) -> bytes:
        return dumps(self.outcome)

    def close(self) -> None:
        pass


def test_a_check_meeting_an_unknown_stage_fails_loudly_in_this_suite(tmp_path):
    from pytest_autograd_grader.boundary.submission import Submission
    from pytest_autograd_grader.outcomes import StudentFailure

    proxy = Submission(_Answers({"stage": "from_a_newer_worker"}), tmp_path, "leaf", 10.0)
    with pytest.raises(StudentFailure) as failure:
        proxy.find_leaves()
    # here: the warning made an error, which names itself (and quotes nothing of the worker's)
    assert failure.value.grade_status == "failed"
    assert "it is not in the grader's format (ProtocolWarning)" in failure.value.feedback
    assert "from_a_newer_worker" not in failure.value.feedback
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProtocolWarning)
        with pytest.raises(StudentFailure) as failure:
            proxy.find_leaves()
    # for a student: the generic crash
    assert failure.value.grade_status == "crashed"
    assert "unexpected answer 'from_a_newer_worker'" in failure.value.feedback


@pytest.mark.parametrize("status", [None, "graded-by-me", ["passed"], {"passed": 1}, 3])
def test_a_status_read_back_that_names_no_status_is_unknown(status):
    # a report read back from a file (Gradescope's, a class's) may carry anything
    check = CheckResult(id="c", concept="leaf", score=0, max_score=1, status=status, feedback="")
    assert check.known_status() is None


def test_a_status_read_back_as_its_word_is_the_status():
    check = CheckResult(id="c", concept="leaf", score=0, max_score=1, status="crashed", feedback="")
    assert check.known_status() is Status.CRASHED


def test_a_students_status_is_its_word_in_the_report_and_the_outputs():
    # the class worker writes it, the gradebook and the class report read it back
    report = json.loads(json.dumps({"status": StudentStatus.NOT_ATTEMPTED}))
    assert report["status"] == "not attempted" and StudentStatus(report["status"]) is StudentStatus.NOT_ATTEMPTED
    assert {status.value for status in StudentStatus} == {"graded", "not attempted", "missing", "error"}

"""Answers from student code are read under ``records.Limits``: an answer too
big, too deep, with a forged tensor, or bytes that are not an answer at all
fail the student's own check quickly, with feedback that repeats none of the
answer, and grading goes on."""

from __future__ import annotations

import pytest
from conftest import grade_checks

# A student module can reach the grader's code inside its own process. The
# answers below are sent by patching wire.dumps for one answer, the way a
# student would, so the grader gets exactly these bytes.
ANSWERS = """
    import json
    import struct

    import torch

    import pytest_autograd_grader.boundary.wire as wire

    def _send(raw):
        real = wire.dumps
        def once(tree):
            wire.dumps = real
            return raw
        wire.dumps = once

    def _framed(header, body=b""):
        text = header if isinstance(header, bytes) else json.dumps(header).encode()
        return struct.pack("!I", len(text)) + text + body

    def _answer(value, tensors=(), body=b""):
        return _framed({"tree": {"stage": "ok", "value": value, "output": ""}, "tensors": list(tensors)}, body)

    # -- too much, honestly returned
    def millions():
        return [0] * 3_000_000

    def too_big():
        return torch.zeros(3_000_000)

    def huge_string():
        return "x" * 200_000

    def huge_key():
        return {"k" * 200_000: 1}

    def meta():
        return torch.empty(2, 3, device="meta")

    # -- forged
    def forged_millions():
        _send(_framed(b'{"tree": {"stage": "ok", "value": {"$": "list", "items": [' + b"0," * 1_500_000
                      + b'0]}, "output": ""}, "tensors": []}'))

    def forged_deep_brackets():
        _send(_framed(b'{"tree": {"stage": "ok", "value": ' + b"[" * 20_000 + b"]" * 20_000 + b'}, "tensors": []}'))

    def forged_deep_records():
        value = 1
        for _ in range(40):
            value = {"$": "list", "items": [value]}
        _send(_answer(value))

    def forged_shape():
        _send(_answer({"$tensor": 0}, [["float32", [10**6, 10**6], "cpu", 4]], b"\\0" * 4))

    def forged_dims():
        _send(_answer({"$tensor": 0}, [["float32", [1] * 200, "cpu", 4]], b"\\0" * 4))

    def forged_device():
        _send(_answer({"$tensor": 0}, [["float32", [1], "Trying to backward", 4]], b"\\0" * 4))

    def garbage():
        _send(b"\\x00\\x00\\x00\\x0cnot JSON at all")

    def a_pickle():
        _send(b"\\x80\\x04K\\x01.")

    def wrong_length():
        _send(b"\\x00\\x01\\x00\\x00{}")

    def missing_keys():
        _send(_framed({"tree": {"stage": "raised", "error": {"$": "error"}}, "tensors": []}))

    def wrong_types():
        _send(_framed({"tree": {"stage": "raised", "error": {"$": "error", "type": ["SECRET"], "message": 7,
                                "file": "", "line": "3", "code": ""}}, "tensors": []}))

    def no_value():
        _send(_framed({"tree": {"stage": "ok"}, "tensors": []}))

    def not_a_dict():
        _send(_framed({"tree": ["SECRET", 1], "tensors": []}))

    def bad_size():
        _send(_framed({"tree": {"stage": "too_large", "size": "SECRET", "limit": 1}, "tensors": []}))

    def bad_syntax_stage():
        _send(_framed({"tree": {"stage": "syntax", "file": ["SECRET"]}, "tensors": []}))

    def bad_record():
        _send(_answer({"$": "tensor", "data": "SECRET", "grad": None}))

    def good():
        return [1, 2.5, "ok"]
"""

# name -> what the feedback says after "could not be read: "
REFUSED = {
    "millions": "it holds at least 100001 values; at most 100000 are accepted",
    "huge_string": "it holds a text of 200000 characters; at most 100000 are accepted",
    "huge_key": "it holds a text of 200000 characters; at most 100000 are accepted",
    "meta": "it holds a tensor on a device other than cpu or cuda",
    "forged_millions": "it holds at least 100001 values; at most 100000 are accepted",
    "forged_deep_brackets": "it is nested at least 73 levels deep; at most 72 levels are accepted",
    "forged_deep_records": "it is nested at least 73 levels deep; at most 72 levels are accepted",
    "forged_shape": "it holds a tensor that declares 4 bytes where its shape and dtype need 4000000000000",
    "forged_dims": "it holds a tensor with 200 dimensions; at most 16 are accepted",
    "forged_device": "it holds a tensor on a device other than cpu or cuda",
    "garbage": "it is not in the grader's format (JSONDecodeError)",
    "a_pickle": "its JSON part is 2147764993 bytes long; at most 4194304 bytes are accepted",
    "wrong_length": "it announces 65536 bytes of JSON but holds only 2",
    "missing_keys": "it is not in the grader's format (KeyError)",
    "wrong_types": "its field line has type str",
    "no_value": "it is not in the grader's format (KeyError)",
    "not_a_dict": "it is not in the grader's format (outcome)",
    "bad_size": "it is not in the grader's format (TypeError)",
    "bad_syntax_stage": "it is not in the grader's format (TypeError)",
    "bad_record": "its field data has type str",
}

CHECKS = f"""
    import pytest

    pytestmark = pytest.mark.grade(concept="leaf", points=1)

    def test_warm_up(submission, autograd):  # starts the worker, so the durations below are the answers'
        autograd.assert_equal(submission("answers").good(), [1, 2.5, "ok"], "good")

    @pytest.mark.parametrize("name", {list(REFUSED) + ["too_big"]!r})
    def test_refused(submission, autograd, name):
        got = getattr(submission("answers"), name)()
        autograd.assert_equal(got, "never reached", "the answer")

    def test_good_after_all_that(submission, autograd):
        autograd.assert_equal(submission("answers").good(), [1, 2.5, "ok"], "good")

    def test_other_module(submission, autograd):
        autograd.assert_equal(submission("other").f(), 3, "f")
"""


@pytest.mark.parametrize("mode", ["sandbox", "inline"])
def test_answers_beyond_the_limits_fail_only_their_check(pytester, mode):
    args = ("--grade-inline",) if mode == "inline" else ()
    graded = grade_checks(pytester, CHECKS, *args, answers=ANSWERS, other="def f():\n    return 3\n")
    for name, reason in REFUSED.items():
        check = graded.check(f"test_refused[{name}]")
        assert check["status"] == "failed" and check["score"] == 0, check
        feedback = check["feedback"]
        assert feedback.startswith(f"[Leaf tensors] the answer of answers.{name} could not be read: "), feedback
        assert reason in feedback, (name, feedback)
        assert "SECRET" not in feedback and "Trying to" not in feedback, feedback  # nothing from the answer
    too_big = graded.check("test_refused[too_big]")
    assert too_big["status"] == "failed", too_big
    assert (
        "answers.too_big returned 11.4 MB of data; at most 8 MB is accepted: return smaller values"
        in too_big["feedback"]
    ), too_big
    assert graded.check("test_good_after_all_that")["status"] == "passed"
    assert graded.check("test_other_module")["status"] == "passed"
    assert graded.report["score"] == 3 and graded.report["complete"] is True
    # (A 48 MB answer of small items used to take ~40 s to refuse. No
    # wall-clock bound holds that here: on a loaded CI machine 5 s went by
    # for a check that refuses at once.)

"""The wire format between student code and the grader: whatever arrives
is rebuilt from JSON and raw bytes into builtins and plain tensors only."""

from __future__ import annotations

import json
import struct

import pytest
import torch

from pytest_autograd_grader.boundary.records import BoundaryError
from pytest_autograd_grader.boundary.wire import dumps, loads


@pytest.mark.parametrize(
    "tensor",
    [
        torch.randn(3, 4, dtype=torch.float64),
        torch.randn(2, 3).t(),  # not contiguous
        torch.tensor([1.0, float("nan"), float("inf")]),
        torch.ones(2, dtype=torch.bfloat16),
        torch.tensor([True, False]),
        torch.arange(6, dtype=torch.int64).reshape(2, 3),
        torch.empty(0, 3),
        torch.tensor(2.5),
        torch.randn(2, dtype=torch.complex64).conj(),
        torch.randn(2, dtype=torch.complex64).conj().imag,  # a negative view
        torch.randn(3, 1).expand(3, 4),  # stride 0
        torch.randn(5, 4)[1:4:2, 1:],  # offset and steps into its storage
        torch.randn(3, dtype=torch.float16, requires_grad=True),
    ],
)
def test_tensors_round_trip_as_plain_tensors(tensor):
    back = loads(dumps({"t": tensor, "meta": [1, 2.5, "s", None, True]}))
    assert type(back["t"]) is torch.Tensor
    assert back["t"].dtype == tensor.dtype and back["t"].shape == tensor.shape
    assert torch.equal(back["t"].nan_to_num(), tensor.resolve_conj().nan_to_num())
    assert back["meta"] == [1, 2.5, "s", None, True]


def test_tensor_bytes_are_the_elements_in_order_whatever_the_layout():
    # the common case takes a shortcut (numpy's bytes); it must write what
    # the general path writes, element by element in C order
    from pytest_autograd_grader.boundary.wire import _tensor_bytes

    for tensor in (
        torch.randn(2, 3).t(),
        torch.randn(3, 1).expand(3, 4),
        torch.arange(10)[::3],
        torch.tensor(1.5),
        torch.tensor([True, False]),
        torch.randn(2, dtype=torch.complex128),
    ):
        meta, raw = _tensor_bytes(tensor)
        assert raw == tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        assert meta == [str(tensor.dtype).removeprefix("torch."), list(tensor.shape), "cpu", len(raw)]


def test_meta_tensors_keep_their_device():
    back = loads(dumps([torch.empty(2, 3, device="meta")]))
    assert back[0].device.type == "meta" and back[0].shape == (2, 3)


def _doctored(header: dict | list | bytes, body: bytes = b"") -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("!I", len(raw)) + raw + body


@pytest.mark.parametrize(
    "payload, reason",
    [
        (_doctored({"tree": {"$tensor": 0}, "tensors": [["Tensor", [1], "cpu", 4]]}, b"\0" * 4), "unknown dtype"),
        (_doctored({"tree": {"$tensor": 0}, "tensors": [["float32", [4], "cpu", 4]]}, b"\0" * 4), "do not match"),
        (_doctored({"tree": {"$tensor": 0}, "tensors": [["float32", [1], "cpu", 4]]}), "do not match"),
        (
            _doctored({"tree": {"$tensor": 0}, "tensors": [["float32", [10**6, 10**6], "cpu", 4 * 10**12]]}),
            "do not match",
        ),
        (b"\x80\x04K\x01.", "refused"),  # a pickle
        (b"not our format", "refused"),
    ],
)
def test_doctored_payloads_are_refused(payload, reason):
    with pytest.raises(BoundaryError, match=reason):
        loads(payload)


# -- answers from student code are read under Limits --------------------------

from pytest_autograd_grader.boundary.decode import decode  # noqa: E402
from pytest_autograd_grader.boundary.encode import encode  # noqa: E402
from pytest_autograd_grader.boundary.records import Limits  # noqa: E402

LIMITS = Limits()


def _answer(value, tensors=(), body=b"") -> bytes:
    return _doctored({"tree": {"stage": "ok", "value": value}, "tensors": list(tensors)}, body)


def _nested_records(depth: int):
    value = 1
    for _ in range(depth):
        value = {"$": "list", "items": [value]}
    return value


@pytest.mark.parametrize(
    "payload, cap, text",
    [
        (b"\0" * (9 << 20), "max_bytes", "it is 9437184 bytes long; at most 8388608 bytes are accepted"),
        (struct.pack("!I", 5 << 20) + b"{}", "max_header", "its JSON part is 5242880 bytes long"),
        (struct.pack("!I", 100) + b"{}", "header_length", "it announces 100 bytes of JSON but holds only 2"),
        (b"ab", "malformed", "it is not in the grader's format"),
        (_answer([0] * 100_001), "max_items", "it holds at least 100001 values; at most 100000 are accepted"),
        (
            _doctored({"tree": 1, "tensors": [["float32", [0], "cpu", 0]] * 100_001}),
            "max_items",
            "at least 100001 values",
        ),
        (
            _doctored(b'{"tree": ' + b"[" * 100_000 + b"]" * 100_000 + b', "tensors": []}'),
            "max_depth",
            "it is nested at least 73 levels deep; at most 72 levels are accepted",
        ),
        (_answer(_nested_records(40)), "max_depth", "nested at least 73 levels deep"),
        (_answer("x" * 100_001), "max_string", "it holds a text of 100001 characters; at most 100000 are accepted"),
        (_answer({"k" * 100_001: 1}), "max_string", "a text of 100001 characters"),
        (
            _answer({"$tensor": 0}, [["float32", [10**6, 10**6], "cpu", 4]], b"\0" * 4),
            "tensor_bytes",
            "it holds a tensor that declares 4 bytes where its shape and dtype need 4000000000000",
        ),
        (
            _answer({"$tensor": 0}, [["float32", [10**40], "cpu", 4]], b"\0" * 4),
            "dim_size",
            "a dimension of size a 41-digit number; sizes from 0 to 8388608 are accepted",
        ),
        (_answer({"$tensor": 0}, [["float32", [-2, -2], "cpu", 16]], b"\0" * 16), "dim_size", "a dimension of size -2"),
        (
            _answer({"$tensor": 0}, [["float32", [1] * 17, "cpu", 4]], b"\0" * 4),
            "max_dims",
            "it holds a tensor with 17 dimensions; at most 16 are accepted",
        ),
        (
            _answer({"$tensor": 0}, [["float32", [4], "cpu", 16]], b"\0" * 4),
            "tensor_past_end",
            "it holds a tensor of 16 bytes where only 4 bytes are left",
        ),
        (
            _answer({"$tensor": 0}, [["float32", [1], "cpu", 4]], b"\0" * 6),
            "trailing",
            "it holds 2 bytes after its last tensor",
        ),
        (
            dumps({"stage": "ok", "value": torch.empty(2, 3, device="meta")}),
            "device",
            "a device other than cpu or cuda",
        ),
        (
            _answer({"$tensor": 0}, [["float32", [1], "forged device text", 4]], b"\0" * 4),
            "device",
            "other than cpu or cuda",
        ),
        (
            _answer({"$tensor": 0}, [["float8_e4m3fn", [1], "cpu", 1]], b"\0"),
            "dtype",
            "a dtype the grader does not compare",
        ),
        (_answer({"$tensor": 0}, [["float32", [1.0], "cpu", 4]], b"\0" * 4), "malformed", "(tensor table)"),
        (_answer({"$tensor": 7}), "malformed", "(tensor reference)"),
        (
            _answer({"$tensor": True, "x": 1}, [["float32", [1], "cpu", 4]], b"\0" * 4),
            "malformed",
            "(tensor reference)",
        ),
        (_doctored(["tree", "tensors"]), "malformed", "(header)"),
        (_doctored({"tree": 1, "tensors": [], "more": "forged text"}), "malformed", "(header)"),
        (b"\x80\x04K\x01.", "max_header", "its JSON part is 2147764993 bytes long"),  # a pickle
        (_doctored(b"{not json: forged text}"), "malformed", "(JSONDecodeError)"),
    ],
)
def test_answers_beyond_the_limits_are_refused_by_name(payload, cap, text):
    with pytest.raises(BoundaryError) as refused:
        loads(payload, LIMITS)
    assert refused.value.cap == cap
    assert text in str(refused.value)
    assert "forged" not in str(refused.value)  # nothing the bytes said is repeated


def test_a_48_mb_answer_is_refused_before_it_is_parsed(monkeypatch):
    import pytest_autograd_grader.boundary.wire as wire

    def parse(*args, **kwargs):
        raise AssertionError("the answer was parsed before its size was checked")

    payload = _doctored(b'{"tree": [' + b"0," * (24 << 20) + b'0], "tensors": []}')
    # any parse would fail the test, not only a slow one (no clock: a busy CI machine cannot flake it)
    monkeypatch.setattr(wire.json, "loads", parse)
    with pytest.raises(BoundaryError) as refused:
        loads(payload, LIMITS)
    assert (refused.value.cap, refused.value.measured, refused.value.limit) == ("max_bytes", len(payload), 8 << 20)


def test_without_limits_the_graders_own_requests_read_as_before():
    big = {"x": "y" * 200_000, "items": list(range(150_000))}
    assert loads(dumps(big)) == big
    assert loads(dumps([torch.empty(2, 3, device="meta")]))[0].is_meta


@pytest.mark.parametrize(
    "value",
    [
        [0] * 99_000,
        "x" * 100_000,
        {"k" * 100_000: 1},
        list(range(10)) * 3,
        [torch.randn(3, dtype=torch.float64, requires_grad=True) * 2 for _ in range(100)],
        {"nested": [[[(1, 2.5, None, True)]]], 3: "three"},
        RuntimeError("boom"),
        object(),
        len,
    ],
)
def test_what_student_code_honestly_returns_is_within_the_limits(value):
    record = decode(loads(dumps({"stage": "ok", "value": encode(value)}), LIMITS)["value"], LIMITS)
    assert record is not None


def test_encode_cuts_what_is_too_large_or_too_deep_so_the_answer_stays_readable():
    deep: list = []
    for _ in range(10_000):
        deep = [deep]
    record = decode(loads(dumps({"value": encode(deep)}), LIMITS)["value"], LIMITS)
    for _ in range(31):
        record = record[0]
    assert record[0].repr == "<too large or too deeply nested>"
    # a list of millions is cut after the budget, not turned into millions of markers
    tree = encode([0] * 3_000_000)
    assert len(tree["items"]) == 100_000 and tree["items"][-1]["$"] == "object"


@pytest.mark.parametrize(
    "tree, cap",
    [
        (_nested_records(33), "max_depth"),
        ({"$": "list", "items": [0] * 100_001}, "max_items"),
        (
            {"$": "error", "type": "RuntimeError", "message": "m" * 100_001, "file": "", "line": 0, "code": ""},
            "max_string",
        ),
        ({"$": "error", "type": "RuntimeError", "message": "m", "file": "", "line": "1", "code": ""}, "field_type"),
        (
            {
                "$": "error",
                "type": "RuntimeError",
                "message": "m",
                "file": "",
                "line": 1,
                "code": "",
                "raised_by": "torch",
            },
            "malformed",
        ),
        ({"$": "error"}, "malformed"),
        ({"$": "dict", "keys": ["a", "b"], "values": [1]}, "dict_keys"),
        (
            {
                "$": "tensor",
                "data": torch.empty(2, device="meta"),
                "grad": None,
                "requires_grad": False,
                "is_leaf": True,
                "grad_fn": None,
                "retains_grad": False,
            },
            "device",
        ),
        ({"$": ["list"]}, "unknown_record"),
        ({"$": "forged tag"}, "unknown_record"),
        ([1, 2], "not_record"),
    ],
)
def test_decode_refuses_records_of_the_wrong_form_by_name(tree, cap):
    with pytest.raises(BoundaryError) as refused:
        decode(tree, LIMITS)
    assert refused.value.cap == cap, refused.value
    assert "forged" not in str(refused.value)
    assert decode(_nested_records(32), LIMITS) is not None

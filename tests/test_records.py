"""The wire format between student code and the grader: whatever arrives
is rebuilt from JSON and raw bytes into builtins and plain tensors only."""

from __future__ import annotations

import json
import struct

import pytest
import torch

from pytest_autograd_grader.records import BoundaryError, dumps, loads


@pytest.mark.parametrize("tensor", [
    torch.randn(3, 4, dtype=torch.float64),
    torch.randn(2, 3).t(),                                  # not contiguous
    torch.tensor([1.0, float("nan"), float("inf")]),
    torch.ones(2, dtype=torch.bfloat16),
    torch.tensor([True, False]),
    torch.arange(6, dtype=torch.int64).reshape(2, 3),
    torch.empty(0, 3),
    torch.tensor(2.5),
    torch.randn(2, dtype=torch.complex64).conj(),
])
def test_tensors_round_trip_as_plain_tensors(tensor):
    back = loads(dumps({"t": tensor, "meta": [1, 2.5, "s", None, True]}))
    assert type(back["t"]) is torch.Tensor
    assert back["t"].dtype == tensor.dtype and back["t"].shape == tensor.shape
    assert torch.equal(back["t"].nan_to_num(), tensor.resolve_conj().nan_to_num())
    assert back["meta"] == [1, 2.5, "s", None, True]


def test_meta_tensors_keep_their_device():
    back = loads(dumps([torch.empty(2, 3, device="meta")]))
    assert back[0].device.type == "meta" and back[0].shape == (2, 3)


def _doctored(header: dict, body: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("!I", len(raw)) + raw + body


@pytest.mark.parametrize("payload, reason", [
    (_doctored({"tree": {"$tensor": 0}, "tensors": [["Tensor", [1], "cpu", 4]]}, b"\0" * 4), "unknown dtype"),
    (_doctored({"tree": {"$tensor": 0}, "tensors": [["float32", [4], "cpu", 4]]}, b"\0" * 4), "do not match"),
    (_doctored({"tree": {"$tensor": 0}, "tensors": [["float32", [1], "cpu", 4]]}), "do not match"),
    (_doctored({"tree": {"$tensor": 0}, "tensors": [["float32", [10**6, 10**6], "cpu", 4 * 10**12]]}), "do not match"),
    (b"\x80\x04K\x01.", "refused"),                          # a pickle
    (b"not our format", "refused"),
])
def test_doctored_payloads_are_refused(payload, reason):
    with pytest.raises(BoundaryError, match=reason):
        loads(payload)


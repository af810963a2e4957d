"""--grade-device: which devices device-aware checks run on, and how a
machine without CUDA reports checks that asked for it."""

from __future__ import annotations

import pytest
import torch
from conftest import grade_checks

QUIET = ("--grade-inline",)
needs_cuda = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)"
)
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="describes a machine without CUDA")

CHECKS = """
    import pytest
    import torch

    pytestmark = pytest.mark.grade(concept="graph", points=2)

    def test_double_grad(submission, autograd, grade_rng, grade_device):
        x = grade_rng.randn(3, requires_grad=True)
        assert x.device.type == grade_device
        got = submission("dev").double_grad(x)
        autograd.check_grad(got, lambda x: (x * x).sum(), (x,), names=["x.grad"])

    def test_stays_on_cpu_side(submission, autograd, grade_device):
        got = submission("dev").to_cpu(torch.ones(2, device=grade_device))
        autograd.assert_close(got, torch.ones(2, device=grade_device), "ones")

    @pytest.mark.grade(points=1)
    def test_device_free(submission, autograd):
        autograd.assert_close(submission("dev").to_cpu(torch.ones(2)), torch.ones(2), "ones")
"""

STUDENT = """
    def double_grad(x):
        (x * x).sum().backward()
        return x.grad

    def to_cpu(x):
        return x.cpu()
"""


def grade(pytester: pytest.Pytester, *args: str):
    return grade_checks(pytester, CHECKS, "--grade-seed", "5", *QUIET, *args, dev=STUDENT)


def ids(graded) -> list[str]:
    return sorted(c["id"].split("::")[1] for c in graded.report["checks"])


@no_cuda
@pytest.mark.parametrize("setting", [None, "cpu", "auto", "all"])
def test_device_aware_checks_run_on_cpu(pytester, setting):
    graded = grade(pytester, *(["--grade-device", setting] if setting else []))
    assert ids(graded) == ["test_device_free", "test_double_grad[cpu]", "test_stays_on_cpu_side[cpu]"]
    assert graded.report["devices"] == ["cpu"]
    assert graded.check("test_double_grad[cpu]")["device"] == "cpu"
    assert graded.check("test_device_free")["device"] is None
    assert {c["status"] for c in graded.report["checks"]} == {"passed"}
    assert graded.report["score"] == graded.report["max_score"] == 5
    assert "device " + (setting or "cpu") in graded.text


@no_cuda
def test_cuda_without_a_gpu_skips_with_a_reason(pytester):
    graded = grade(pytester, "--grade-device", "cuda")
    assert ids(graded) == ["test_device_free", "test_double_grad[cuda]", "test_stays_on_cpu_side[cuda]"]
    for name in ("test_double_grad[cuda]", "test_stays_on_cpu_side[cuda]"):
        check = graded.check(name)
        assert check["status"] == "skipped" and check["score"] == 0 and check["max_score"] == 0
        assert "torch.cuda.is_available() is False" in check["feedback"]
    # skipped checks are not graded: only the device-free check counts
    assert graded.check("test_device_free")["status"] == "passed"
    assert graded.report["score"] == graded.report["max_score"] == 1
    assert graded.report["percent"] == 100.0
    assert graded.concept("graph")["max_score"] == 1 and graded.concept("graph")["checks"] == 1
    assert graded.report["devices"] == []
    assert "2 skipped" in graded.text
    assert graded.result.ret == 0


def test_unknown_device_is_a_usage_error(pytester):
    pytester.makepyfile(test_checks=CHECKS)
    result = pytester.runpytest("--grade", "--grade-device", "tpu", *QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--grade-device: 'tpu' is not a device; use cpu, cuda, auto or all*"])


# -- on a machine with a GPU -------------------------------------------------


@needs_cuda
def test_cuda_checks_run_on_the_gpu(pytester):
    graded = grade(pytester, "--grade-device", "cuda")
    assert graded.report["devices"] == ["cuda"]
    assert graded.check("test_double_grad[cuda]")["status"] == "passed"
    moved = graded.check("test_stays_on_cpu_side[cuda]")
    assert moved["status"] == "failed"
    assert "ones: expected a tensor on cuda, got one on cpu" in moved["feedback"]
    assert graded.report["score"] == 3 and graded.report["max_score"] == 5


@needs_cuda
def test_all_runs_every_device_and_auto_prefers_cuda(pytester):
    graded = grade(pytester, "--grade-device", "all")
    assert ids(graded) == [
        "test_device_free",
        "test_double_grad[cpu]",
        "test_double_grad[cuda]",
        "test_stays_on_cpu_side[cpu]",
        "test_stays_on_cpu_side[cuda]",
    ]
    assert graded.report["devices"] == ["cpu", "cuda"]
    auto = grade(pytester, "--grade-device", "auto")
    assert "test_double_grad[cuda]" in ids(auto)


def test_arguments_a_worker_cannot_make_are_not_blamed_on_the_students_data(tmp_path):
    # A worker where CUDA would not start failed to read every cuda tensor
    # the grader sent, and the student read "data from student code was
    # refused" on a check marked failed
    from pytest_autograd_grader.boundary import failures, module_loader, student, wire
    from pytest_autograd_grader.boundary.records import Limits

    (tmp_path / "leaf.py").write_text("def double(x):\n    return x * 2\n")
    loader = module_loader.Loader(str(tmp_path))
    answer = wire.loads(student.call(loader, "leaf", "double", b"no request of the grader's"), Limits())
    assert answer["stage"] == "request" and answer["reason"].startswith(("ValueError", "JSONDecodeError", "Unicode"))
    # the grader adds whether it sent CUDA tensors (Submission._request)
    failure = failures.failure_from({**answer, "module": "leaf", "function": "double", "cuda": True})
    # the worker's word: failed, as everything from student code, never error
    assert failure.grade_status == "failed"
    assert failure.feedback.startswith(
        "leaf.double did not run: the sandbox could not hand it this check's arguments ("
    )
    assert "refused" not in failure.feedback and "--grade-memory" in failure.feedback
    # no CUDA advice where no CUDA tensor was sent
    plain = failures.failure_from({**answer, "module": "leaf", "function": "double", "cuda": False})
    assert plain.grade_status == "failed" and "CUDA" not in plain.feedback

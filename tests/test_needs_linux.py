"""Off Linux the grader says that its sandbox needs Linux, before it starts
anything, instead of an AttributeError from pidfd_open deep in a launch."""

import os
import sys

import pytest
from conftest import QUIET_PLUGINS

from pytest_autograd_grader.sandbox import Unavailable, choose, isolation_for

NOT_LINUX = [("darwin", True), ("win32", True), ("linux", False)]  # (sys.platform, has os.pidfd_open)


def _elsewhere(monkeypatch: pytest.MonkeyPatch, platform: str, pidfd: bool) -> None:
    monkeypatch.setattr(sys, "platform", platform)
    if not pidfd:  # a Linux whose Python lacks it (built against an old glibc)
        monkeypatch.delattr(os, "pidfd_open", raising=False)


@pytest.mark.parametrize("platform, pidfd", NOT_LINUX)
@pytest.mark.parametrize("setting", ["auto", "process", "bwrap", "user"])
def test_every_mode_says_the_sandbox_needs_linux(monkeypatch, platform, pidfd, setting):
    _elsewhere(monkeypatch, platform, pidfd)
    for ask in (choose, isolation_for):
        with pytest.raises(Unavailable) as raised:
            ask(setting)
        assert str(raised.value).startswith("the sandbox that runs student code needs Linux"), str(raised.value)
        assert f"this system is {platform}: grade on Linux, in WSL 2 or in a Linux container" in str(raised.value)


@pytest.mark.parametrize(
    "lang, says",
    [
        (
            "en",
            "ERROR: the sandbox that runs student code needs Linux (pidfd_open, Unix seqpacket sockets) and this "
            "system is darwin",
        ),
        ("zh", "ERROR: 运行学生代码的沙箱需要 Linux（pidfd_open、Unix seqpacket 套接字），而当前系统是 darwin"),
    ],
)
def test_grading_off_linux_is_a_usage_error_in_words(pytester, monkeypatch, lang, says):
    pytester.makepyfile(
        test_checks="""
        import pytest

        @pytest.mark.grade(concept="leaf")
        def test_one():
            raise AssertionError("must not run")
    """
    )
    _elsewhere(monkeypatch, "darwin", False)
    result = pytester.runpytest("--grade", "--grade-lang", lang, *QUIET_PLUGINS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert says in result.stderr.str()
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "AttributeError" not in output and "must not run" not in output


def test_the_class_runner_says_so_before_grading_anyone(tmp_path, monkeypatch, capsys):
    from pytest_autograd_grader.cli import main

    checks, submissions = tmp_path / "checks", tmp_path / "submissions"
    (checks).mkdir()
    (checks / "test_leaf.py").write_text("def test_one():\n    pass\n")
    (submissions / "ann").mkdir(parents=True)
    _elsewhere(monkeypatch, "darwin", False)
    code = main(["class", "--checks", str(checks), "--submissions", str(submissions), "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "the sandbox that runs student code needs Linux" in err and "this system is darwin" in err
    assert "Traceback" not in err and not (tmp_path / "out" / "gradebook.csv").exists()

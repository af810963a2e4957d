"""pytest's private API is touched in one module only
(pytest_autograd_grader/pytest_internals.py), which names the pytest versions
it supports, the same ones pyproject.toml allows; a pytest that lacks what it
needs is refused with a message saying which version and what to install,
never graded a slower way. Also the process-wide registries (process_state.py)
and their reset. CI runs this file on the oldest pytest allowed too (.ci/run)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from conftest import QUIET_PLUGINS
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from private_pytest_api import private_uses

from pytest_autograd_grader import process_state, pytest_internals

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "pytest_autograd_grader"
ADAPTER = PACKAGE / "pytest_internals.py"


def test_the_scan_finds_the_private_uses_it_forbids():
    # the check below can fail: what the package did before the adapter
    before = (
        "from _pytest.main import pytest_runtestloop\nimport _pytest.runner\n"
        "session._setupstate.teardown_exact(None)\nitem._initrequest()\n"
        "tr.write_line(tr._tw.fullwidth)\nx = item.config._inicache\n"
        "for name in ('shouldstop',):\n    setattr(session, f'_{name}', False)\n"
    )
    assert sorted(private_uses(before)) == [
        "_pytest.main",
        "_pytest.runner",
        "config._inicache",
        "item._initrequest",
        "session._setupstate",
        "setattr(session, '_'...)",
        "tr._tw",
    ]
    assert private_uses("session.shouldstop = True\nself._x = 1\ntr.config.get_terminal_writer()\n") == []


def test_no_module_but_the_adapter_touches_pytests_private_api():
    found = {
        str(path.relative_to(REPO)): uses
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != ADAPTER
        if (uses := private_uses(path.read_text()))
    }
    assert found == {}
    assert private_uses(ADAPTER.read_text())  # it is where they went


def test_the_adapters_range_is_pyprojects_bound_and_holds_this_pytest():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    bounds = [d.removeprefix("pytest") for d in project["dependencies"] if d.split("<")[0].split(">")[0] == "pytest"]
    assert bounds == [pytest_internals.SUPPORTED]
    supported = SpecifierSet(pytest_internals.SUPPORTED)
    assert Version(pytest.__version__) in supported
    assert pytest_internals.SUPPORTED in ADAPTER.read_text().split('"""')[1]  # its docstring says so too


def test_this_pytest_has_everything_the_adapter_uses():
    assert pytest_internals.missing() == []
    pytest_internals.check_supported()


def test_a_pytest_without_what_the_class_runner_needs_is_named_with_what_to_install(monkeypatch):
    monkeypatch.delattr(pytest.Function, "_initrequest")
    with pytest.raises(pytest_internals.UnsupportedPytest) as raised:
        pytest_internals.check_supported()
    text = str(raised.value)
    assert f"pytest {pytest.__version__} lacks what the grader relies on (Function._initrequest)" in text
    assert "pip install 'pytest>=8.0,<10'" in text
    pytest_internals.check_supported(pytest_internals.LONE_RUN)  # a lone --grade run does not need it


def test_the_class_command_refuses_such_a_pytest_before_grading_anyone(tmp_path, monkeypatch, capsys):
    from pytest_autograd_grader.cli import main

    checks, subs = tmp_path / "checks", tmp_path / "subs" / "ann"
    checks.mkdir()
    subs.mkdir(parents=True)
    (checks / "test_leaf.py").write_text("def test_x():\n    pass\n")
    monkeypatch.setattr(
        pytest_internals,
        "_present",
        lambda: {name: name != "session._setupstate.teardown_exact" for name in pytest_internals.CLASS_RUNNER},
    )
    code = main(["class", "--checks", str(checks), "--submissions", str(subs.parent), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"pytest {pytest.__version__} lacks what the grader relies on (session._setupstate.teardown_exact)" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_the_audit_refuses_such_a_pytest_too(monkeypatch, capsys):
    from pytest_autograd_grader.cli import main

    monkeypatch.setattr(
        pytest_internals,
        "_present",
        lambda: {name: name != "Function._initrequest" for name in pytest_internals.CLASS_RUNNER},
    )
    code = main(["audit", str(REPO / "exercises"), "--solutions", str(REPO / "solutions")])
    err = capsys.readouterr().err
    assert code == 2 and f"pytest {pytest.__version__} lacks what the grader relies on (Function._initrequest)" in err
    assert "Traceback" not in err


def test_a_graded_run_on_such_a_pytest_is_a_usage_error_not_a_traceback_per_check(pytester, monkeypatch):
    monkeypatch.setattr(pytest_internals, "_present", lambda: {"item._report_sections": False})
    pytester.makepyfile(test_checks="def test_nothing():\n    pass\n")
    result = pytester.runpytest("--grade", *QUIET_PLUGINS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*pytest {pytest.__version__} lacks what the grader relies on "
            "(item._report_sections)*pip install 'pytest>=8.0,<10'*"
        ]
    )
    assert "Traceback" not in result.stderr.str()


def test_a_private_thing_gone_at_run_time_is_named_too():
    with pytest.raises(pytest_internals.UnsupportedPytest, match=r"lacks .*\(session\._shouldstop\)"):
        pytest_internals.unstop(object())
    with pytest.raises(pytest_internals.UnsupportedPytest, match=r"\(session\._setupstate\.teardown_exact\)"):
        pytest_internals.teardown_all(object())


_ONE_SESSION = """
import json, sys
from pathlib import Path
from pytest_autograd_grader.classroom import runner
from pytest_autograd_grader.classroom.students import checks_sha256, find_students

root = Path(sys.argv[1])
settings = runner.ClassSettings(checks=root / "checks", out=root / "out", checks_sha256=checks_sha256(root / "checks"),
                                timeout=10.0)
tasks = [(s, 7) for s in sorted(find_students(root / "subs"), key=lambda s: s.id, reverse=True)]
sent = []
left = runner._grade_in_one_session(settings, 7, lambda: tasks.pop() if tasks else None, lambda: None, sent.append)
print(json.dumps({"left": left is not None, "graded": [[r["student"], r["status"], r["percent"]] for r in sent]}))
"""


def test_one_session_grades_every_student_on_this_pytest_without_falling_back(tmp_path):
    # the class runner's one session per worker falls back to a session per
    # student where it breaks: slower, with the same grades, so only this
    # says when a pytest release broke it (CI runs it on the oldest and newest)
    import json
    import subprocess
    import sys

    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "test_whose.py").write_text(
        "import pytest\n\n@pytest.mark.grade(concept='leaf')\n"
        "def test_whose(submission):\n    assert submission('leaf').who() == 'me'\n"
    )
    for name, who in (("ann", "me"), ("ben", "you"), ("cat", "me")):
        (tmp_path / "subs" / name).mkdir(parents=True)
        (tmp_path / "subs" / name / "leaf.py").write_text(f"def who():\n    return {who!r}\n")
    done = subprocess.run(
        [sys.executable, "-c", _ONE_SESSION, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "left": False,
        "graded": [["ann", "graded", 100.0], ["ben", "graded", 0.0], ["cat", "graded", 100.0]],
    }


class _Zygote:
    def __init__(self):
        self.stopped = False

    def stop(self):
        self.stopped = True


def test_process_state_is_one_object_and_reset_forgets_it(fresh_process_state, monkeypatch):
    from pytest_autograd_grader.sandbox import probe

    chosen = []
    monkeypatch.setattr(probe, "choose", lambda setting: chosen.append(setting) or f"isolation for {setting}")
    assert probe.isolation_for("process") == probe.isolation_for("process") == "isolation for process"
    assert chosen == ["process"]  # probed once a process
    zygote = fresh_process_state.sandboxes["a key"] = _Zygote()
    fresh_process_state.imports_frozen = True
    process_state.reset()
    assert zygote.stopped and fresh_process_state == process_state.ProcessState()
    probe.isolation_for("process")
    assert chosen == ["process", "process"]


def test_no_module_keeps_process_wide_state_on_the_package():
    # what lives as long as the process is process_state.py's, not attributes written into the package
    written = [
        str(path.relative_to(REPO))
        for path in sorted(PACKAGE.rglob("*.py"))
        if "import pytest_autograd_grader as" in path.read_text() or "package.__dict__" in path.read_text()
    ]
    assert written == []


def test_stop_all_stops_the_zygotes_but_keeps_the_imports_frozen(fresh_process_state):
    from pytest_autograd_grader.sandbox import stop_all

    zygote = fresh_process_state.sandboxes["a key"] = _Zygote()
    fresh_process_state.isolations["auto"] = "an isolation"
    fresh_process_state.imports_frozen = True
    stop_all()
    assert zygote.stopped and fresh_process_state == process_state.ProcessState(imports_frozen=True)

"""`autograd-grader class`: each student's report is the one a lone
`pytest --grade` gives with the same checks and seed; a killed run resumes
without regrading what was finished; shards merged equal one run."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
from conftest import EXERCISES, QUIET_PLUGINS, SOLUTIONS, class_command, copy_course_files

TOPICS = ("graph", "leaf")


def _make_class(root: Path) -> tuple[Path, Path]:
    checks, subs = root / "checks", root / "subs"
    checks.mkdir()
    for topic in TOPICS:
        shutil.copy(EXERCISES / f"test_{topic}.py", checks)
    copy_course_files(checks)
    (checks / "pytest.ini").write_text("[pytest]\n")
    solved = {"ann": set(TOPICS), "ben": {"leaf"}, "cat": set(), "eve": set(TOPICS)}
    for student, topics in solved.items():
        modules = subs / student / "exercises"  # a GitHub Classroom clone
        modules.mkdir(parents=True)
        for topic in TOPICS:
            shutil.copy((SOLUTIONS if topic in topics else EXERCISES) / f"{topic}.py", modules)
    (subs / "eve" / "exercises" / "leaf.py").write_text("import os\nos._exit(5)\n")  # kills its worker
    (subs / "dan").mkdir()  # nothing handed in
    flat = subs / "=fay"  # a flat upload
    flat.mkdir()
    shutil.copy(SOLUTIONS / "graph.py", flat)
    with zipfile.ZipFile(subs / "gil.zip", "w") as zipped:  # an uploaded zip
        zipped.writestr("gil/graph.py", (SOLUTIONS / "graph.py").read_text())
    (subs / "hal").symlink_to(checks)  # a link to the checks
    (subs / "\x1b[2J\x1b[Hivy.zip").write_bytes(b"PK")  # broken, named to drive terminals
    (subs / "notes.txt").write_text("grading notes")  # no student's
    return checks, subs


def _class(*args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    timeout = [] if any(arg.startswith("--timeout") for arg in args) else ["--timeout=3"]
    return subprocess.run(
        [sys.executable, "-m", "pytest_autograd_grader", "class", *args, *timeout],
        capture_output=True,
        text=True,
        check=check,
        **kwargs,
    )


def _reports(out: Path) -> dict[str, dict]:
    reports = {}
    for path in out.glob("*.json"):
        data = json.loads(path.read_text())
        if "student" in data:
            reports[data["student"]] = data
    return reports


def _per_check(report: dict) -> dict:
    return {c["id"]: (c["score"], c["status"], c["feedback"], c.get("private_feedback", "")) for c in report["checks"]}


def _own_tmp(root: Path) -> dict[str, str]:
    """An environment whose temporary folder is a new one, linked as
    ``root/tmp``, to see what a run leaves there. It lies in /tmp: the
    sandbox's own uid must reach it, and pytest's tmp_path is 0700."""
    tmp = Path(tempfile.mkdtemp(prefix="grade-test-tmp-", dir="/tmp"))
    tmp.chmod(0o755)
    (root / "tmp").symlink_to(tmp)
    _OWN_TMPS.append(tmp)
    return {**os.environ, "TMPDIR": str(tmp)}


_OWN_TMPS: list[Path] = []


def _processes_in(tmp: Path) -> list[str]:
    """Command lines naming ``tmp`` (bubblewrap's name its sandbox's folders)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(tmp.resolve()) in line:
            found.append(line)
    return found


@pytest.fixture(scope="module", autouse=True)
def _remove_own_tmps():
    yield
    for tmp in _OWN_TMPS:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    checks, subs = _make_class(root)
    done = _class(
        "--checks",
        str(checks),
        "--submissions",
        str(subs),
        "--out",
        str(root / "out"),
        "-j",
        "2",
        "--salt",
        "s1",
        env=_own_tmp(root),
    )
    return root, checks, subs, done


def test_a_class_run_leaves_nothing_in_the_temporary_folder(graded_class):
    root = graded_class[0]
    assert list((root / "tmp").iterdir()) == []  # each worker's sandboxes stopped, their folders gone
    assert _processes_in(root / "tmp") == []


def test_each_student_is_graded_as_a_lone_pytest_run_would(graded_class, pytester):
    root, checks, subs, done = graded_class
    reports = _reports(root / "out")
    # a zip is a student's upload: unpacked, graded; a broken one is missing, and said so
    assert set(reports) == {"ann", "ben", "cat", "dan", "eve", "_fay", "gil", "__2J__Hivy"}
    status = {name: r["status"] for name, r in reports.items()}
    assert status == {
        "ann": "graded",
        "ben": "graded",
        "cat": "not attempted",
        "dan": "missing",
        "eve": "graded",
        "_fay": "graded",
        "gil": "graded",
        "__2J__Hivy": "missing",
    }
    assert all(c["status"] == "passed" for c in reports["gil"]["checks"] if "test_graph" in c["id"])
    assert reports["ann"]["percent"] == 100.0 and reports["cat"]["score"] == 0
    assert reports["_fay"]["folder"] == "=fay"
    # a submission that kills its process costs only its own checks
    assert {c["status"] for c in reports["eve"]["checks"] if "test_leaf" in c["id"]} == {"crashed"}
    assert all(c["status"] == "passed" for c in reports["eve"]["checks"] if "test_graph" in c["id"])
    assert len({r["seed"] for r in reports.values()}) == 1  # one seed for the class, drawn from the salt
    assert len({r["checks_sha256"] for r in reports.values()}) == 1
    for name in ("ann", "ben", "cat", "eve"):
        lone = pytester.runpytest(
            "-c",
            str(checks / "pytest.ini"),
            "--rootdir",
            str(checks),
            str(checks),
            "--grade",
            f"--grade-submission={subs / name / 'exercises'}",
            f"--grade-seed={reports[name]['seed']}",
            "--grade-json-private=lone.json",
            *QUIET_PLUGINS,
        )
        assert lone.ret in (0, 1)
        alone = json.loads((pytester.path / "lone.json").read_text())
        assert _per_check(alone) == _per_check(reports[name]), name
        assert alone["score"] == reports[name]["score"]
    assert "graded 8 students" in done.stderr and "1 not attempted, 2 missing, 0 errors" in done.stderr
    assert "read 8 submissions from a folders export (0 late)" in done.stderr
    assert "not graded: hal is a symbolic link" in done.stderr
    assert "not graded: notes.txt is a file but not a zip" in done.stderr
    assert (
        "\\x1b[2J\\x1b[Hivy: \\x1b[2J\\x1b[Hivy.zip could not be unpacked and is not graded: not a zip" in done.stderr
        and "\x1b" not in done.stderr
    )
    with open(root / "out" / "gradebook.csv", newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert rows["ann"]["status"] == "graded" and float(rows["ann"]["percent"]) == 100.0
    assert rows["_fay"]["folder"].startswith("'=")  # no formula for a spreadsheet


def test_shards_merged_equal_one_run(graded_class, capsys):
    root, checks, subs, _ = graded_class
    shards = [
        subprocess.Popen(
            class_command(
                checks, subs, root / f"part{k}", "--salt", "s1", "--shard", f"{k}/2", "-j", "1", "--timeout=3"
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for k in (1, 2)
    ]
    assert [shard.wait() for shard in shards] == [0, 0]
    parts = [_reports(root / f"part{k}") for k in (1, 2)]
    assert parts[0] and parts[1] and not set(parts[0]) & set(parts[1])
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_autograd_grader",
            "merge",
            str(root / "part1"),
            str(root / "part2"),
            "--out",
            str(root / "merged"),
        ],
        check=True,
        capture_output=True,
    )
    merged, whole = _reports(root / "merged"), _reports(root / "out")
    assert set(merged) == set(whole)
    for name in whole:
        assert _per_check(merged[name]) == _per_check(whole[name]), name

    def table(out):
        with open(out / "gradebook.csv", newline="") as handle:
            return [
                {k: v for k, v in row.items() if k not in ("started", "finished")} for row in csv.DictReader(handle)
            ]

    assert table(root / "merged") == table(root / "out")

    # a Slurm job array's tasks, given one shared OUT, each write their part; merge OUT joins them
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "GRADE_SHARD", "JOB_COMPLETION"))}
    tasks = [
        subprocess.Popen(
            class_command(checks, subs, root / "shared", "--salt", "s1", "-j", "1", "--timeout=3"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={
                **env,
                "SLURM_ARRAY_TASK_ID": str(task),
                "SLURM_ARRAY_TASK_MIN": "0",
                "SLURM_ARRAY_TASK_MAX": "1",
                "SLURM_ARRAY_TASK_COUNT": "2",
            },
        )
        for task in (0, 1)
    ]
    said = [task.communicate()[1] for task in tasks]
    assert [task.returncode for task in tasks] == [0, 0], said
    assert "grading shard 2/2 (from SLURM_ARRAY_TASK_ID) into" in said[1]
    assert {p.name for p in (root / "shared").iterdir()} == {"part-1-of-2", "part-2-of-2"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_autograd_grader",
            "merge",
            str(root / "shared"),
            "--out",
            str(root / "merged-array"),
        ],
        check=True,
        capture_output=True,
    )
    assert table(root / "merged-array") == table(root / "out")

    # what would make the gradebook lie is refused, naming the parts, and nothing is written
    def merge(*parts):
        from pytest_autograd_grader.cli import main

        code = main(["merge", *map(str, parts), "--out", str(root / "refused")])
        return code, capsys.readouterr().err

    part1, part2 = root / "part1", root / "part2"

    def altered(name, **changes):
        copy = root / name
        shutil.copytree(part2, copy)
        info = json.loads((copy / "class-run.json").read_text())
        (copy / "class-run.json").write_text(json.dumps({**info, **changes}))
        return copy

    cases = [
        (
            (part1, part1),
            [
                f"{part1} is given more than once",
                f"shard 1/2 is given twice: {part1} and {part1}",
                "shard 2/2 is missing: add the OUT folder of 'autograd-grader class --shard 2/2'",
            ],
        ),
        ((part1,), ["shard 2/2 is missing"]),
        ((part1, altered("salted", salt="other")), ["different seed salts", "s1", "other"]),
        ((part1, altered("each", seeding="per-student")), ["seeded differently", "per-student", "class"]),
        ((part1, altered("rechecked", checks_sha256="0" * 64)), ["graded with different checks", "0" * 64]),
        ((part1, altered("newer", grader="9.9")), ["different versions of the grader", "9.9"]),
        ((part1, altered("thirds", shard="2/3")), ["different numbers of shards"]),
        ((part1, altered("whole", shard=None)), ["not a shard (graded without --shard)"]),
        ((part1, part2, root / "merged"), ["not a shard"]),
    ]
    for parts, texts in cases:
        code, err = merge(*parts)
        assert code == 2, (parts, err)
        for text in texts:
            assert text in err, (parts, text, err)
        assert "merge refused, nothing written" in err and not (root / "refused").exists(), err
    overlap = root / "overlap"  # a student of shard 1 in shard 2's folder too
    shutil.copytree(part2, overlap)
    student = next(p for p in part1.glob("*.json") if p.name != "class-run.json")
    shutil.copy(student, overlap / student.name)
    code, err = merge(part1, overlap)
    assert code == 2 and f"{student.stem} was graded in two parts, {part1} and {overlap}" in err, err


def test_a_killed_run_resumes_without_regrading_what_it_finished(tmp_path):
    checks, subs = _make_class(tmp_path)
    (subs / "cat" / "exercises" / "graph.py").write_text("while True:\n    pass\n")  # a slow student
    out = tmp_path / "out"
    args = ["--checks", str(checks), "--submissions", str(subs), "--out", str(out), "-j", "1", "--salt", "s2"]
    env = _own_tmp(tmp_path)  # what the killed run cannot remove lands there, and goes with the test
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest_autograd_grader", "class", *args, "--timeout=1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not {"ann", "ben"} <= set(_reports(out)):
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)  # as an out-of-memory killer or a closed laptop would
    run.wait()
    before = _reports(out)
    assert {"ann", "ben"} <= set(before) and "eve" not in before
    assert all(r["complete"] for r in before.values())  # each file whole: written atomically
    resumed = _class(*args, "--resume", env=env)
    after = _reports(out)
    assert set(after) == {"ann", "ben", "cat", "dan", "eve", "_fay", "gil", "__2J__Hivy"}
    for name in ("ann", "ben"):
        assert after[name]["finished"] == before[name]["finished"]  # not graded again
    assert f"({len(before)} kept from earlier runs)" in resumed.stderr or "kept" in resumed.stderr
    assert after["cat"]["status"] == "graded" and (out / "report.html").is_file()
    # once more, with nothing left to grade: the outputs are rebuilt, nobody is graded again
    (out / "report.html").unlink()
    again = _class(*args, "--resume", env=env)
    assert "(8 kept from earlier runs)" in again.stderr, again.stderr
    assert {name: r["finished"] for name, r in _reports(out).items()} == {
        name: r["finished"] for name, r in after.items()
    }
    assert (out / "report.html").is_file()


def test_bad_arguments_say_what_to_do(tmp_path):
    checks, subs = _make_class(tmp_path)
    # a class that could be graded; each case below adds or changes one thing
    usual = ["--checks", str(checks), "--submissions", str(subs), "--out", str(tmp_path / "o")]
    cases = [
        (
            ["--checks", str(tmp_path / "nope"), "--submissions", str(subs), "--out", str(tmp_path / "o")],
            "is not a folder; give the folder of the course's check files",
        ),
        (
            ["--checks", str(subs / "ann"), "--submissions", str(tmp_path / "elsewhere"), "--out", str(tmp_path / "o")],
            "holds no check file (test_*.py or *_test.py); give the folder of the course's check files",
        ),
        (["--checks", str(checks), "--submissions", str(subs), "--out", str(subs / "ann")], "--out"),
        ([*usual, "--shard", "3/2"], "--shard 3/2: write K/N"),
        ([*usual, "--only", "zed"], "--only: no student folder is called zed"),
        # the shard is cut from the whole class: a student of another shard is not graded in this one
        (
            [*usual, "--shard", "1/2", "--only", "ben"],
            "--only ben: not in shard 1/2 of the class; grade them with their own --shard",
        ),
        # run-wide settings are refused once, not by every student's session
        ([*usual, "--isolation", "foo"], "argument --isolation: invalid choice: 'foo' (choose from"),
        ([*usual, "--lang", "fr"], "argument --lang: invalid choice: 'fr' (choose from"),
        ([*usual, "--timeout", "0"], "--timeout 0.0: give a positive number of seconds for each check"),
        (
            [*usual, "--seed", "3", "--seed-per-student"],
            "--seed 3 gives every student the same seed and --seed-per-student a seed each",
        ),
    ]
    for args, text in cases:
        result = _class(*args, check=False)
        assert result.returncode == 2, result.stderr
        assert text in result.stderr and "Traceback" not in result.stderr


def test_a_session_that_hangs_in_the_grader_costs_only_its_student(tmp_path):
    # a check of the course that never returns: the grader's own code, which
    # the sandbox does not bound; --student-timeout does. Its clock starts
    # once the worker's sandbox is warm: counting the cold start (about 5 s,
    # more on busy cores) once stopped the fast student too
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "test_hang.py").write_text(
        "import time\nimport pytest\n\n@pytest.mark.grade(concept='leaf')\n"
        "def test_hangs(submission):\n    if submission('leaf').who() == 'slow':\n        time.sleep(600)\n"
    )
    for name in ("fast", "slow"):
        (tmp_path / "subs" / name).mkdir(parents=True)
        (tmp_path / "subs" / name / "leaf.py").write_text(f"def who():\n    return {name!r}\n")
    started = time.monotonic()
    done = _class(
        "--checks",
        str(checks),
        "--submissions",
        str(tmp_path / "subs"),
        "--out",
        str(tmp_path / "out"),
        "-j",
        "2",
        "--student-timeout",
        "5",
        env=_own_tmp(tmp_path),
    )
    reports = _reports(tmp_path / "out")
    assert reports["fast"]["status"] == "graded" and reports["fast"]["percent"] == 100.0
    assert reports["slow"]["status"] == "error"
    assert "took longer than 5 s (--student-timeout) and was stopped" in reports["slow"]["error"]
    assert "slow: grading this submission took longer than 5 s" in done.stderr
    assert time.monotonic() - started < 60
    assert list((tmp_path / "tmp").iterdir()) == []  # the killed worker's sandbox folders too
    assert _processes_in(tmp_path / "tmp") == []  # and its zygotes ended with it


def test_a_seed_per_student_when_asked(tmp_path):
    checks, subs = _make_class(tmp_path)
    for flags, seeds in ((["--seed-per-student"], "each"), ([], "one")):
        out = tmp_path / f"out-{seeds}"
        _class(
            "--checks",
            str(checks),
            "--submissions",
            str(subs),
            "--out",
            str(out),
            "--only",
            "ann",
            "ben",
            "--salt",
            "s9",
            *flags,
        )
        reports = _reports(out)
        assert len({r["seed"] for r in reports.values()}) == (2 if seeds == "each" else 1)
        assert json.loads((out / "class-run.json").read_text())["seeding"] == ("per-student" if flags else "class")


def test_a_class_graded_with_one_seed_gives_each_student_their_lone_report(tmp_path, pytester):
    # with --seed every student's engine is fuzzed with the same programs, and
    # a grading process keeps them and torch's results from one student to the
    # next: a student graded after others still gets their lone run's report
    from engine_mistakes import MISTAKES

    checks, subs = tmp_path / "checks", tmp_path / "subs"
    checks.mkdir()
    shutil.copy(EXERCISES / "test_engine.py", checks)
    copy_course_files(checks)
    (checks / "pytest.ini").write_text("[pytest]\n")
    engines = {
        "ann": (SOLUTIONS / "engine.py").read_text(),
        "ben": MISTAKES["div_derivative"][0],
        "cat": (EXERCISES / "engine.py").read_text(),
        "dan": MISTAKES["never_freed"][0],
    }
    for student, source in engines.items():
        (subs / student).mkdir(parents=True)
        (subs / student / "engine.py").write_text(source)
    _class(
        "--checks",
        str(checks),
        "--submissions",
        str(subs),
        "--out",
        str(tmp_path / "out"),
        "-j",
        "1",
        "--seed",
        "11",
        "--timeout=10",
    )
    reports = _reports(tmp_path / "out")
    assert {r["seed"] for r in reports.values()} == {11}
    assert reports["ann"]["percent"] == 100.0 and reports["cat"]["status"] == "not attempted"
    assert 0 < reports["ben"]["percent"] < 100 and 0 < reports["dan"]["percent"] < 100
    for name in engines:
        lone = pytester.runpytest(
            "-c",
            str(checks / "pytest.ini"),
            "--rootdir",
            str(checks),
            str(checks),
            "--grade",
            f"--grade-submission={subs / name}",
            "--grade-seed=11",
            "--grade-timeout=10",
            "--grade-json-private=lone.json",
            *QUIET_PLUGINS,
        )
        assert lone.ret in (0, 1)
        alone = json.loads((pytester.path / "lone.json").read_text())
        assert _per_check(alone) == _per_check(reports[name]), name


def test_a_session_fixture_is_each_students_own_even_after_a_run_stopped_early(tmp_path):
    # a worker collects the checks once and runs them for student after
    # student: a run that --maxfail in the checks' ini stopped early stops
    # only that student's, and what it set up is not the next one's
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "pytest.ini").write_text("[pytest]\naddopts = --maxfail=1\n")
    (checks / "test_whose.py").write_text(
        "import pytest\n\n@pytest.fixture(scope='session')\ndef handed_in(request):\n"
        "    return request.config.getoption('grade_submission')\n\n"
        + "".join(
            f"@pytest.mark.grade(concept='leaf')\ndef test_{n}(handed_in, submission):\n"
            f"    assert submission('leaf').who() in handed_in\n\n"
            for n in ("first", "second")
        )
    )
    for name, who in (("ann", "nobody"), ("ben", "ben"), ("cat", "cat")):
        (tmp_path / "subs" / name).mkdir(parents=True)
        (tmp_path / "subs" / name / "leaf.py").write_text(f"def who():\n    return {who!r}\n")
    _class("--checks", str(checks), "--submissions", str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "-j", "1")
    reports = _reports(tmp_path / "out")
    assert reports["ann"]["status"] == "error" and reports["ann"]["complete"] is False  # stopped after a failure
    for name in ("ben", "cat"):
        assert reports[name]["status"] == "graded" and reports[name]["percent"] == 100.0
        assert [c["status"] for c in reports[name]["checks"]] == ["passed", "passed"]


def test_students_left_when_the_shared_session_breaks_get_a_session_each(tmp_path, monkeypatch):
    # the machinery that runs one collected session for many students fails
    # at the second student: it and the rest are graded as before, a session each
    from pytest_autograd_grader.classroom import pool, runner, session_loop
    from pytest_autograd_grader.classroom.students import checks_sha256, find_students

    checks, subs = _make_class(tmp_path)
    real = session_loop._take_student

    def breaks_at_ben(config, student, seed, private):
        if student.id == "ben":
            raise RuntimeError("broken")
        return real(config, student, seed, private)

    monkeypatch.setattr(session_loop, "_take_student", breaks_at_ben)
    students = [s for s in find_students(subs) if s.id in ("ann", "ben", "cat")]
    settings = runner.ClassSettings(
        checks=checks, out=tmp_path / "out", checks_sha256=checks_sha256(checks), timeout=3.0
    )
    settings.out.mkdir()
    done = []
    pool.grade_all(settings, [(s, 5) for s in students], 1, done.append)
    assert {o.student: o.status for o in done} == {"ann": "graded", "ben": "graded", "cat": "not attempted"}
    reports = _reports(tmp_path / "out")
    assert reports["ann"]["percent"] == 100.0 and 0 < reports["ben"]["percent"] < 100.0


def test_checks_whose_options_pytest_refuses_cost_each_student_a_clear_error(tmp_path):
    checks, subs = _make_class(tmp_path)
    (checks / "pytest.ini").write_text("[pytest]\naddopts = --grade-memory=lots\n")
    _class(
        "--checks",
        str(checks),
        "--submissions",
        str(subs),
        "--out",
        str(tmp_path / "out"),
        "--only",
        "ann",
        "ben",
        "-j",
        "1",
        check=False,
    )
    reports = _reports(tmp_path / "out")
    assert sorted(reports) == ["ann", "ben"]
    for report in reports.values():
        assert report["status"] == "error"
        assert "pytest exit code 4" in report["error"] and "--grade-memory" in report["error"], report["error"]


def test_a_checks_file_that_does_not_collect_is_in_every_students_report(tmp_path):
    # the checks are collected once per worker: each student's gradebook
    # still holds the file that failed, as their lone run's would
    checks, subs = _make_class(tmp_path)
    (checks / "test_broken.py").write_text("def test_oops(:\n")
    _class(
        "--checks",
        str(checks),
        "--submissions",
        str(subs),
        "--out",
        str(tmp_path / "out"),
        "--only",
        "ann",
        "ben",
        "-j",
        "1",
    )
    reports = _reports(tmp_path / "out")
    for name in ("ann", "ben"):
        broken = [c for c in reports[name]["checks"] if c["id"].startswith("test_broken.py")]
        assert [c["status"] for c in broken] == ["error"], name
        assert any(c["status"] == "passed" for c in reports[name]["checks"]), name


def test_each_worker_runs_on_a_cpu_of_its_own_only_when_there_is_one_each(monkeypatch):
    from pytest_autograd_grader.classroom import pool

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {4, 6})  # a job given two cores
    assert pool._cpus(2) == [{4}, {6}]
    assert pool._cpus(1) == [None]  # the idle core helps a lone worker more
    assert pool._cpus(3) == [None, None, None]  # the kernel spreads more workers than cores best


def test_the_default_jobs_are_the_cpus_the_run_may_use_not_the_machines(tmp_path, monkeypatch):
    from pytest_autograd_grader.classroom import pool

    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {4, 6, 8, 10})  # taskset, a Slurm job's cores
    assert pool.usable_cpus(cgroup) == 4
    (cgroup / "cpu.max").write_text("max 100000\n")  # cgroup v2, no quota
    assert pool.usable_cpus(cgroup) == 4
    (cgroup / "cpu.max").write_text("150000 100000\n")  # a container given 1.5 CPUs
    assert pool.usable_cpus(cgroup) == 2
    (cgroup / "cpu.max").unlink()
    (cgroup / "cpu").mkdir()
    (cgroup / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    (cgroup / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")  # cgroup v1, no quota
    assert pool.usable_cpus(cgroup) == 4
    (cgroup / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    assert pool.usable_cpus(cgroup) == 1
    (cgroup / "cpu" / "cpu.cfs_quota_us").write_text("garbage\n")
    assert pool.usable_cpus(cgroup) == 4


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")
def test_a_run_kept_to_one_cpu_grades_on_one_worker(tmp_path):
    # os.cpu_count() counts the whole machine: on a shared server a run
    # given one core started a worker for every core it has
    checks, subs = _make_class(tmp_path)
    one = min(os.sched_getaffinity(0))
    result = _class(
        "--checks",
        str(checks),
        "--submissions",
        str(subs),
        "--out",
        str(tmp_path / "out"),
        "--only",
        "cat",
        preexec_fn=lambda: os.sched_setaffinity(0, {one}),
    )
    assert "grading 1 student on 1 worker (" in result.stderr  # the singular, not "1 students"
    assert "graded 1 student in " in result.stderr and " 0 errors;" in result.stderr
    assert _reports(tmp_path / "out")["cat"]["status"] == "not attempted"


def test_a_report_that_cannot_be_written_costs_its_student_an_error_not_the_run(tmp_path, monkeypatch):
    # OUT removed or full while the class is graded: the student is named
    # with the reason at once (the parent used to wait --student-timeout for it)
    from pytest_autograd_grader.classroom import pool, runner
    from pytest_autograd_grader.classroom.students import checks_sha256, find_students

    checks, subs = _make_class(tmp_path)
    real = runner.write_report

    def disk_full_at_ben(out, report):
        if report["student"] == "ben":
            raise OSError(28, "No space left on device")
        return real(out, report)

    monkeypatch.setattr(runner, "write_report", disk_full_at_ben)
    students = [s for s in find_students(subs) if s.id in ("ann", "ben", "cat")]
    settings = runner.ClassSettings(
        checks=checks, out=tmp_path / "out", checks_sha256=checks_sha256(checks), timeout=3.0, student_timeout=60.0
    )
    settings.out.mkdir()
    done = []
    started = time.monotonic()
    pool.grade_all(settings, [(s, 5) for s in students], 1, done.append)
    assert time.monotonic() - started < 40
    outcomes = {o.student: o for o in done}
    assert outcomes["ann"].status == "graded" and outcomes["cat"].status == "not attempted"
    assert outcomes["ben"].status == "error"
    assert (
        f"the report could not be written to {settings.out} (OSError: [Errno 28] No space left on device)"
        in outcomes["ben"].error
    )


def test_a_class_run_stopped_with_sigterm_keeps_what_it_finished_and_leaves_nothing_running(tmp_path):
    checks, subs = _make_class(tmp_path)
    (subs / "cat" / "exercises" / "graph.py").write_text("while True:\n    pass\n")  # still grading when stopped
    out = tmp_path / "out"
    env = _own_tmp(tmp_path)
    run = subprocess.Popen(
        class_command(checks, subs, out, "-j", "1", "--timeout=20"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not {"ann", "ben"} <= set(_reports(out)):
        time.sleep(0.2)
    run.send_signal(signal.SIGTERM)  # the parent only, as kill or a scheduler's cancel would
    _, said = run.communicate(timeout=60)
    assert run.returncode == 130, said
    assert "interrupted: every student graded so far is in the reports" in said
    assert {"ann", "ben"} <= set(_reports(out))
    assert list((tmp_path / "tmp").iterdir()) == []
    assert _processes_in(tmp_path / "tmp") == [] and _processes_in(out) == []


def test_workers_end_with_a_parent_killed_outright(tmp_path):
    checks, subs = _make_class(tmp_path)
    out = tmp_path / "out"
    env = _own_tmp(tmp_path)
    run = subprocess.Popen(
        class_command(checks, subs, out, "-j", "2", "--timeout=3"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _reports(out):
        time.sleep(0.2)
    run.kill()  # the parent only: the OOM killer's way
    run.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (_processes_in(out) or _processes_in(tmp_path / "tmp")):
        time.sleep(0.2)
    assert _processes_in(out) == []  # no worker waits on for students that never come
    assert _processes_in(tmp_path / "tmp") == []  # nor holds its sandboxes

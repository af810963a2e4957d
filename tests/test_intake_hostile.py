"""A class export is hostile input (issue 40): exports laid out as Canvas,
Moodle, Gradescope and plain folders name things, with names a student
chose to reach the checks, a classmate's folder, or the whole run. Every
name is data: each student's folder is one the grader makes under
OUT/.intake, private to the grader; an export is read as one format, what
does not fit it is named; a broken or oversized upload costs only its own
student, within one budget however deeply it nests."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import subprocess
import unicodedata
from pathlib import Path

import pytest
from conftest import COURSE_FILES, EXERCISES, class_command, copy_course_files
from test_intake import GRAPH, LEAF, layout, make_zip, zipped

from pytest_autograd_grader.classroom.intake import IntakeError, gather
from pytest_autograd_grader.classroom.students import checks_sha256, find_students
from pytest_autograd_grader.sandbox.staging import MAX_BYTES


def everything_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def checks_folder(root: Path) -> Path:
    checks = root / "checks"
    checks.mkdir()
    (checks / "test_graph.py").write_text((EXERCISES / "test_graph.py").read_text())
    copy_course_files(checks)
    (checks / "pytest.ini").write_text("[pytest]\n")
    return checks


def test_names_holding_path_parts_stay_data_in_every_format(tmp_path):
    """A submitter name or file name that holds path parts is data: files
    land only in the student's own folder under OUT/.intake."""
    checks = checks_folder(tmp_path)
    before = checks_sha256(checks)
    evil = "import pytest\n@pytest.fixture(autouse=True)\ndef planted(): pass\n"
    metadata = (
        "submission_111:\n  :submitters:\n  - :name: ../../../checks/planted\n    :sid: '1'\n"
        "submission_222:\n  :submitters:\n  - :name: /abs/checks\n    :sid: '2'\n  - :name: ..\n    :sid: '3'\n"
    )
    exports = {
        "gradescope": {
            "export/submission_metadata.yml": metadata,
            "export/submission_111/../../../checks/conftest.py": evil,
            "export/submission_111/test_evil.py": evil,
            "export/submission_111/leaf.py": LEAF,
            "export/submission_222/test_evil.py": evil,
        },
        "canvas": {
            "alice_111_444_..\\..\\..\\checks\\conftest.py": evil,
            "alice_111_445_leaf.py": LEAF,
            "checks_222_446_/abs/test_evil.py": evil,
        },
        "moodle": {
            "Mallory_9_assignsubmission_file/../../../checks/conftest.py": evil,
            "Eve_7_assignsubmission_file_..\\..\\checks\\conftest.py": evil,
            "..\\checks_8_assignsubmission_file_leaf.py": LEAF,
        },
    }
    for fmt, files in exports.items():
        out = tmp_path / f"out-{fmt}"
        export = make_zip(tmp_path / f"{fmt}.zip", files)
        existing = everything_under(tmp_path)
        intake = gather(export, out)
        assert intake.export == fmt
        students = out / ".intake" / "students"
        for path in everything_under(tmp_path) - existing:
            # inside a folder the grader made for a student, under OUT/.intake
            assert path == out or path.is_relative_to(out / ".intake"), (fmt, path)
            if path.is_relative_to(students) and path != students:
                assert path.relative_to(students).parts[0] in intake.handed, (fmt, path)
        assert {p.name for p in checks.rglob("*")} == {"test_graph.py", "pytest.ini", *COURSE_FILES}
        assert checks_sha256(checks) == before
        refused = [p for h in intake.handed.values() for p in h.problems]
        assert any("conftest.py is not written: its name leaves its folder" in p for p in refused), (fmt, refused)
    # gradescope: names are only names; a group's "..": a folder of its own
    gs = gather(make_zip(tmp_path / "gs.zip", exports["gradescope"]), tmp_path / "out-gs")
    assert sorted(h.name for h in gs.handed.values()) == ["..", "../../../checks/planted", "/abs/checks"]
    assert all("/" not in folder and folder not in ("..", ".") for folder in gs.handed)


def test_the_intake_is_private_to_the_grader(tmp_path):
    os.umask(0o022)
    export = make_zip(
        tmp_path / "canvas.zip", {"alice_111_444_hw.zip": zipped({"hw/leaf.py": LEAF}), "bob_222_555_graph.py": GRAPH}
    )
    gather(export, tmp_path / "out")
    intake = tmp_path / "out" / ".intake"
    for path in [intake, *intake.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))


def test_a_moodle_file_named_like_a_classmates_stays_its_uploaders(tmp_path):
    export = make_zip(
        tmp_path / "moodle.zip",
        {
            "Alice Jones_111_assignsubmission_file_Bob Smith_222_assignsubmission_file_leaf.py": "alice's",
            "Bob Smith_222_assignsubmission_file_leaf.py": LEAF,
        },
    )
    intake = gather(export, tmp_path / "out")
    assert intake.export == "moodle"
    assert layout(intake.graded / "Alice Jones_111") == {"Bob Smith_222_assignsubmission_file_leaf.py"}
    assert (intake.graded / "Bob Smith_222" / "leaf.py").read_text() == LEAF
    assert {h.lms_id for h in intake.handed.values()} == {"111", "222"}


def test_a_canvas_file_named_like_a_classmates_stays_its_uploaders(tmp_path):
    export = make_zip(
        tmp_path / "canvas.zip",
        {
            "alice_111_444_bob_222_333_leaf.py": "alice's",
            "bob_222_333_leaf.py": LEAF,
        },
    )
    intake = gather(export, tmp_path / "out")
    assert layout(intake.graded / "alice") == {"bob_222_333_leaf.py"}
    assert (intake.graded / "bob" / "leaf.py").read_text() == LEAF
    assert (intake.handed["alice"].lms_id, intake.handed["alice"].submission_id) == ("111", "444")


def test_one_upload_does_not_change_how_the_export_is_read(tmp_path):
    # a Canvas export where one student's file is named as Moodle names its files, and one stray file
    canvas = make_zip(
        tmp_path / "canvas.zip",
        {
            "alice_111_444_Mallory_9_assignsubmission_file_leaf.py": LEAF,
            "bob_222_555_leaf.py": LEAF,
            "cara_333_666_leaf.py": LEAF,
            "README.txt": "stray",
        },
    )
    intake = gather(canvas, tmp_path / "out")
    assert intake.export == "canvas" and set(intake.handed) == {"alice", "bob", "cara"}
    assert intake.skipped == [("README.txt", "unmatched")]
    # one student's many uploads whose names hold a "/" (folders in the zip) outvote no one
    canvas = make_zip(
        tmp_path / "canvas2.zip",
        {
            **{f"mallory_9_{i}_dir{i}/x.py": "x" for i in range(5)},
            "bob_222_555_leaf.py": LEAF,
            "cara_333_666_leaf.py": LEAF,
        },
    )
    intake = gather(canvas, tmp_path / "out-many")
    assert intake.export == "canvas" and set(intake.handed) == {"mallory", "bob", "cara"}
    assert layout(intake.graded / "mallory") == {f"dir{i}/x.py" for i in range(5)}
    # a Moodle export where a student uploaded a file named as Canvas names its files
    moodle = make_zip(
        tmp_path / "moodle.zip",
        {
            "Alice Jones_111_assignsubmission_file_bob_222_333_leaf.py": LEAF,
            "Bob Smith_222_assignsubmission_file_leaf.py": LEAF,
        },
    )
    intake = gather(moodle, tmp_path / "out2")
    assert intake.export == "moodle" and set(intake.handed) == {"Alice Jones_111", "Bob Smith_222"}
    # Gradescope's metadata that is no mapping of folders: refused with what is wrong, not read as plain folders
    gradescope = make_zip(tmp_path / "gs.zip", {"submission_metadata.yml": "- a list\n", "submission_1/leaf.py": LEAF})
    with pytest.raises(IntakeError, match="not a mapping of submission folders"):
        gather(gradescope, tmp_path / "out-gs")
    # as many entries of one format as of another: refused, not guessed
    mixed = make_zip(
        tmp_path / "mixed.zip", {"alice_111_444_leaf.py": LEAF, "Bob Smith_222_assignsubmission_file_leaf.py": LEAF}
    )
    with pytest.raises(IntakeError, match="canvas export .* moodle export|moodle export .* canvas export"):
        gather(mixed, tmp_path / "out3")


def test_limits_are_per_student_across_every_nesting_level(tmp_path):
    # two zips inside a zip, each under the limit alone, over it together
    half = MAX_BYTES // 2 + (1 << 20)
    inner = zipped({"zeros.bin": bytes(half)})
    nest = zipped({"a.zip": inner, "b.zip": inner, "leaf.py": LEAF})
    # 42.zip-like: zips inside zips inside zips...
    deep = zipped({"leaf.py": LEAF})
    for level in range(6):
        deep = zipped({f"level{level}.zip": deep, f"level{level}.zip.copy.zip": deep})
    export = make_zip(
        tmp_path / "canvas.zip",
        {
            "alice_111_444_hw.zip": nest,
            "mallory_222_555_42.zip": deep,
            "bob_333_666_leaf.py": LEAF,
        },
    )
    intake = gather(export, tmp_path / "out")
    assert f"more than 10000 files or {MAX_BYTES >> 20} MB once unpacked" in intake.handed["alice"].problems[0]
    assert "zips inside zips more than 2 deep" in intake.handed["mallory"].problems[0]
    assert layout(intake.graded / "bob") == {"leaf.py"}
    students = {s.id: s for s in find_students(intake.graded, [], intake.handed)}
    assert students["bob"].has_modules and not students["mallory"].has_modules
    total = sum(p.stat().st_size for p in (intake.graded / "alice").rglob("*") if p.is_file())
    assert total <= MAX_BYTES


@pytest.mark.parametrize("fmt", ["canvas", "moodle", "gradescope", "folders"])
def test_a_student_who_handed_in_everything_is_found_however_it_was_wrapped(tmp_path, fmt):
    wrapped = {
        "zipped_folder": zipped({"myhw/leaf.py": LEAF}),
        "repository": zipped({"hw1-main/README.md": "x", "hw1-main/exercises/leaf.py": LEAF}),
        "nested": zipped({"outer/inner.zip": zipped({"inner/leaf.py": LEAF})}),
        "macos": zipped({"hw/leaf.py": LEAF, "__MACOSX/hw/._leaf.py": "junk", "hw/.DS_Store": "junk"}),
    }
    names = {
        "canvas": lambda i, who: f"{who}_{i}_{i + 100}_{who}.zip",
        "moodle": lambda i, who: f"{who}_{i}_assignsubmission_file/{who}.zip",
        "gradescope": lambda i, who: f"submission_{i}/{who}.zip",
        "folders": lambda i, who: f"{who}/submission.zip",
    }
    files = {names[fmt](i, who): data for i, (who, data) in enumerate(wrapped.items(), start=1)}
    if fmt == "gradescope":
        files["submission_metadata.yml"] = "".join(
            f"submission_{i}:\n  :submitters:\n  - :name: {who}\n    :sid: '{i}'\n"
            for i, who in enumerate(wrapped, start=1)
        )
    intake = gather(make_zip(tmp_path / "export.zip", files), tmp_path / "out")
    assert intake.export == fmt
    students = find_students(intake.graded, [], intake.handed)
    assert len(students) == 4
    for student in students:
        assert (student.modules / "leaf.py").read_text() == LEAF, (student.id, layout(intake.graded / student.folder))


def test_the_readmes_cara_submission_zip_is_found(tmp_path):
    subs = tmp_path / "submissions"
    for who, inside in {"alice": None, "cara": {"exercises/leaf.py": LEAF}, "dan": {"dan-hw/leaf.py": LEAF}}.items():
        (subs / who).mkdir(parents=True)
        if inside is None:
            (subs / who / "leaf.py").write_text(LEAF)
        else:
            (subs / who / "submission.zip").write_bytes(zipped(inside))
    (subs / "bob.zip").write_bytes(zipped({"bob/leaf.py": LEAF}))
    intake = gather(subs, tmp_path / "out")
    students = {s.id: s for s in find_students(intake.graded, [], intake.handed)}
    assert set(students) == {"alice", "bob", "cara", "dan"}
    assert all(s.has_modules and (s.modules / "leaf.py").is_file() for s in students.values())


def test_a_student_with_no_module_is_told_what_the_upload_held(tmp_path):
    export = make_zip(
        tmp_path / "canvas.zip",
        {"alice_111_444_a.txt": "notes", "alice_111_445_b.pdf": b"%PDF", "bob_222_555_leaf.py": LEAF},
    )
    intake = gather(export, tmp_path / "out")
    students = {s.id: s for s in find_students(intake.graded, [], intake.handed)}
    assert students["alice"].handed["intake_problems"] == [
        "no .py or .ipynb file found where the grader looks (the folder itself, its exercises/, or the one folder "
        "that holds them); the upload held: a.txt, b.pdf"
    ]
    assert "intake_problems" not in students["bob"].handed


def test_names_that_differ_in_case_or_unicode_form_get_folders_of_their_own(tmp_path):
    nfc, nfd = "josé", unicodedata.normalize("NFD", "josé")
    canvas = make_zip(tmp_path / "canvas.zip", {f"{nfc}_1_10_leaf.py": "# one", f"{nfd}_2_20_leaf.py": "# two"})
    intake = gather(canvas, tmp_path / "out")
    folders = sorted(intake.handed)
    assert len({unicodedata.normalize("NFC", f).casefold() for f in folders}) == 2
    assert all(unicodedata.is_normalized("NFC", f) for f in folders)
    assert {(intake.graded / f / "leaf.py").read_text() for f in folders} == {"# one", "# two"}
    subs = tmp_path / "plain"
    subs.mkdir()
    for name, text in {"Ann.zip": "# Ann", "ann.zip": "# ann", f"{nfc}.zip": "# nfc", f"{nfd}.zip": "# nfd"}.items():
        (subs / name).write_bytes(zipped({"leaf.py": text}))
    intake = gather(subs, tmp_path / "out2")
    keys = {unicodedata.normalize("NFC", f).casefold() for f in intake.handed}
    assert len(keys) == 4
    students = find_students(intake.graded, [], intake.handed)
    assert len({s.id.casefold() for s in students}) == 4
    assert sorted((s.modules / "leaf.py").read_text() for s in students) == ["# Ann", "# ann", "# nfc", "# nfd"]


def test_one_unwritable_name_costs_only_its_file(tmp_path):
    long_name = "é" * 150 + ".py"  # 300 bytes of UTF-8: more than any filesystem's name
    deep = "/".join(["d"] * 40) + "/leaf.py"
    export = make_zip(
        tmp_path / "canvas.zip",
        {
            f"alice_111_444_{long_name}": LEAF,
            "alice_111_445_leaf.py": LEAF,
            "bob_222_555_hw.zip": zipped({deep: LEAF, "graph.py": GRAPH}),
        },
    )
    intake = gather(export, tmp_path / "out")
    assert layout(intake.graded / "alice") == {"leaf.py"}
    assert (
        long_name in intake.handed["alice"].problems[0] and "could not be written" in intake.handed["alice"].problems[0]
    )
    assert layout(intake.graded / "bob") == {"hw/graph.py"}
    assert "is not written" in intake.handed["bob"].problems[0]


def test_a_hostile_class_export_is_graded_end_to_end(tmp_path):
    """The real CLI on one Canvas export with every kind of hostile name:
    the run finishes, each honest student is graded, each broken upload
    named, the gradebook written, the checks untouched."""
    checks = checks_folder(tmp_path)
    before = checks_sha256(checks)
    export = make_zip(
        tmp_path / "submissions.zip",
        {
            "alice_111_444_graph.py": GRAPH,
            "bob_222_555_..\\..\\..\\checks\\test_planted.py": "def test_planted():\n    assert True\n",
            "bob_222_556_hw.zip": zipped({"bob-main/exercises/graph.py": GRAPH}),
            f"cara_333_666_{'ü' * 200}.py": GRAPH,
            "cara_333_667_graph.py": GRAPH,
            "dan_444_777_a.txt": "no code",
            "stray.txt": "not a student's",
        },
    )
    out = tmp_path / "out"
    run = subprocess.run(
        class_command(checks, export, out, "-j", "1", "--timeout=5"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert checks_sha256(checks) == before
    reports = {r["name"]: r for r in (json.loads(p.read_text()) for p in out.glob("*.json")) if "student" in r}
    assert {n: r["status"] for n, r in reports.items()} == {
        "alice": "graded",
        "bob": "graded",
        "cara": "graded",
        "dan": "missing",
    }
    assert all(r["percent"] == 100.0 for n, r in reports.items() if n != "dan")
    assert not any("planted" in c["id"] for r in reports.values() for c in r["checks"])
    assert (reports["bob"]["lms_id"], reports["bob"]["submission_id"]) == ("222", "556")
    assert "its name leaves its folder" in reports["bob"]["intake_problems"][0]
    assert "could not be written" in reports["cara"]["intake_problems"][0]
    assert reports["dan"]["intake_problems"][0].endswith("; the upload held: a.txt")
    assert "not graded: stray.txt is not named as a canvas export names a student's upload" in run.stderr
    run_info = json.loads((out / "class-run.json").read_text())
    assert run_info["intake"]["skipped"] == [["stray.txt", "unmatched"]]
    assert set(run_info["intake"]["problems"]) == {"bob", "cara", "dan"}
    rows = list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8"))))
    assert len(rows) == 4


def test_a_gradescope_submitter_named_as_a_path_cannot_plant_a_check(tmp_path):
    """The issue's first attack, end to end: a submitter whose name climbs
    into the checks folder, with a check of their own that would pass
    everything. It stays a file of that student's, never collected."""
    checks = checks_folder(tmp_path)
    before = checks_sha256(checks)
    planted = "def test_planted():\n    assert True\n"
    depth = "../" * 3  # OUT/.intake/students/<name>: three up from the students folder is tmp_path
    metadata = (
        f"submission_1:\n  :submitters:\n  - :name: {depth}checks/planted\n    :sid: '7'\n"
        "submission_2:\n  :submitters:\n  - :name: Ann Lee\n    :sid: '8'\n"
    )
    export = make_zip(
        tmp_path / "gradescope.zip",
        {
            "assignment_1_export/submission_metadata.yml": metadata,
            "assignment_1_export/submission_1/test_planted.py": planted,
            "assignment_1_export/submission_1/graph.py": (EXERCISES / "graph.py").read_text(),
            "assignment_1_export/submission_2/graph.py": GRAPH,
        },
    )
    out = tmp_path / "out"
    run = subprocess.run(
        class_command(checks, export, out, "-j", "1", "--timeout=5"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert checks_sha256(checks) == before and not (tmp_path / "checks" / "planted_1").exists()
    reports = {r["name"]: r for r in (json.loads(p.read_text()) for p in out.glob("*.json")) if "student" in r}
    assert {n: (r["status"], r["lms"], r["lms_id"], r["submission_id"]) for n, r in reports.items()} == {
        f"{depth}checks/planted": ("not attempted", "gradescope", "7", "1"),
        "Ann Lee": ("graded", "gradescope", "8", "2"),
    }
    assert not any("planted" in c["id"] for r in reports.values() for c in r["checks"])


def test_the_class_run_refuses_when_the_checks_change_during_intake(tmp_path, monkeypatch, capsys):
    from pytest_autograd_grader.classroom import intake as intake_package
    from pytest_autograd_grader.cli import main

    checks = checks_folder(tmp_path)
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    real_gather = intake_package.gather

    def gather_that_plants(source, out):
        (checks / "test_planted.py").write_text("def test_planted(): pass\n")
        return real_gather(source, out)

    monkeypatch.setattr(intake_package, "gather", gather_that_plants)
    umask = os.umask(0o022)
    try:
        code = main(["class", "--checks", str(checks), "--submissions", str(subs), "--out", str(tmp_path / "out")])
        # the run's own umask (077) ends with it: a caller's later files are not made private
        assert os.umask(umask) == 0o022
    finally:
        os.umask(umask)
    assert code == 2
    assert (tmp_path / "out").stat().st_mode & 0o077 == 0
    assert "changed while the submissions were laid out, so nothing is graded" in capsys.readouterr().err
    assert not (tmp_path / "out" / "gradebook.csv").exists()

"""Submissions as LMSs hand them out (classroom/intake/): each bulk export
laid out one folder per student, with the names the LMS spells (accents
kept), late uploads marked and the LMS's ids kept; students' zips unpacked
within the sandbox's limits; hostile zips written nowhere outside their
folder. One export is graded end to end by `autograd-grader class`."""

from __future__ import annotations

import csv
import io
import json
import shutil
import stat
import subprocess
import unicodedata
import zipfile
from pathlib import Path

import pytest
from conftest import EXERCISES, SOLUTIONS, class_command, copy_course_files

from pytest_autograd_grader.classroom.intake import gather
from pytest_autograd_grader.classroom.intake.unpack import expand
from pytest_autograd_grader.classroom.intake.write import Budget, UnpackError
from pytest_autograd_grader.sandbox.staging import MAX_BYTES, MAX_FILES

LEAF = (SOLUTIONS / "leaf.py").read_text()
GRAPH = (SOLUTIONS / "graph.py").read_text()


def make_zip(path: Path, files: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, data in files.items():
            zipped.writestr(name, data)
    return path


def zipped(files: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    make_zip(buffer, files)
    return buffer.getvalue()


def parts(intake):
    return intake.graded, intake.export, intake.handed, intake.skipped


def layout(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_a_canvas_download_gives_each_student_a_folder_with_their_canvas_id(tmp_path):
    export = make_zip(
        tmp_path / "submissions.zip",
        {
            "garcíajosé_5678_901_leaf.py": LEAF,
            "garcíajosé_5678_902_graph.py": GRAPH,
            # a late upload, and a file Canvas renamed because it was uploaded twice
            "smithbob_late_1234_555_leaf-1.py": LEAF,
            # the student zipped their repository: a zip inside the download
            "nguyễnan_4321_777_submission.zip": zipped({"hw/exercises/leaf.py": LEAF}),
        },
    )
    graded, export_name, handed, _ = parts(gather(export, tmp_path / "out"))
    assert export_name == "canvas"
    assert layout(graded / "garcíajosé") == {"leaf.py", "graph.py"}
    assert layout(graded / "smithbob") == {"leaf.py"}
    # the folders the zip wraps its contents in are stripped: find_modules looks one folder deep
    assert layout(graded / "nguyễnan") == {"submission/leaf.py"}
    assert handed["smithbob"].late and not handed["garcíajosé"].late
    assert (handed["garcíajosé"].lms_id, handed["garcíajosé"].lms) == ("5678", "canvas")


def test_a_moodle_download_in_folders_or_flat(tmp_path):
    export = make_zip(
        tmp_path / "moodle.zip",
        {
            # Moodle 4 (no trailing _), Moodle 3 (trailing _), a flat file, and online text that is no code
            "José García_123456_assignsubmission_file/leaf.py": LEAF,
            "Zoë Ng_654321_assignsubmission_file_/exercises/leaf.py": LEAF,
            "Zoë Ng_654321_assignsubmission_onlinetext_/onlinetext.html": "<p>see my code</p>",
            "Ann Lee_222222_assignsubmission_file_graph.py": GRAPH,
        },
    )
    graded, export_name, handed, _ = parts(gather(export, tmp_path / "out"))
    assert export_name == "moodle"
    assert layout(graded / "José García_123456") == {"leaf.py"}
    assert layout(graded / "Zoë Ng_654321") == {"exercises/leaf.py"}
    assert layout(graded / "Ann Lee_222222") == {"graph.py"}
    assert handed["Zoë Ng_654321"].name == "Zoë Ng" and handed["Zoë Ng_654321"].lms_id == "654321"


def test_a_gradescope_export_reads_its_metadata_and_grades_a_group_for_each_member(tmp_path):
    metadata = (
        "submission_111:\n"
        "  :submitters:\n"
        "  - :name: José García\n"
        "    :sid: '9001'\n"
        "    :email: jose@example.edu\n"
        "  :created_at: 2026-03-01 10:00:00.000000000 -08:00\n"
        "  :score: 0.0\n"
        "submission_222:\n"
        "  :submitters:\n"
        "  - :name: Zoë Ng\n"
        "    :sid: '9002'\n"
        "  - :name: Ann Lee\n"
        "    :sid: '9003'\n"
        "  :created_at: 2026-03-02 23:59:59.000000000 -08:00\n"
    )
    export = make_zip(
        tmp_path / "gradescope.zip",
        {
            "assignment_987_export/submission_metadata.yml": metadata,
            "assignment_987_export/submission_111/leaf.py": LEAF,
            "assignment_987_export/submission_222/exercises/graph.py": GRAPH,
        },
    )
    graded, export_name, handed, _ = parts(gather(export, tmp_path / "out"))
    assert export_name == "gradescope"
    assert {h.name for h in handed.values()} == {"José García", "Zoë Ng", "Ann Lee"}
    assert layout(graded / "Zoë Ng_222") == layout(graded / "Ann Lee_222") == {"exercises/graph.py"}
    assert handed["José García_111"].lms_id == "9001"


def test_a_github_classroom_clone_is_graded_where_it_is_by_username(tmp_path):
    clone = tmp_path / "hw1-submissions"
    for user in ("octocat", "mónica"):
        (clone / f"hw1-{user}" / ".git").mkdir(parents=True)
        (clone / f"hw1-{user}" / "exercises").mkdir()
        (clone / f"hw1-{user}" / "exercises" / "leaf.py").write_text(LEAF)
    graded, export_name, handed, _ = parts(gather(clone, tmp_path / "out"))
    assert (graded, export_name) == (clone, "github-classroom")
    assert {h.name for h in handed.values()} == {"octocat", "mónica"}
    assert not (tmp_path / "out" / ".intake" / "students").exists()  # nothing copied


def test_plain_folders_and_zips_per_student(tmp_path):
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    (subs / "alice" / "leaf.py").write_text(LEAF)
    (subs / "bob.zip").write_bytes(zipped({"leaf.py": LEAF}))
    (subs / "cara").mkdir()
    (subs / "cara" / "submission.zip").write_bytes(zipped({"exercises/leaf.py": LEAF}))
    (subs / "dan").mkdir()
    (subs / "dan" / "broken.zip").write_bytes(b"PK\x03\x04 not really")
    graded, export_name, handed, skipped = parts(gather(subs, tmp_path / "out"))
    assert export_name == "folders"
    assert layout(graded / "alice") == {"leaf.py"}
    assert layout(graded / "bob") == {"leaf.py"}
    assert layout(graded / "cara") == {"submission/leaf.py"}
    assert layout(graded / "dan") == set() and "broken.zip could not be unpacked" in handed["dan"].problems[0]
    (subs / "notes.txt").write_text("not a submission")
    (subs / "eve").symlink_to(subs / "alice")  # a link could lead the grader to another student's work
    assert parts(gather(subs, tmp_path / "out"))[3] == [("eve", "link"), ("notes.txt", "file")]
    # a folder of plain folders is graded where it is, nothing copied
    plain = tmp_path / "plain"
    shutil.copytree(subs / "alice", plain / "alice")
    assert parts(gather(plain, tmp_path / "out2")) == (plain, "folders", {}, [])


def test_hostile_zips_write_nothing_outside_their_folder(tmp_path):
    into = tmp_path / "into"
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zipped_:
        zipped_.writestr("../escaped.py", "x = 1")
        zipped_.writestr("/abs/escaped.py", "x = 1")
        zipped_.writestr("ok/leaf.py", LEAF)
        link = zipfile.ZipInfo("ok/link.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zipped_.writestr(link, "/etc/passwd")
    problems = expand(evil, into, Budget())
    assert layout(into) == {"leaf.py"} and not (tmp_path / "escaped.py").exists()
    assert len(problems) == 3 and "ok/link.py is a symbolic link" in problems[2]
    assert not any(p.is_symlink() for p in into.rglob("*"))
    # more bytes than the sandbox stages, whatever the zip declares: zeros compress a thousandfold
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zipped_:
        with zipped_.open("zeros.py", "w") as sink:
            for _ in range((MAX_BYTES >> 20) + 1):
                sink.write(bytes(1 << 20))
    with pytest.raises(UnpackError, match=f"more than {MAX_FILES} files or {MAX_BYTES >> 20} MB"):
        expand(bomb, tmp_path / "bombed", Budget())
    many = make_zip(tmp_path / "many.zip", {f"f{i}.py": "" for i in range(MAX_FILES + 1)})
    with pytest.raises(UnpackError, match="more than"):
        expand(many, tmp_path / "many", Budget())
    truncated = tmp_path / "not.zip"
    truncated.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(UnpackError, match="not a zip that can be read"):
        expand(truncated, tmp_path / "x", Budget())


def test_a_canvas_download_is_graded_end_to_end_with_its_names_ids_and_late_marks(tmp_path):
    checks = tmp_path / "checks"
    checks.mkdir()
    shutil.copy(EXERCISES / "test_graph.py", checks)
    copy_course_files(checks)
    (checks / "pytest.ini").write_text("[pytest]\n")
    decomposed = unicodedata.normalize("NFD", "garcíajosé")  # a zip made on a Mac
    export = make_zip(
        tmp_path / "submissions.zip",
        {
            f"{decomposed}_5678_901_graph.py": GRAPH,
            "smithbob_late_1234_555_graph-1.py": (EXERCISES / "graph.py").read_text(),
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
    assert "read 2 submissions from a canvas export (1 late)" in run.stderr, run.stderr
    reports = {
        json.loads(p.read_text())["name"]: json.loads(p.read_text())
        for p in out.glob("*.json")
        if p.name != "class-run.json"
    }
    assert set(reports) == {decomposed, "smithbob"}
    assert reports[decomposed]["percent"] == 100.0 and reports[decomposed]["lms_id"] == "5678"
    assert reports[decomposed]["submission_id"] == "901" and reports["smithbob"]["submission_id"] == "555"
    assert reports["smithbob"]["late"] is True and reports["smithbob"]["status"] == "not attempted"
    # Canvas's own ids came with the download: canvas.csv is importable without a roster
    rows = list(csv.reader(io.StringIO((out / "canvas.csv").read_text(encoding="utf-8"))))
    by_id = {row[1]: row for row in rows[2:]}
    assert by_id["5678"][0] == decomposed and by_id["1234"][0] == "smithbob"
    gradebook = {row["name"]: row for row in csv.DictReader(io.StringIO((out / "gradebook.csv").read_text()))}
    assert gradebook["smithbob"]["late"] == "late" and gradebook[decomposed]["late"] == ""

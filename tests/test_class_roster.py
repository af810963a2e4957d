"""The roster (``--roster``) reconciles by identity: the LMS's own ids
first, names (case, Unicode form and spacing folded) only then. Two
submissions on one roster line, one submission on two lines, or two rows
of canvas.csv with one id refuse canvas.csv (an earlier one removed), and
name both submissions; gradebook.csv and report.html are still written.
Reports are written here by hand; `autograd-grader class` refuses a
roster with one id twice before grading, and grades a class of Unicode
twins end to end."""

from __future__ import annotations

import subprocess
import unicodedata

import pytest
from conftest import EXERCISES, SOLUTIONS, class_command, copy_course_files
from test_class_outputs import CONCEPTS, read_csv, report, write

from pytest_autograd_grader.classroom.class_data import OutputsError
from pytest_autograd_grader.classroom.outputs import build_outputs
from pytest_autograd_grader.classroom.roster import read_roster

NFC = "José García"
NFD = unicodedata.normalize("NFD", NFC)


@pytest.fixture
def out(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    write(
        out / "class-run.json", {"schema": "pytest-autograd-grader-class/1", "assignment": "HW", "concepts": CONCEPTS}
    )
    return out


def hand_in(out, student, score=4.0, folder=None, **lms):
    """A graded student's report as the class runner writes it; ``lms``:
    what an export said of them (name, lms, lms_id)."""
    write(out / f"{student}.json", report(student, folder=folder, scores={"leaf": score}, **lms))


def canvas(out):
    """canvas.csv's students by their Canvas ID."""
    return {row[1]: row for row in read_csv(out / "canvas.csv")[2:]}


def gradebook(out):
    rows = read_csv(out / "gradebook.csv")
    return {row[0]: dict(zip(rows[0], row)) for row in rows[1:]}


def roster_file(tmp_path, text):
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_roster_filled_the_natural_way_matches_canvas_user_ids_before_any_name(out, tmp_path):
    # a Canvas download: the sortable name slug and the Canvas user id of each
    hand_in(out, "liddellalice", 4.0, name="liddellalice", lms="canvas", lms_id="1001")
    hand_in(out, "garcíajosé", 3.0, name=NFD, lms="canvas", lms_id="5678")
    # a student who set their display name to a classmate's, who handed in nothing
    hand_in(out, "ngzoë", 1.0, name="Ng, Zoë", lms="canvas", lms_id="6666")
    roster = roster_file(
        tmp_path,
        "name,id,sis_user_id,section\n"  # Canvas's gradebook export, Student renamed
        '"Liddell, Alice",1001,S-1,Sec 1\n'
        '"García, José",5678,S-2,Sec 1\n'
        '"Ng, Zoë",2002,S-3,Sec 2\n',
    )
    warnings = build_outputs(out, roster=roster)
    rows = canvas(out)
    assert rows["1001"] == ["Liddell, Alice", "1001", "S-1", "", "Sec 1", "4"]
    assert rows["5678"][:3] == ["García, José", "5678", "S-2"] and rows["5678"][5] == "3"
    # the name does not win her Zoë's line: Zoë is missing (0), the impostor keeps her own Canvas id
    assert rows["2002"][:3] == ["Ng, Zoë", "2002", "S-3"] and rows["2002"][5] == "0"
    assert rows["6666"][5] == "1" and rows["6666"][2] == ""
    assert any("ngzoë" in w and "1 submission matches no student" in w for w in warnings), warnings
    assert any("Ng, Zoë" in w and "missing" in w for w in warnings), warnings
    # the gradebook and the page show the roster's names
    book = gradebook(out)
    assert book["garcíajosé"]["name"] == "García, José" and book["liddellalice"]["name"] == "Liddell, Alice"
    assert "García, José" in (out / "report.html").read_text(encoding="utf-8")


def test_names_match_folded_after_ids_and_each_lms_id_finds_its_column(out, tmp_path):
    hand_in(out, "José_García", 4.0, folder=NFD)  # a zip made on a Mac
    hand_in(out, "zhang__wei", 3.0, folder="zhang  WEI")  # case and spacing
    hand_in(
        out, "Oliver", 2.0, name="Ｏｌｉｖｅｒ\u3000Twist", lms="moodle", lms_id="77"
    )  # fullwidth, no id on his line
    hand_in(out, "someone", 1.0, name="Not Her Name", lms="moodle", lms_id="42")  # Moodle's participant id
    hand_in(out, "ann", 2.5, name="Ann", lms="gradescope", lms_id="Ann@Uni.EDU")  # Gradescope: no SID, the email
    # a SID no line holds: his name finds the line that holds no SID, only his email
    hand_in(out, "bob", 0.5, name="Bob Smith", lms="gradescope", lms_id="S99")
    roster = roster_file(
        tmp_path,
        "Student,Name,ID,SIS Login ID,Email\n"
        f"{NFC},,2001,jgarcia,\n"
        ",Zhang Wei,2002,,\n"
        ",Oliver Twist,,otwist,\n"
        ",Ada Lovelace,42,,\n"
        ",Ann Example,,,ann@uni.edu\n"
        ",Bob Smith,,,bsmith@uni.edu\n",
    )
    warnings = build_outputs(out, roster=roster)
    assert not any("no student of" in w or "missing" in w for w in warnings), warnings
    book = gradebook(out)
    assert [book[s]["name"] for s in ("someone", "Oliver", "ann", "bob")] == [
        "Ada Lovelace",
        "Oliver Twist",
        "Ann Example",
        "Bob Smith",
    ]
    rows = {row[0]: row for row in read_csv(out / "canvas.csv")[2:]}
    assert rows[NFD][1:4] == ["2001", "", "jgarcia"] and rows[NFD][5] == "4"  # the name its export gave
    assert rows["Zhang Wei"][1] == "2002" and rows["Zhang Wei"][5] == "3"
    assert rows["Oliver Twist"][3] == "otwist" and rows["Ada Lovelace"][1] == "42"


TWINS = {
    # one name in two Unicode forms, a roster that names the student
    "unicode": (
        [("José_García", NFC, {}), ("José_García-2", NFD, {})],
        f'student,name,id\n{NFC},"García, José",2001\n',
    ),
    # one name in two cases
    "case": ([("alice", "alice", {}), ("ALICE-2", "ALICE", {})], "student,id\nalice,1001\n"),
    # two folders of exports that carry one Canvas user id
    "same-id": (
        [
            ("garcíajosé", "garcíajosé", {"lms": "canvas", "lms_id": "5678"}),
            ("garcíajosé-2", "garcíajosé-2", {"lms": "canvas", "lms_id": "5678"}),
        ],
        "name,id\nJosé,5678\n",
    ),
}


@pytest.mark.parametrize("twins", TWINS, ids=list(TWINS))
def test_two_submissions_on_one_roster_line_refuse_canvas_csv_and_name_both(out, tmp_path, twins):
    students, text = TWINS[twins]
    for (student, folder, lms), score in zip(students, (7.0, 0.0)):
        hand_in(out, student, score, folder=folder, **lms)
    (out / "canvas.csv").write_text("an earlier run's: Canvas must not be fed it")
    warnings = build_outputs(out, roster=roster_file(tmp_path, text))
    assert not (out / "canvas.csv").exists()
    refused = [w for w in warnings if "canvas.csv NOT written" in w]
    assert len(refused) == 1, warnings
    assert "2 submissions match line 2 of" in refused[0] and "roster.csv" in refused[0]
    for student, folder, _lms in students:
        assert f"'{folder}' ({student}.json" in refused[0], refused[0]
    if twins == "same-id":
        assert "canvas id 5678" in refused[0]
    # nothing lost: both students' grades are in the gradebook and the page
    book = gradebook(out)
    assert {book[s]["total"] for s, _, _ in students} == {"7", "0"}
    assert (out / "report.html").is_file()


def test_one_submission_two_roster_lines_match_by_name_is_refused_not_guessed(out, tmp_path):
    hand_in(out, "Wei_Zhang", 5.0, folder="Wei Zhang")
    roster = roster_file(tmp_path, "name,id\nWei Zhang,1\nWEI ZHANG,2\n")
    warnings = build_outputs(out, roster=roster)
    refused = next(w for w in warnings if "canvas.csv NOT written" in w)
    assert "'Wei Zhang' (Wei_Zhang.json) matches 2 roster lines" in refused
    assert "line 2 of" in refused and "line 3 of" in refused
    # neither of the two is listed as missing: one of them handed in
    assert set(gradebook(out)) == {"Wei_Zhang"}


def test_a_canvas_export_with_one_user_twice_is_refused_without_a_roster(out):
    hand_in(out, "smithbob", 7.0, name="smithbob", lms="canvas", lms_id="1234")
    hand_in(out, "smithbob-2", 0.0, name="smithbob", lms="canvas", lms_id="1234")
    hand_in(out, "ngzoe", 3.0, name="ngzoe", lms="canvas", lms_id="2002")
    (out / "canvas.csv").write_text("stale")
    warnings = build_outputs(out)
    assert not (out / "canvas.csv").exists()
    refused = next(w for w in warnings if "canvas.csv NOT written" in w)
    assert (
        "the submission 'smithbob' (smithbob.json, canvas id 1234) and the submission 'smithbob-2' "
        "(smithbob-2.json, canvas id 1234) would both carry ID 1234" in refused
    )
    assert "ngzoe" not in refused and set(gradebook(out)) == {"smithbob", "smithbob-2", "ngzoe"}


def test_without_a_canvas_file_a_clash_is_still_told(out, tmp_path):
    hand_in(out, "alice", folder="alice")
    hand_in(out, "Alice-2", folder="Alice")
    warnings = build_outputs(out, lms="none", roster=roster_file(tmp_path, "student,name\nalice,Alice L\n"))
    assert any("cannot be told apart" in w and "Alice-2.json" in w for w in warnings), warnings
    assert {row["name"] for row in gradebook(out).values()} == {""}  # neither takes the line's name


@pytest.mark.parametrize(
    "text, told",
    [
        ("name,id\nAlice,1001\nBob,1001\n", "lines 2 and 3 of {path} both have id '1001'"),
        ("student,sis_login_id\nalice,a@x\nbob,A@X\n", "lines 2 and 3 of {path} both have sis_login_id 'A@X'"),
        (f"student,name\n{NFC},José\n{NFD},Pepe\n", "lines 2 and 3 of {path} both have student"),
        ("section\nSec 1\n", "at least one identity (id, sis_user_id, sis_login_id, email) or name (student, name)"),
    ],
)
def test_a_roster_that_names_one_student_twice_is_refused(tmp_path, text, told):
    path = roster_file(tmp_path, text)
    with pytest.raises(OutputsError) as refused:
        read_roster(path)
    assert told.format(path=path) in str(refused.value)


def test_a_canvas_gradebook_export_reads_as_a_roster(tmp_path):
    # Canvas's Grades > Export, as it comes: its "Points Possible" line is no student
    roster = read_roster(
        roster_file(
            tmp_path,
            "Student,ID,SIS User ID,SIS Login ID,Section,HW (1)\n"
            "    Points Possible,,,,,10\n"
            '"Liddell, Alice",1001,S-1,aliddell,Sec 1,\n',
        )
    )
    assert [(e.line, e.get("name"), e.get("id"), e.get("sis_user_id")) for e in roster.entries] == [
        (3, "Liddell, Alice", "1001", "S-1")
    ]


def test_the_class_command_refuses_a_roster_with_one_id_twice_before_grading(tmp_path):
    checks, submissions = tmp_path / "checks", tmp_path / "submissions"
    (submissions / "alice").mkdir(parents=True)
    checks.mkdir()
    (checks / "test_leaf.py").write_text("def test_leaf():\n    assert True\n")
    roster = roster_file(tmp_path, "name,id\nAlice,1001\nMallory,1001\n")
    run = subprocess.run(
        class_command(checks, submissions, tmp_path / "out", "--roster", str(roster)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, run.stderr
    assert "lines 2 and 3" in run.stderr and "both have id '1001'" in run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "out").exists()  # nobody was graded


def grade_class(checks, submissions, out, roster, *more):
    return subprocess.run(
        class_command(checks, submissions, out, "--roster", str(roster), "-j", "1", "--timeout=5", *more),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_class_command_grades_unicode_twins_refuses_canvas_csv_then_writes_it_once_told_apart(tmp_path):
    checks, submissions, out = tmp_path / "checks", tmp_path / "submissions", tmp_path / "out"
    checks.mkdir()
    (checks / "test_graph.py").write_text((EXERCISES / "test_graph.py").read_text())
    copy_course_files(checks)
    (checks / "pytest.ini").write_text("[pytest]\n")
    for folder, work in ((NFC, SOLUTIONS), (NFD, EXERCISES)):  # one solved, one the stub
        (submissions / folder).mkdir(parents=True)
        (submissions / folder / "graph.py").write_text((work / "graph.py").read_text())
    run = grade_class(checks, submissions, out, roster_file(tmp_path, f'student,name,id\n{NFC},"García, José",2001\n'))
    assert run.returncode == 0, run.stderr  # every student was graded
    assert "canvas.csv NOT written" in run.stderr and "2 submissions match line 2 of" in run.stderr
    assert "(José_García.json)" in run.stderr and "(José_García-2.json)" in run.stderr
    assert not (out / "canvas.csv").exists() and (out / "report.html").is_file()
    assert {row["total"] != "0" for row in gradebook(out).values()} == {True, False}
    # told apart by their ids in OUT, as the message says: only the outputs are rebuilt
    fixed = roster_file(tmp_path, 'student,name,id\nJosé_García,"García, José",2001\nJosé_García-2,Pepe,2002\n')
    run = grade_class(checks, submissions, out, fixed, "--resume")
    assert run.returncode == 0 and "NOT written" not in run.stderr, run.stderr
    rows, book = canvas(out), gradebook(out)
    assert [rows["2001"][0], rows["2002"][0]] == ["García, José", "Pepe"]
    assert [rows["2001"][5], rows["2002"][5]] == [book["José_García"]["total"], book["José_García-2"]["total"]]
    assert book["José_García"]["name"] == "García, José" and book["José_García-2"]["name"] == "Pepe"

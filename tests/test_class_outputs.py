"""The class run's outputs (gradebook.csv, canvas.csv, report.html and the
most frequent mistakes), built from per-student reports written here by
hand: no grading runs."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import sys
import unicodedata
from html.parser import HTMLParser

import pytest

from pytest_autograd_grader.classroom import frequent_mistakes
from pytest_autograd_grader.classroom.class_data import OutputsError
from pytest_autograd_grader.classroom.outputs import build_outputs
from pytest_autograd_grader.i18n import msg
from pytest_autograd_grader.i18n.en import EN
from pytest_autograd_grader.i18n.zh import ZH

CONCEPTS = [
    {"id": "leaf", "title": "Leaf tensors", "max_score": 4.0},
    {"id": "accumulation", "title": "Gradient accumulation", "max_score": 3.0},
]
HOSTILE = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'
HYPERLINK = '=HYPERLINK("x")'


def check(concept, status="passed", feedback="", private="", hidden=False, score=None, diagnoses=()):
    """A check's report; ``diagnoses``: the (id, text) pairs its feedback gave."""
    max_score = 1.0
    return {
        "diagnoses": [{"id": key, "text": text} for key, text in diagnoses],
        "id": f"checks/test_{concept}.py::test_{len(feedback)}",
        "concept": concept,
        "score": max_score if status == "passed" else (score or 0.0),
        "max_score": max_score,
        "status": status,
        "feedback": feedback,
        "private_feedback": private,
        "hidden": hidden,
        "device": "cpu",
        "duration_s": 0.01,
        "title": "a check",
        "file": None,
        "line": None,
        "visibility": "hidden" if hidden else "visible",
    }


def report(student, status="graded", scores=None, checks=(), folder=None, **extra):
    scores = scores if scores is not None else {}
    concepts = [
        {
            "id": c["id"],
            "title": c["title"],
            "score": scores[c["id"]],
            "max_score": c["max_score"],
            "checks": 1,
            "passed": 1,
        }
        for c in CONCEPTS
        if c["id"] in scores
    ]
    score = sum(scores.values())
    return {
        "schema": "pytest-autograd-grader/1",
        "complete": status != "error",
        "score": score,
        "max_score": 7.0,
        "percent": 100.0 * score / 7.0,
        "seed": 11,
        "devices": ["cpu"],
        "isolation": "process",
        "lang": "en",
        "concepts": concepts,
        "checks": list(checks),
        "student": student,
        "folder": folder or student,
        "status": status,
        "checks_sha256": "c0ffee",
        "started": "2025-03-01T10:00:00+00:00",
        "finished": "2025-03-01T10:00:04+00:00",
        **extra,
    }


def write(path, data):
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)


@pytest.fixture
def out(tmp_path):
    """A class: alice and bob share a diagnosis (bob's only in a hidden
    check's private feedback), a student whose folder is a spreadsheet
    formula and whose feedback is hostile HTML, an error, a missing
    submission, and two files that are no student's report."""
    out = tmp_path / "out"
    out.mkdir()
    write(
        out / "class-run.json",
        {
            "schema": "pytest-autograd-grader-class/1",
            "checks": "/course/checks",
            "checks_sha256": "c0ffee",
            "salt": "pepper",
            "seed": None,
            "assignment": "Autograd HW3",
            "concepts": CONCEPTS,
            "students": ["alice", "bob", "carol", "dave", "HYPERLINK_x"],
            "started": "2025-03-01T10:00:00+00:00",
            "finished": "2025-03-01T10:01:00+00:00",
        },
    )
    twice = msg("diag.multiple", k=2, name="x")
    thrice = msg("diag.multiple", k=3, name="x")
    write(
        out / "alice.json",
        report(
            "alice",
            scores={"leaf": 4.0, "accumulation": 1.5},
            checks=[
                check("leaf"),
                check(
                    "accumulation",
                    "failed",
                    f"[Gradient accumulation] w.grad: wrong values in "
                    f"/submissions/alice/accumulation.py (alice's code)\n{twice}",
                    diagnoses=[("diag.multiple", twice)],
                ),
            ],
        ),
    )
    write(
        out / "bob.json",
        report(
            "bob",
            scores={"leaf": 2.0, "accumulation": 0.0},
            checks=[
                check(
                    "leaf",
                    "failed",
                    f"[Leaf tensors] w.grad is None\n{msg('diag.none_leaf')}",
                    diagnoses=[("diag.none_leaf", msg("diag.none_leaf"))],
                ),
                check(
                    "accumulation",
                    "failed",
                    msg("feedback.hidden", title="Gradient accumulation"),
                    private=f"[Gradient accumulation] bob printed: bob was here\n{thrice}",
                    hidden=True,
                    diagnoses=[("diag.multiple", thrice)],
                ),
            ],
        ),
    )
    write(
        out / "HYPERLINK_x.json",
        report(
            "HYPERLINK_x",
            folder=HYPERLINK,
            scores={"leaf": 0.0, "accumulation": 3.0},
            checks=[
                check(
                    "leaf",
                    "failed",
                    f"[Leaf tensors] {HOSTILE}\n{msg('diag.sign')}",
                    diagnoses=[("diag.sign", msg("diag.sign"))],
                )
            ],
        ),
    )
    write(
        out / "carol.json",
        {
            "schema": "pytest-autograd-grader/1",
            "complete": False,
            "score": 0.0,
            "max_score": 0.0,
            "percent": 0.0,
            "student": "carol",
            "folder": "carol",
            "status": "error",
            "error": "grading stopped <b>badly</b>\r\x1b[2K",
        },
    )
    write(out / "dave.json", report("dave", "missing", scores={"leaf": 0.0, "accumulation": 0.0}))
    write(out / "notes.json", {"hello": "not a report"})
    write(out / "broken.json", "{not json")
    return out


def read_csv(path):
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


class Page(HTMLParser):
    """The parts of report.html a test looks at."""

    def __init__(self, text):
        super().__init__()
        self.ids, self.images, self.tables, self.tags = {}, {}, [], []
        self.text, self.pre, self.items = [], [], []
        self._pre = self._li = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if "id" in attrs:
            self.ids[attrs["id"]] = tag
        if tag == "img":
            self.images[attrs.get("id")] = attrs
        if tag == "table":
            self.tables.append(attrs.get("id"))
        if tag == "pre":
            self._pre = []
        if tag == "li":
            self._li = []

    def handle_endtag(self, tag):
        if tag == "pre":
            self.pre.append("".join(self._pre))
            self._pre = None
        if tag == "p" and self._li is not None:
            self.items.append("".join(self._li))
            self._li = None

    def handle_data(self, data):
        self.text.append(data)
        if self._pre is not None:
            self._pre.append(data)
        if self._li is not None:
            self._li.append(data)


def test_gradebook_csv_has_a_row_per_student_with_concept_scores_and_defused_text(out):
    warnings = build_outputs(out)
    rows = read_csv(out / "gradebook.csv")
    assert rows[0] == [
        "student",
        "folder",
        "status",
        "leaf",
        "accumulation",
        "total",
        "max_score",
        "percent",
        "seed",
        "started",
        "finished",
        "name",
        "late",
        "intake_problems",
    ]
    by_id = {row[0]: dict(zip(rows[0], row)) for row in rows[1:]}
    assert [row[0] for row in rows[1:]] == ["HYPERLINK_x", "alice", "bob", "carol", "dave"]  # sorted by id
    alice = by_id["alice"]
    assert (alice["leaf"], alice["accumulation"], alice["total"], alice["max_score"], alice["percent"]) == (
        "4",
        "1.5",
        "5.5",
        "7",
        "78.57",
    )
    assert alice["status"] == "graded" and alice["seed"] == "11" and alice["finished"].startswith("2025-03-01")
    # a spreadsheet shows the folder's name as text instead of evaluating it
    assert by_id["HYPERLINK_x"]["folder"] == "'" + HYPERLINK
    # a grading error gets no grade at all (not a 0 the student did not earn)
    carol = by_id["carol"]
    assert carol["status"] == "error" and carol["leaf"] == carol["total"] == carol["percent"] == ""
    assert carol["max_score"] == "7"  # from the run's concepts
    assert not any("\x1b" in cell or "\r" in cell for row in rows for cell in row)  # shown escaped
    assert (by_id["dave"]["status"], by_id["dave"]["total"]) == ("missing", "0")
    # the two files that are no student's report are named, not fatal (and canvas.csv wants a roster)
    assert len(warnings) == 3
    assert any("notes.json" in w for w in warnings) and any("broken.json" in w for w in warnings)


def test_canvas_csv_is_canvas_import_format_and_a_roster_fills_the_ids(out, tmp_path):
    # without a roster the ids Canvas matches on are unknown: no file of made-up ones, and what to pass
    (out / "canvas.csv").write_text("an earlier run's")
    warnings = build_outputs(out)
    assert not (out / "canvas.csv").exists()
    assert any("canvas.csv not written" in w and "--roster" in w for w in warnings), warnings

    roster = tmp_path / "roster.csv"
    roster.write_text(
        "\ufeffstudent,name,id,sis_user_id,sis_login_id,section\n"
        'alice,"Liddell, Alice",1001,S-17,aliddell,Sec 2\n'
        f"{HYPERLINK},Mallory,1002,=1+1,,\n"
        "carol,Carol,1003,,,\n",
        encoding="utf-8",
    )
    warnings = build_outputs(out, assignment="Week 3", roster=roster)
    rows = read_csv(out / "canvas.csv")
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Week 3"]
    assert rows[1] == ["Points Possible", "", "", "", "", "7"]
    by_name = {row[0]: row for row in rows[2:]}
    assert by_name["Liddell, Alice"] == ["Liddell, Alice", "1001", "S-17", "aliddell", "Sec 2", "5.5"]
    assert by_name["Mallory"][1:3] == ["1002", "'=1+1"]  # matched by folder name
    assert by_name["Carol"][5] == ""  # her grading broke: Canvas leaves an empty cell ungraded
    assert by_name["bob"][1:4] == ["", "", ""]  # not in the roster: no made-up ids
    assert any("bob" in w and "dave" in w and "roster.csv" in w and "match no student" in w for w in warnings)

    bad = tmp_path / "bad.csv"
    bad.write_text("nom,section\nAlice,1\n")  # nothing to find a student by: the columns understood are named
    with pytest.raises(OutputsError, match="id, sis_user_id, sis_login_id, email.*student, name"):
        build_outputs(out, roster=bad)


def test_a_roster_gives_every_student_a_row_and_names_keep_their_accents(out, tmp_path):
    # a zip made on a Mac spells é as e and a combining accent: the same student
    decomposed = unicodedata.normalize("NFD", "José García")
    write(out / "José_García.json", report("José_García", folder=decomposed, scores={"leaf": 4.0}))
    roster = tmp_path / "roster.csv"
    roster.write_text(
        'student,name,id,sis_login_id\nJosé García,"García, José",2001,jgarcia\nzoë,"Ng, Zoë",2002,zng\n',
        encoding="utf-8",
    )
    warnings = build_outputs(out, roster=roster)
    canvas = {row[0]: row for row in read_csv(out / "canvas.csv")[2:]}
    assert canvas["García, José"][1:4] == ["2001", "", "jgarcia"] and canvas["García, José"][5] == "4"
    assert canvas["Ng, Zoë"][1:4] == ["2002", "", "zng"] and canvas["Ng, Zoë"][5] == "0"  # nothing handed in
    gradebook = {row[0]: row for row in read_csv(out / "gradebook.csv")[1:]}
    assert gradebook["zoë"][2] == "missing" and gradebook["José_García"][1] == decomposed
    # one student: the singular, never "1 student(s)" or "1 students"
    assert any("1 student of" in w and "zoë" in w and "is listed as missing" in w for w in warnings), warnings
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "zoë" in page and "José_García" in page


def test_report_html_holds_every_plot_and_table_escapes_and_anonymises(out):
    pytest.importorskip("matplotlib")  # the plots' extra: pip install 'pytest-autograd-grader[class]'
    build_outputs(out)
    text = (out / "report.html").read_text(encoding="utf-8")
    page = Page(text)
    for plot in ("plot-concepts", "plot-totals"):
        image = page.images[plot]
        assert image["alt"]
        assert image["src"].startswith("data:image/png;base64,")
        assert base64.b64decode(image["src"].split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n")
    assert {"run-info", "concept-table", "heatmap-table", "gradebook-table"} <= set(page.tables)
    assert "http://" not in text and "https://" not in text
    # one script, the page's own, which its policy allows by hash: no other could run
    assert page.tags.count("script") == 1
    script = text.split("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in text and "default-src 'none'" in text
    # hostile text stays text: in the page's words, never in its markup
    words = "".join(page.text)
    assert HOSTILE in words and "grading stopped <b>badly</b>" in words
    assert text.count("<script>") == 1 and "<img src=x" not in text and "<b>badly" not in text  # ours only
    assert "grading stopped <b>badly</b>\\x0d\\x1b[2K" in words and "\x1b" not in text  # controls shown escaped
    assert "Autograd HW3" in words and "c0ffee" in words

    # the diagnosis alice got visibly and bob only in a hidden check's private
    # feedback counts two students; where their values differ the text says "…"
    assert "2 students: " + msg("diag.multiple", k="…", name="x") in page.items
    assert "1 student: " + msg("diag.none_leaf") in page.items
    assert "1 student: " + msg("diag.sign") in page.items
    # the mistakes' examples are anonymised (the students' own sections below are the instructor's, named)
    examples = "\n".join(Page(text.split('<h2 id="gradebook"')[0]).pre)
    assert msg("diag.multiple", k=2, name="x") in examples and "a student" in examples
    for name in ("alice", "bob", "HYPERLINK"):
        assert name not in examples
    # the generic hidden-check line is not a diagnosis
    assert msg("feedback.hidden", title="Gradient accumulation") not in examples


def test_report_html_has_a_section_per_student_flags_and_every_diagnosis(out):
    write(
        out / "erin.json",
        report(
            "erin",
            scores={"leaf": 1.0, "accumulation": 0.0},
            late=True,
            name="Érin Ng",
            checks=[
                check("leaf", "timeout", "[Leaf tensors] stopped after 3 s"),
                check("leaf", "crashed", "[Leaf tensors] the worker died"),
                check(
                    "accumulation",
                    "failed",
                    msg(
                        "student.import_error",
                        file="accumulation.py",
                        type="SyntaxError",
                        message="invalid syntax",
                        where=" (line 3)",
                    ),
                ),
            ],
        ),
    )
    build_outputs(out)
    text = (out / "report.html").read_text(encoding="utf-8")
    page = Page(text)
    assert "gradebook-table" in page.tables and "class=sortable" in text
    # every student has a section with every check; the gradebook links to it
    for student in ("alice", "bob", "carol", "dave", "erin", "HYPERLINK_x"):
        assert page.ids.get(f"s-{student}") == "details", student
        assert f'href="#s-{student}"' in text
    words = "".join(page.text)
    # a hidden check's real reason is the instructor's to read here
    assert "bob printed: bob was here" in words and "hidden" in words
    # flagged in the gradebook and counted in the run's summary
    assert "1 timed out" in words and "1 crashed" in words and "1 did not import" in words and "late" in words
    assert (
        "1 student with checks that timed out, 1 whose code crashed its process, 1 whose module did not import" in words
    )
    assert "Érin Ng" in words
    # every diagnosis a concept's students got is ranked, not the first only
    assert "1 student: " + msg("diag.sign") in page.items and "1 student: " + msg("diag.none_leaf") in page.items


def test_report_without_matplotlib_says_how_to_get_the_plots(out, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    build_outputs(out)
    page = Page((out / "report.html").read_text(encoding="utf-8"))
    assert page.images == {}
    assert "pip install matplotlib tqdm" in "".join(page.text)
    assert {"run-info", "concept-table", "gradebook-table"} <= set(page.tables)


def test_no_students_still_writes_every_file(tmp_path):
    assert build_outputs(tmp_path) == [msg("classout.canvas_needs_roster")]
    assert read_csv(tmp_path / "gradebook.csv") == [
        [
            "student",
            "folder",
            "status",
            "total",
            "max_score",
            "percent",
            "seed",
            "started",
            "finished",
            "name",
            "late",
            "intake_problems",
        ]
    ]
    assert not (tmp_path / "canvas.csv").exists()  # no roster
    page = Page((tmp_path / "report.html").read_text(encoding="utf-8"))
    assert page.ids.get("no-students") == "p" and "gradebook-table" in page.tables
    with pytest.raises(OutputsError):
        build_outputs(tmp_path / "absent")


def test_frequent_mistakes_counts_distinct_students_by_id_in_both_languages():
    def student(name, *texts, status="failed", catalogue=EN):
        # each check's feedback gives one diagnosis, listed in its report
        return {
            "student": name,
            "folder": name,
            "checks": [
                check("leaf", status, text.format(key=catalogue[key]), diagnoses=[(key, catalogue[key])])
                for key, text in texts
            ],
        }

    reports = [
        # the same diagnosis twice for one student counts once
        student("s1", ("diag.sign", "{key}"), ("diag.sign", "[x] {key}")),
        student("s2", ("diag.sign", "{key}"), catalogue=ZH),  # a Chinese report: the same diagnosis
        student("s3", ("diag.transpose", "{key}"), ("diag.sign", "{key}"), status="passed"),  # passed: no mistake
        student("s4", ("diag.transpose", "s4 did {key}")),
        {
            "student": "s5",
            "checks": [
                check(
                    "leaf",
                    "failed",
                    "no diagnosis listed: not counted from its text",
                    diagnoses=[(msg("diag.sign"), "")],
                ),
                {**check("leaf", "failed"), "diagnoses": [["diag.sign"], {"id": 3, "text": "x"}]},
                {**check("leaf", "failed"), "diagnoses": "diag.sign"},
            ],
        },
    ]
    found = frequent_mistakes.frequent_mistakes(reports)
    assert [(m.message_id, m.students) for m in found["leaf"]] == [("diag.sign", 2), ("diag.transpose", 1)]
    assert found["leaf"][1].example == "a student did " + msg("diag.transpose")
    # the students' texts differ (two languages): the most common one is shown
    assert found["leaf"][0].text in (msg("diag.sign"), ZH["diag.sign"])
    # at most five per concept, the most frequent first
    keys = ("diag.sign", "diag.transpose", "diag.ones", "diag.none_leaf", "diag.backward_twice", "diag.implicit_grad")
    many = [student(f"t{i}", *((key, "{key}") for key in keys[: 1 + i % 6])) for i in range(12)]
    top = frequent_mistakes.frequent_mistakes(many)["leaf"]
    assert len(top) == 5 and top[0] == ("diag.sign", msg("diag.sign"), 12, msg("diag.sign"))
    assert [m.students for m in top] == sorted((m.students for m in top), reverse=True)


def test_a_course_diagnosis_counts_like_the_graders_and_its_values_become_gaps():
    # a course's own id and an author's plain text (its id is its text) count
    # by id; the values the students' texts differ in are shown as "…"
    def got(name, k, grad):
        text = f"Likely mistake: the hook scales {grad} by {k}; a hook returns the new gradient."
        plain = "Return the gradient from the hook."
        return {
            "student": name,
            "folder": name,
            "checks": [
                check(
                    "hooks",
                    "failed",
                    f"{name}: {text}\n{plain}",
                    diagnoses=[("diag.hooks.scaled", text), (plain, plain)],
                )
            ],
        }

    found = frequent_mistakes.frequent_mistakes(
        [got("ann", 2, "w.grad"), got("ben", 3, "w.grad"), got("cy", 4, "b.grad")]
    )
    assert [(m.message_id, m.students) for m in found["hooks"]] == [
        ("Return the gradient from the hook.", 3),
        ("diag.hooks.scaled", 3),
    ]
    assert found["hooks"][1].text == "Likely mistake: the hook scales … by …; a hook returns the new gradient."
    assert found["hooks"][1].example.startswith("a student: Likely mistake")


def test_what_the_intake_could_not_take_is_in_the_gradebook_and_the_report(tmp_path):
    # a student the intake found no module for is "missing": the instructor
    # must see why (what the upload held) where they look for the student,
    # with the upload's hostile names as text
    out = tmp_path / "out"
    out.mkdir()
    problems = [f"no .py or .ipynb file found; the upload held: {HOSTILE}", "=cmd|' /C calc'!A0 was not unpacked"]
    write(out / "erin.json", report("erin", status="missing", intake_problems=problems))
    write(out / "fay.json", report("fay", scores={"leaf": 4.0, "accumulation": 3.0}))
    build_outputs(out)
    rows = {row[0]: row for row in read_csv(out / "gradebook.csv")}
    assert rows["student"][-1] == "intake_problems"
    assert rows["erin"][-1] == "; ".join(problems) and rows["fay"][-1] == ""
    assert not rows["erin"][-1].startswith("=")
    text = (out / "report.html").read_text(encoding="utf-8")
    assert '<script>alert("pwned")' not in text and "<img src=x" not in text  # shown as text, never markup
    page = Page(text)
    shown = "".join(page.text)
    assert msg("classout.intake_problems") in shown and f"the upload held: {HOSTILE}" in shown

"""Names in the class outputs, as an instructor reads them: every script
a roster holds drawn (by the browser, in the heat map's table), long names
never clipped, the roster's names wherever a name is shown (Canvas's
gradebook export as it comes), hostile names kept text, and one of a
thing said in the singular, in English and Chinese. Reports are written
here by hand: no grading runs."""

from __future__ import annotations

import json

import pytest
from test_class_outputs import CONCEPTS, Page, read_csv, report, write

from pytest_autograd_grader.classroom import class_command, fonts
from pytest_autograd_grader.classroom.heatmap import NAME_CHARS
from pytest_autograd_grader.classroom.outputs import build_outputs
from pytest_autograd_grader.i18n import saved_language, use_language

CHINESE = "王小明"
ARABIC = "محمد عبد الله"  # written right to left
EMOJI = "Zoë 🦀✨"
LONG = "Maximiliana Alexandrina Ölçer-Нгуен van der Berg-Garcíaló y Montenegro-Villavicencio"
HOSTILE = '"><img src=x onerror=alert(1)>'
NAMES = {"wang": CHINESE, "mohammed": ARABIC, "zoe": EMOJI, "maxi": LONG, "mallory": HOSTILE}


def run_file(out, concepts=CONCEPTS):
    write(
        out / "class-run.json", {"schema": "pytest-autograd-grader-class/1", "assignment": "HW", "concepts": concepts}
    )


@pytest.fixture
def out(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    run_file(out)
    for i, (student, name) in enumerate(NAMES.items()):
        write(out / f"{student}.json", report(student, scores={"leaf": float(i), "accumulation": 1.0}, name=name))
    return out


class Heatmap(Page):
    """The heat map table's row headers: (text, title) each."""

    def __init__(self, text):
        self.rows, self._row = [], None
        super().__init__(text.split('id="heatmap-table"', 1)[1].split("</table>", 1)[0])

    def handle_starttag(self, tag, attrs):
        super().handle_starttag(tag, attrs)
        if tag == "th" and dict(attrs).get("class") == "who":
            self._row = [[], dict(attrs).get("title")]

    def handle_endtag(self, tag):
        super().handle_endtag(tag)
        if tag == "th" and self._row is not None:
            self.rows.append(("".join(self._row[0]), self._row[1]))
            self._row = None

    def handle_data(self, data):
        super().handle_data(data)
        if self._row is not None:
            self._row[0].append(data)


def test_the_heat_map_is_a_table_whose_names_the_browser_draws_in_every_script(out):
    build_outputs(out)
    text = (out / "report.html").read_text(encoding="utf-8")
    page = Page(text)
    # no picture of names (a PNG drew CJK as empty boxes and clipped long names): a table of text
    assert "plot-heatmap" not in page.images and "heatmap-table" in page.tables
    rows = Heatmap(text).rows
    shown = {title: words for words, title in rows}
    for name in (CHINESE, ARABIC, EMOJI, HOSTILE):
        assert shown[name] == name  # whole, as text
    # a long name is shortened with an ellipsis, never cut silently: the whole of it is its title
    assert len(shown[LONG]) <= NAME_CHARS and shown[LONG].endswith("…") and LONG.startswith(shown[LONG][:-1])
    # a name written right to left is isolated: it cannot reorder the text after it
    assert f"<bdi>{ARABIC}</bdi>" in text
    # hostile names stay text, in the table's words and titles alike
    assert "<img src=x" not in text
    # each cell says its value in text (colour is not the only carrier) and names its student in its title
    assert f'title="{CHINESE}, leaf: 0 of 4 points (0%)"' in text
    assert 'title="Zoë 🦀✨, accumulation: 1 of 3 points (33%)"' in text


def test_the_heat_map_greys_a_student_without_scores_and_needs_no_matplotlib(out, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    write(out / "nobody.json", report("nobody", status="missing", name="Ng, Zoë"))
    build_outputs(out)
    text = (out / "report.html").read_text(encoding="utf-8")
    assert "heatmap-table" in Page(text).tables
    assert 'title="Ng, Zoë, leaf: no score (missing submission or grading error)">–</td>' in text


def test_a_concept_id_no_installed_font_draws_is_numbered_and_the_run_says_what_to_install(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(fonts, "plot_fonts", lambda: ("DejaVu Sans",))  # a server with no CJK font
    out = tmp_path / "out"
    out.mkdir()
    concepts = [
        {"id": "反向传播", "title": "反向传播", "max_score": 2.0},
        {"id": "leaf", "title": "Leaf", "max_score": 2.0},
    ]
    run_file(out, concepts)
    write(
        out / "wang.json",
        {
            **report("wang"),
            "concepts": [
                {"id": "反向传播", "title": "反向传播", "score": 1.0, "max_score": 2.0},
                {"id": "leaf", "title": "Leaf", "score": 2.0, "max_score": 2.0},
            ],
        },
    )
    warnings = build_outputs(out)
    told = [w for w in warnings if "apt-get install fonts-noto-cjk" in w]
    assert told and "反向传播" in told[0], warnings
    page = Page((out / "report.html").read_text(encoding="utf-8"))
    assert page.ids.get("plot-fonts") == "p" and "#1" in "".join(page.text)  # the panel's number in the table
    assert fonts.uncovered(["leaf", ARABIC, "Ölçer"], ["DejaVu Sans"]) == ""
    assert fonts.packages(fonts.uncovered(["王", "🦀"], ["DejaVu Sans"])) == ["fonts-noto-cjk", "fonts-symbola"]


def test_one_of_a_thing_is_said_in_the_singular_in_english_and_chinese(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    run_file(out)
    write(
        out / "solo.json",
        report(
            "solo",
            scores={"leaf": 1.0},
            checks=[
                {
                    "id": "c::t",
                    "concept": "leaf",
                    "status": "timeout",
                    "score": 0.0,
                    "max_score": 1.0,
                    "feedback": "slow",
                }
            ],
        ),
    )
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name\nsolo,Solo\nabsent,Absent One\n", encoding="utf-8")
    warnings = build_outputs(out, roster=roster)
    words = "".join(Page((out / "report.html").read_text(encoding="utf-8")).text)
    assert "count the 1 student graded" in words and "1 student with checks that timed out" in words
    assert "1 students" not in words
    assert any("1 student of" in w and "is listed as missing" in w for w in warnings), warnings
    assert not any("(s)" in w for w in warnings)
    restore = saved_language()
    try:
        use_language("zh")
        build_outputs(out, roster=roster)
        words = "".join(Page((out / "report.html").read_text(encoding="utf-8")).text)
        assert "已评分或未作答的 1 名学生" in words and "1 名学生有检查超时" in words
    finally:
        restore()


def test_canvas_gradebook_export_as_it_comes_names_every_student_in_every_output(tmp_path):
    # a Canvas "Download Submissions" class (sortable-name slugs and Canvas ids), and
    # the course's gradebook exported from Canvas, its Student column not renamed
    out = tmp_path / "out"
    out.mkdir()
    run_file(out)
    for student, lms_id in (
        ("liddellalice", "1001"),
        ("wangxiaoming", "1002"),
        ("smithbob", "1003"),
        ("smithbob2", "1004"),
    ):
        write(out / f"{student}.json", report(student, scores={"leaf": 2.0}, name=student, lms="canvas", lms_id=lms_id))
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,HW (77)\n"
        "    Points Possible,,,,,7\n"
        '"Liddell, Alice",1001,S-1,aliddell,Sec 1,\n'
        f"{CHINESE},1002,S-2,wxm,Sec 1,\n"
        '"Smith, Bob",1003,S-3,bsmith1,Sec 2,\n'
        '"Smith, Bob",1004,S-4,bsmith2,Sec 2,\n'  # two people of one name: two students
        '=HYPERLINK("http://x"),1005,S-5,mallory,Sec 2,\n'
        '＝HYPERLINK("http://x"),1006,S-6,mallory2,Sec 2,\n',
        encoding="utf-8",
    )
    warnings = build_outputs(out, roster=roster)
    assert not any("clash" in w or "twice" in w or "NOT written" in w for w in warnings), warnings
    rows = read_csv(out / "gradebook.csv")
    book = {row[0]: dict(zip(rows[0], row)) for row in rows[1:]}
    # the slug stays the machines' key; the person's name is in the name column
    assert book["liddellalice"]["name"] == "Liddell, Alice" and book["wangxiaoming"]["name"] == CHINESE
    assert book["smithbob"]["name"] == book["smithbob2"]["name"] == "Smith, Bob"
    # a formula for a name is text to the spreadsheet, in both CSVs
    mallory = book['\'=HYPERLINK("http://x")']  # handed in nothing: a missing row, keyed by the roster's text
    assert mallory["name"] == '\'=HYPERLINK("http://x")' and mallory["status"] == "missing"
    canvas = {row[1]: row for row in read_csv(out / "canvas.csv")[2:]}
    assert canvas["1002"][0] == CHINESE and canvas["1005"][0].startswith("'=")
    assert canvas["1006"][0].startswith("'＝")  # fullwidth =: defused as a precaution too
    text = (out / "report.html").read_text(encoding="utf-8")
    for name in ("Liddell, Alice", CHINESE, "Smith, Bob"):
        assert f"<bdi>{name}</bdi>" in text
    assert {title for _, title in Heatmap(text).rows} >= {"Liddell, Alice", CHINESE, "Smith, Bob"}


def test_the_terminal_names_a_student_by_the_roster(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    run_file(out)
    write(out / "wang.json", report("wang", status="error", error="the worker died"))
    roster = tmp_path / "roster.csv"
    roster.write_text(f"student,name\nwang,{CHINESE}\n", encoding="utf-8")
    names: dict[str, str] = {}
    class_command.build(out, {}, str(roster), names)
    assert class_command._named("wang", names) == f"{CHINESE} (wang)"  # the id beside it, for --only
    assert class_command._named("nobody", names) == "nobody"
    names["evil"] = "\x1b[2Jgone"
    assert "\x1b" not in class_command._named("evil", names)


def test_merge_says_shard_or_shards_as_many_are_missing():
    from pytest_autograd_grader.classroom.merge import _shards

    assert _shards(["a"], ["1/2"]) == [
        "shard 2/2 is missing: add the OUT folder of 'autograd-grader class --shard 2/2' to the parts"
    ]
    assert _shards(["a"], ["1/3"])[0].startswith("shards 2/3, 3/3 are missing:")


def test_without_canvas_ids_the_run_says_a_canvas_download_needs_no_roster(out):
    # folders of a class that carry no Canvas id: canvas.csv is not written and the
    # run says both ways to get it (the Canvas download as it is, or a roster)
    warnings = build_outputs(out)
    told = next(w for w in warnings if "canvas.csv not written" in w)
    assert "Download Submissions" in told and "needs no roster" in told and "--roster" in told
    assert "Grades > Export" in told and "as it is" in told
    assert not (out / "canvas.csv").exists()
    # a Canvas download carries them: written with no roster, one row per Canvas user
    for canvas_id, student in enumerate(NAMES, 1001):
        path = out / f"{student}.json"
        write(path, {**json.loads(path.read_text()), "lms": "canvas", "lms_id": str(canvas_id)})
    assert not any("canvas.csv" in w for w in build_outputs(out))
    assert len(read_csv(out / "canvas.csv")) == 2 + len(NAMES)

"""What a student reads at the end of `pytest --grade`: the table last and
within 80 columns (CJK titles included), the files a concept's points come
from, what to do next, and a word when the total covers only some checks."""

import re
import unicodedata

import pytest
from conftest import SHIPPED_CONCEPTS, grade_checks, language

from pytest_autograd_grader.concepts import Concept
from pytest_autograd_grader.i18n import msg
from pytest_autograd_grader.reporters.terminal import next_step, table_lines
from pytest_autograd_grader.scoring import CheckResult, Gradebook


def columns(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def book(*checks: CheckResult, lang="en") -> Gradebook:
    concepts = {c.id: Concept(c.id, msg(f"concept.{c.id}")) for c in SHIPPED_CONCEPTS}
    concepts["long"] = Concept("long", "A concept whose title is far too long for one row of the table")
    gradebook = Gradebook(seed=1, devices=["cpu"], torch="2", concepts=concepts, lang=lang)
    for check in checks:
        gradebook.checks[check.id] = check
    return gradebook


def check(name, concept, status="passed", points=2.0, topic=None, file=None, line=None, feedback="", hidden=False):
    score = points if status == "passed" else 0.0
    return CheckResult(
        id=f"test_{topic or concept}.py::{name}",
        concept=concept,
        score=score,
        max_score=points,
        status=status,
        topic=topic or concept,
        file=file,
        line=line,
        feedback=feedback,
        hidden=hidden,
    )


EVERY_CONCEPT = [check(f"test_{c.id}", c.id, "failed", points=113) for c in SHIPPED_CONCEPTS] + [
    check("test_long", "long", "failed", points=1)
]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_row_fits_80_columns_and_the_bars_line_up(lang):
    with language(lang):
        lines = table_lines(book(*EVERY_CONCEPT, lang=lang))
    assert len(lines) == len(EVERY_CONCEPT) + 1
    assert all(columns(line) <= 80 for line in lines), [(columns(line), line) for line in lines]
    # every bar (the TOTAL's included) starts in the same column
    starts = {columns(line[: re.search(r"[#.]{10,}", line).start()]) for line in lines}
    assert len(starts) == 1, lines
    # a title too long for the row is cut, never wrapped, and keeps its id
    assert any(line.startswith("A concept whose title") and "\u2026 (long)" in line for line in lines) or lang == "zh"


TITLES = {
    "long": "A concept whose title is far too long for one row of the table",
    "wide": "一个标题非常非常长的概念，长到一行表格怎么也放不下它的全部名字",
    "mixed": "Gradients of 计算图 with a rather long English tail for the row",
    "short": "Short",
}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [80, 72, 64])
def test_every_row_names_its_concepts_id_and_a_long_title_is_cut_between_words(lang, width):
    # before: "(id)" was left out whenever the whole name did not fit the column
    with language(lang):
        gradebook = book(*EVERY_CONCEPT, *(check(f"test_{c}", c, "failed", points=1) for c in TITLES), lang=lang)
        for concept, title in TITLES.items():
            gradebook.concepts[concept] = Concept(concept, title)
        lines = table_lines(gradebook, width)
    titles = {t.id: t.title for t in gradebook.concept_totals()}
    for line, (concept, title) in zip(lines, titles.items()):
        assert columns(line) <= width, (columns(line), line)
        name = line[: line.index(f" ({concept})")] if f" ({concept})" in line else None
        assert name is not None, (concept, line)
        if name != title:  # cut: a prefix of the title that ends between words, then the ellipsis
            assert name.endswith("\u2026") and title.startswith(name[:-1]), (name, title)
            kept = len(name) - 1
            assert (
                kept == 0
                or title[kept] in " ，"
                or unicodedata.east_asian_width(title[kept]) == "W"
                or not title[kept - 1].isalnum()
            ), (name, title)


def test_points_from_another_topics_file_are_named_under_their_concept():
    gradebook = book(
        check("a", "leaf", points=3),
        check("b", "leaf", "failed", points=2, topic="engine", file="engine.py", line=40),
        check("c", "graph", points=1),
    )
    lines = table_lines(gradebook)
    leaf = next(i for i, line in enumerate(lines) if line.startswith("Leaf tensors"))
    assert lines[leaf + 1] == "  engine.py holds 2 of these points"
    assert not any("holds" in line for line in lines if line is not lines[leaf + 1])
    with language("zh"):
        assert "  其中 2 分来自 engine.py" in table_lines(gradebook)


def test_the_next_step_is_the_first_unfinished_check_in_the_courses_order():
    feedback = "[Computational graphs] not implemented yet: graph.build_graph\nmore"
    gradebook = book(
        check("eng", "leaf", "failed", topic="engine", file="engine.py", line=9, feedback="[e] engine"),
        check("leaf", "leaf", "failed", file="leaf.py", line=12, feedback="[Leaf tensors] leaf"),
        check("graph", "graph", "failed", file="graph.py", line=30, feedback=feedback),
    )
    assert next_step(gradebook) == "next: graph.py:30: [Computational graphs] not implemented yet: graph.build_graph"
    gradebook.checks.pop("test_graph.py::graph")
    # the concept's own file before the engine's checks that count under it
    assert next_step(gradebook) == "next: leaf.py:12: [Leaf tensors] leaf"


def test_all_done_or_only_hidden_checks_left():
    assert next_step(book(check("a", "leaf"), check("b", "graph"))) == "all done: every check passes"
    hidden = book(check("a", "leaf"), check("s", "graph", "failed", hidden=True, feedback="A hidden check"))
    assert next_step(hidden) == msg("summary.next_hidden", what="Computational graphs")


CHECKS = """
import pytest

pytestmark = pytest.mark.grade(concept="leaf")


def test_first(submission):
    assert submission("m").f() == 1


def test_second(submission):
    assert submission("m").g() == 2
"""
STUDENT = """
def f():
    return 1


def g():
    raise NotImplementedError
"""


def test_the_table_and_the_next_step_come_last_without_pytests_failed_list(pytester):
    graded = grade_checks(pytester, CHECKS, m=STUDENT)
    lines = [line for line in graded.text.splitlines() if line.strip()]
    assert lines[-1].startswith("next: m.py:") and "not implemented yet: m.g" in lines[-1], lines[-4:]
    assert re.match(r"TOTAL\s+1/2 ", lines[-3]), lines[-4:]  # then the partial note: one file named
    assert "short test summary info" not in graded.text and "FAILED test_checks.py" not in graded.text
    # the summary line of pytest comes before the table, not after
    assert graded.text.index("1 failed, 1 passed") < graded.text.index("TOTAL")


def test_asking_for_pytests_list_still_gets_it(pytester):
    graded = grade_checks(pytester, CHECKS, "-rf", m=STUDENT)
    assert "FAILED test_checks.py::test_second" in graded.text


@pytest.mark.parametrize(
    "args, why",
    [
        (("-k", "first"), "checks were selected with -k"),
        (("-x",), "the run stopped early"),
    ],
)
def test_a_subset_says_its_total_is_partial(pytester, args, why):
    graded = grade_checks(pytester, CHECKS.replace("def test_first", "def test_0_first"), *args, m=STUDENT)
    assert f"this total is partial: {why}; " in graded.text
    assert "for the whole score run: pytest --grade ." in graded.text
    # a subset that passes is not "all done"
    assert "all done" not in graded.text


def test_a_whole_folder_is_not_partial(pytester):
    pytester.makepyfile(test_checks=CHECKS)
    (pytester.path / "m.py").write_text(STUDENT)
    result = pytester.runpytest("--grade", "--grade-seed", "1", ".")
    assert "this total is partial" not in result.stdout.str()
    one_file = pytester.runpytest("--grade", "--grade-seed", "1", "test_checks.py")
    assert "this total is partial: only test_checks.py graded" in one_file.stdout.str()


def test_the_next_step_does_not_depend_on_the_order_checks_finished_in():
    # with -n, a later function's check may report first: the file's order decides
    later = check("later", "graph", "failed", file="graph.py", line=53, feedback="[g] grad_fn_names")
    earlier = check("earlier", "graph", "failed", file="graph.py", line=36, feedback="[g] build_graph")
    for checks in ((later, earlier), (earlier, later)):
        assert next_step(book(*checks)) == "next: graph.py:36: [g] build_graph"

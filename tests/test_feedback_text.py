"""The feedback's own text as a student reads it: nothing cut inside a word
or a quote (and a cut says so), a likely reason under every answer of the
wrong form, and the ``next:`` line naming the problem of the first check
left in the course's order (a notebook's cells in turn)."""

from __future__ import annotations

import ast
import warnings

import nbformat
import pytest
import torch
from conftest import grade_checks, language, run_grader
from hypothesis import given, settings
from hypothesis import strategies as st
from nbformat.v4 import new_code_cell, new_notebook

from pytest_autograd_grader.boundary.records import ErrorRecord, ObjectRecord
from pytest_autograd_grader.boundary.shortening import ELLIPSIS, QUOTES, is_boundary, shorten, width_of
from pytest_autograd_grader.boundary.untrusted import shown
from pytest_autograd_grader.checking.autograd import Autograd
from pytest_autograd_grader.checking.compare import kind_of
from pytest_autograd_grader.concepts import Concept
from pytest_autograd_grader.i18n import msg
from pytest_autograd_grader.outcomes import GradeFailure
from pytest_autograd_grader.reporters.order import course_order
from pytest_autograd_grader.reporters.terminal import headline, next_step
from pytest_autograd_grader.scoring import CheckResult, Gradebook
from pytest_autograd_grader.session_state import Credit

# -- shortening ----------------------------------------------------------------

CJK = "张量梯度叶子节点计算图反向传播保留"
LETTERS = "abcdefghij"
QUOTE_CHARS = "".join(QUOTES) + "".join(QUOTES.values())
ANY_TEXT = st.text(alphabet=st.sampled_from(LETTERS + CJK + QUOTE_CHARS + " \\\n\t.,:!é\u0301\x1b"), max_size=150)


def kept_of(text: str, short: str) -> int:
    """How many characters of ``text`` the shortened ``short`` kept."""
    body = short[: short.rindex(ELLIPSIS)]
    assert text.startswith(body)
    return len(body)


@settings(max_examples=300, deadline=None)
@given(text=ANY_TEXT, limit=st.integers(1, 120), wide=st.booleans())
def test_shortened_text_fits_and_keeps_a_prefix_that_says_it_was_cut(text, limit, wide):
    short = shorten(text, limit, wide=wide)
    size = width_of if wide else len
    assert size(short) <= limit
    if size(text) <= limit:
        assert short == text
        return
    body = short[: kept_of(text, short)]
    # after the ellipsis come only the closing quotes of what the kept part left open
    assert all(c in QUOTES.values() for c in short[len(body) + 1 :]), short


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(
        st.text(alphabet=LETTERS, min_size=1, max_size=12) | st.sampled_from(list(CJK)), min_size=1, max_size=30
    ),
    limit=st.integers(13, 100),
    wide=st.booleans(),
)
def test_a_cut_falls_between_words_never_inside_one(words, limit, wide):
    text = " ".join(words)
    short = shorten(text, limit, wide=wide)
    if short == text:
        return
    kept = kept_of(text, short)
    assert kept > 0, short  # every word fits the room: something is kept
    assert text[kept] == " " or text[kept - 1] in CJK or text[kept] in CJK, (text, short)
    assert is_boundary(text, kept)


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(
        st.tuples(st.text(alphabet=LETTERS + CJK, min_size=1, max_size=10), st.sampled_from(sorted(QUOTES) + [""])),
        min_size=1,
        max_size=25,
    ),
    limit=st.integers(4, 90),
    wide=st.booleans(),
)
def test_every_quote_the_cut_leaves_open_is_closed(words, limit, wide):
    # prose with quoted words: “word”, 「词」, 'word', "word"
    text = " ".join(f"{q}{w}{QUOTES.get(q, '')}" for w, q in words)
    short = shorten(text, limit, wide=wide)
    for opening, closing in QUOTES.items():
        if opening == closing:
            assert short.count(opening) % 2 == 0, (text, short)
        else:
            assert short.count(opening) == short.count(closing), (text, short)


@settings(max_examples=300, deadline=None)
@given(value=st.text(max_size=200), limit=st.integers(6, 120))
def test_a_shortened_repr_of_a_string_is_still_a_string_literal(value, limit):
    # what a check shows of a returned string: the quote it opens is always closed
    short = shorten(repr(value), limit)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an escape cut in two (\x1 ...) warns
        read = ast.literal_eval(short)
    assert isinstance(read, str)
    if short != repr(value):
        assert ELLIPSIS in read


BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad()."
)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_returned_string_is_cut_between_words_inside_its_closed_quote(lang):
    with language(lang):
        got = kind_of(BACKWARD_TWICE)
        failure = Autograd().assert_equal
        with pytest.raises(GradeFailure) as info:
            failure(BACKWARD_TWICE, 1.0, "loss")
    assert got.endswith(ELLIPSIS + "'"), got  # before: "... saved te" and no closing quote
    quoted = got[got.index("'") :]
    assert ast.literal_eval(quoted).removesuffix(ELLIPSIS) in BACKWARD_TWICE
    assert BACKWARD_TWICE[len(ast.literal_eval(quoted)) - 1] == " "  # the next character: a space
    assert quoted in info.value.feedback


def test_a_long_feedback_is_cut_between_words_with_a_note():
    text = "word " * 10_000 + "'an opened quote that goes on " + "and on " * 2000
    cut = shown(text, limit=50_020)
    assert cut.split("\n")[0].endswith(" 'an opened quote" + ELLIPSIS + "'"), cut[-120:]
    left = len(text) - len(cut.split("\n")[0]) + 2  # the ellipsis and the closing quote are not the text's
    assert msg("text.cut", count=left) in cut
    with language("zh"):
        assert "……（另有" in shown("字" * 30, limit=10)


# -- a reason for every answer of the wrong form --------------------------------


def failure(fn, *args, **kwargs) -> str:
    with pytest.raises(GradeFailure) as info:
        fn(*args, **kwargs)
    return info.value.feedback


GENERATOR = ObjectRecord(type="generator", repr="<generator object pair at 0x7f>")
MALFORMED_PAIRS = [
    (None, "why.none", {}),
    (GENERATOR, "why.generator", {}),
    (ObjectRecord(type="zip", repr="<zip object at 0x7f>"), "why.lazy", {"type": "zip"}),
    (ObjectRecord(type="function", repr="<function pair>"), "why.function", {}),
    (ObjectRecord(type="set", repr="{1, 2}"), "why.set", {}),
    ({"loss": 1.0, "grad": 2.0}, "why.dict", {}),
    ("loss and grad", "why.string", {}),
    (
        ErrorRecord(type="RuntimeError", message="boom", file="", line=0, code="", raised_by="student"),
        "why.error_returned",
        {},
    ),
    (torch.zeros(2), "why.one_for_many", {"n": 2}),
    (3.0, "why.one_for_many", {"n": 2}),
    ((1.0,), "why.too_few", {"got": 1, "expected": 2}),
    ((1.0, 2.0, 3.0), "why.too_many", {"got": 3, "expected": 2}),
    (((1.0, 2.0),), "why.nested", {"expected": 2}),
    (b"ab", "why.other", {}),
]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("produced, why, fields", MALFORMED_PAIRS, ids=[m[1] for m in MALFORMED_PAIRS])
def test_a_malformed_return_says_its_likely_reason(produced, why, fields, lang):
    with language(lang):
        text = failure(Autograd().unpack, produced, 2, "(loss, grad)")
        assert text.splitlines()[-1] == msg(why, **fields), text
        assert text.startswith("(loss, grad)")


@pytest.mark.parametrize(
    "produced, why, fields",
    [
        (None, "why.none", {}),
        ((torch.ones(3), torch.ones(3)), "why.many_for_one", {"count": 2}),
        (GENERATOR, "why.generator", {}),
        (2.0, "why.number_for_tensor", {}),
        ("tensor([1., 1., 1.])", "why.string", {}),
    ],
    ids=["none", "tuple", "generator", "number", "string"],
)
def test_a_tensor_of_the_wrong_form_says_its_likely_reason(produced, why, fields):
    assert msg(why, **fields) in failure(Autograd().assert_meta, produced, "y", is_leaf=True)
    if produced is not None:  # a None gradient has its own diagnoses (diagnose_none)
        assert msg(why, **fields) in failure(Autograd().assert_grad, produced, torch.ones(3), "y")


def test_plain_values_and_caught_errors_of_the_wrong_form_say_why_too():
    assert msg("why.none") in failure(Autograd().assert_equal, None, [True, False], "is_leaf")
    assert msg("why.too_few", got=1, expected=2) in failure(Autograd().assert_equal, [True], [True, False], "is_leaf")
    assert msg("why.none") in failure(Autograd().assert_equal, None, True, "is_leaf")
    assert msg("why.string") in failure(Autograd().expect_error, "backward_twice", "Trying to backward")
    x = torch.ones(2, dtype=torch.float64)
    assert msg("why.none") in failure(Autograd().check_grad, None, lambda a, b: (a * b).sum(), (x, x))
    assert msg("why.too_many", got=3, expected=2) in failure(
        Autograd().check_grad, (x, x, x), lambda a, b: (a * b).sum(), (x, x)
    )


MISSING_RETURN = """
pytestmark = __import__("pytest").mark.grade(concept="graph")


def test_pair(submission, autograd):
    loss, grad = autograd.unpack(submission("work").pair(2.0), 2, "pair's (loss, grad)")
"""


def test_a_function_without_return_on_a_path_is_told_so_in_the_terminal(pytester):
    graded = grade_checks(
        pytester, MISSING_RETURN, "--grade-lang", "zh", work="def pair(x):\n    if x < 0:\n        return x, 1.0\n"
    )
    with language("zh"):
        assert msg("why.none") in graded.check("test_pair")["feedback"]
        assert msg("why.none") in graded.text


# -- next: the first check left, in the course's order, with its problem --------


def book(*checks: CheckResult, concepts=("graph", "leaf", "engine")) -> Gradebook:
    gradebook = Gradebook(
        seed=1, devices=["cpu"], torch="2", concepts={c: Concept(c, c.title()) for c in concepts}, lang="en"
    )
    for check in checks:
        gradebook.checks[check.id] = check
    return gradebook


def result(name, concept="leaf", topic="leaf", file="leaf.ipynb", line=None, cell=None, feedback="[Leaf] x"):
    return CheckResult(
        id=f"test_{topic}.py::{name}",
        concept=concept,
        score=0.0,
        max_score=1.0,
        status="failed",
        topic=topic,
        file=file,
        line=line,
        cell=cell,
        feedback=feedback,
    )


def test_next_follows_a_notebooks_cells_then_their_lines():
    later_cell = result("a", line=1, cell=5, feedback="[Leaf] in cell 5")
    first_cell = result("b", line=9, cell=2, feedback="[Leaf] in cell 2")
    for checks in ((later_cell, first_cell), (first_cell, later_cell)):
        # before: line 1 (of cell 5) came before line 9 (of cell 2)
        assert next_step(book(*checks)) == "next: leaf.ipynb, cell 2, line 9: [Leaf] in cell 2"
    # a check that names no place in the notebook comes after those that do
    nowhere = result("c", feedback="[Leaf] leaf.ipynb has no function 'f'")
    assert next_step(book(nowhere, later_cell)) == "next: leaf.ipynb, cell 5, line 1: [Leaf] in cell 5"


def test_next_follows_the_courses_topics_not_their_names():
    # two topics count under graph, neither its own: the course's order (leaf, then engine) decides, not a-z
    engine = result("e", concept="graph", topic="engine", file="engine.py", line=1, feedback="[Graph] engine")
    leaf = result("l", concept="graph", topic="leaf", file="leaf.py", line=1, feedback="[Graph] leaf")
    assert next_step(book(engine, leaf)) == "next: leaf.py:1: [Graph] leaf"


def test_next_leaves_the_engine_track_for_after_the_torch_topics():
    # engine.py's checks count under leaf, but the engine is the course's last topic: a student who has
    # solved leaf.py is sent on to retain_grad.py, as the annotations are (one order, reporters/order.py)
    engine = result("e", concept="leaf", topic="engine", file="engine.py", line=3, feedback="[Leaf] engine")
    retain = result(
        "r",
        concept="retain_grad",
        topic="retain_grad",
        file="retain_grad.py",
        line=5,
        feedback="[Retain_Grad] hidden values",
    )
    gradebook = book(engine, retain, concepts=("graph", "leaf", "retain_grad", "engine"))
    assert next_step(gradebook) == "next: retain_grad.py:5: [Retain_Grad] hidden values"
    assert course_order(gradebook, [engine, retain], begun_first=False) == [retain, engine]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_next_names_the_broken_instruction_not_its_heading(lang):
    with language(lang):
        credit = Credit(points=4, share=0.25)
        credit.instruction(False, "hand_gradients must find the gradients by hand", 0.25)
        feedback = msg("feedback.header", title="Graph", what=credit.failure().feedback)
        check = result("i", concept="graph", topic="graph", file="graph.py", line=3, feedback=feedback)
        assert next_step(book(check)) == msg(
            "summary.next",
            where="graph.py:3",
            what=msg("feedback.header", title="Graph", what="hand_gradients must find the gradients by hand"),
        )
        # the parts' count is a heading too: the part that failed is named
        parts = "\n".join(
            [
                msg("cmp.parts", passed=1, total=2),
                msg("cmp.part_n", n=2) + ":",
                "  second: values differ from torch.autograd",
            ]
        )
        assert headline(msg("feedback.header", title="Graph", what=parts), "Graph") == msg(
            "feedback.header", title="Graph", what="second: values differ from torch.autograd"
        )
        tag = msg("feedback.header", title="Graph", what="")
        assert headline(tag + "\n\nnot implemented yet: g.f", "Graph") == tag + "not implemented yet: g.f"


INSTRUCTION_CHECKS = """
import pytest
import torch

pytestmark = pytest.mark.grade(concept="graph", points=4, instruction_share=0.25)


def test_by_backward(submission, autograd):
    x = torch.tensor([1.0, -2.0], dtype=torch.float64)
    got = submission("work").by_backward(x)
    calls = len(submission.trace.calls)
    autograd.instruction(calls == 0, "req.graph.by_hand", count=calls)
    autograd.assert_close(got, 2 * x + 1, "dy/dx")
"""
BY_BACKWARD = """
def by_backward(x):
    x = x.clone().requires_grad_(True)
    (x * x + x).sum().backward()
    return x.grad
"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_graded_run_with_a_broken_instruction_says_what_to_change_next(pytester, lang):
    graded = grade_checks(pytester, INSTRUCTION_CHECKS, "--grade-lang", lang, work=BY_BACKWARD)
    last = [line for line in graded.text.splitlines() if line.strip()][-1]
    with language(lang):
        problem = msg("req.graph.by_hand", count=1).splitlines()[0]
        assert last == msg(
            "summary.next", where="work.py:2", what=msg("feedback.header", title=msg("concept.graph"), what=problem)
        ), last


def test_next_in_a_notebook_is_the_first_cell_that_fails(pytester):
    student = pytester.path / "student"
    student.mkdir()
    nbformat.write(
        new_notebook(
            cells=[
                new_code_cell("x = 1\n\n\n\ndef a():\n    raise NotImplementedError"),  # the raise: cell 1, line 6
                new_code_cell("def b():\n    raise NotImplementedError"),  # cell 2, line 2
            ]
        ),
        student / "nb.ipynb",
    )
    pytester.makepyfile(
        test_checks="""
import pytest

pytestmark = pytest.mark.grade(concept="leaf")


def test_b(submission):
    submission("nb").b()


def test_a(submission):
    submission("nb").a()
"""
    )
    graded = run_grader(pytester, "test_checks.py", "--grade-submission=student", "--grade-seed", "3")
    last = [line for line in graded.text.splitlines() if line.strip()][-1]
    assert last.startswith("next: nb.ipynb, cell 1, line 6: "), last


def test_a_github_annotation_is_cut_between_words_with_its_quote_closed():
    from pytest_autograd_grader.reporters.github import ANNOTATION_CHARS, annotation_lines

    said = "Trying to backward through the graph a second time " * 200
    check = result(
        "s",
        concept="graph",
        topic="graph",
        file="graph.py",
        line=4,
        feedback=f"[Graph] loss: expected the caught error, got a string: '{said}'",
    )
    line = next(line for line in annotation_lines(book(check)) if line.startswith("::error"))
    message = line.split("::", 2)[2].split("%0A")[0]
    assert len(message) <= ANNOTATION_CHARS and message.endswith(ELLIPSIS + "'"), message[-60:]
    assert message[:-2].endswith(
        (" the", " graph", " a", " second", " time", " Trying", " to", " backward", " through")
    ), message[-60:]  # before: cut anywhere, the quote left open


def test_what_student_code_printed_is_cut_between_words():
    from pytest_autograd_grader.boundary.student import _CappedText

    said = "loss = 'Trying to backward through the graph a second time' and more words after it"
    printed = _CappedText(limit=40)  # the room ends inside "graph", inside the quote
    printed.write(said)
    first, note = printed.getvalue().split("\n", 1)
    kept = "loss = 'Trying to backward through the"
    assert first == kept + ELLIPSIS + "'", first  # before: "... through the g" and the quote left open
    assert f"({len(said) - len(kept)} more characters not shown)" in note

"""The feedback's own text as a student reads it: nothing cut inside a word
or a quote (and a cut says so), a likely reason under every answer of the
wrong form, and the ``next:`` line naming the problem of the first check
left in the course's order (a notebook's cells in turn)."""

from __future__ import annotations

import ast
import contextlib
import warnings

import nbformat
import pytest
import torch
from conftest import grade_checks, run_grader
from hypothesis import given, settings
from hypothesis import strategies as st
from nbformat.v4 import new_code_cell, new_notebook

from pytest_autograd_grader import i18n
from pytest_autograd_grader.boundary.records import ErrorRecord, ObjectRecord
from pytest_autograd_grader.boundary.shortening import ELLIPSIS, QUOTES, is_boundary, shorten, width_of
from pytest_autograd_grader.boundary.untrusted import shown
from pytest_autograd_grader.checking.autograd import Autograd
from pytest_autograd_grader.checking.compare import kind_of
from pytest_autograd_grader.concepts import Concept
from pytest_autograd_grader.i18n import msg
from pytest_autograd_grader.outcomes import GradeFailure
from pytest_autograd_grader.reporters.terminal import headline, next_step
from pytest_autograd_grader.scoring import CheckResult, Gradebook
from pytest_autograd_grader.state import Credit


@contextlib.contextmanager
def language(code):
    restore = i18n.saved_language()
    i18n.use_language(code)
    try:
        yield
    finally:
        restore()


# -- shortening ----------------------------------------------------------------

CJK = "张量梯度叶子节点计算图反向传播保留"
LETTERS = "abcdefghij"
QUOTE_CHARS = "".join(QUOTES) + "".join(QUOTES.values())
ANY_TEXT = st.text(alphabet=st.sampled_from(LETTERS + CJK + QUOTE_CHARS + " \\\n\t.,:!é\u0301\x1b"), max_size=150)


def kept_of(text: str, short: str) -> int:
    """How many characters of ``text`` the shortened ``short`` kept."""
    body = short[:short.rindex(ELLIPSIS)]
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
    body = short[:kept_of(text, short)]
    # after the ellipsis come only the closing quotes of what the kept part left open
    assert all(c in QUOTES.values() for c in short[len(body) + 1:]), short


@settings(max_examples=300, deadline=None)
@given(words=st.lists(st.text(alphabet=LETTERS, min_size=1, max_size=12) | st.sampled_from(list(CJK)),
                      min_size=1, max_size=30),
       limit=st.integers(13, 100), wide=st.booleans())
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
@given(words=st.lists(st.tuples(st.text(alphabet=LETTERS + CJK, min_size=1, max_size=10),
                                st.sampled_from(sorted(QUOTES) + [""])), min_size=1, max_size=25),
       limit=st.integers(4, 90), wide=st.booleans())
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


BACKWARD_TWICE = ("Trying to backward through the graph a second time (or directly access saved tensors after "
                  "they have already been freed). Saved intermediate values of the graph are freed when you call "
                  ".backward() or autograd.grad().")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_returned_string_is_cut_between_words_inside_its_closed_quote(lang):
    with language(lang):
        got = kind_of(BACKWARD_TWICE)
        failure = Autograd().assert_equal
        with pytest.raises(GradeFailure) as info:
            failure(BACKWARD_TWICE, 1.0, "loss")
    assert got.endswith(ELLIPSIS + "'"), got  # before: "... saved te" and no closing quote
    quoted = got[got.index("'"):]
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

"""Every sentence the grader says to a student or an instructor.

Code refers to messages by id and fills in named fields. Each language is
one catalogue, a dict with the same keys: ``en.py`` (``EN``) and ``zh.py``
(``ZH``); ``use_language`` picks one, ``set_language`` installs another.
Every layer of the grader may import this package; it imports none of them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .en import EN

LANGUAGES = ("en", "zh")
_catalogue: dict[str, str] = EN
_language = "en"
# Message ids that start so are diagnoses (the grader's and a course's own).
DIAGNOSIS = "diag."
NOTED_LIMIT = 500  # distinct diagnoses noted per check: a loop formatting them cannot grow it without end
# While a check runs (``noting_diagnoses``): (id, text) of each diagnosis
# formatted or given, in order; None otherwise, which costs ``msg`` one test.
_noted: dict[tuple[str, str], None] | None = None


def catalogue(language: str) -> dict[str, str]:
    """The messages of ``language`` (``LANGUAGES``)."""
    if language == "zh":
        from .zh import ZH

        return ZH
    return EN


def use_language(language: str) -> None:
    """Speak ``language`` from now on (``--grade-lang``)."""
    global _language
    set_language(catalogue(language))
    _language = language


def current_language() -> str:
    return _language


def saved_language():
    """A function that puts back the catalogue in use now (a pytest run
    inside another, as pytester makes, must not change the outer one's)."""
    catalogue, language = _catalogue, _language

    def restore() -> None:
        global _catalogue, _language
        _catalogue, _language = catalogue, language

    return restore


def set_language(catalogue: dict[str, str]) -> None:
    """Use another catalogue; ids it lacks fall back to English."""
    global _catalogue, _language
    _catalogue = {**EN, **catalogue}
    _language = "custom"


def has_message(key: str) -> bool:
    return key in _catalogue


def msg(key: str, **fields: object) -> str:
    text = _catalogue[key].format(**fields)
    if _noted is not None and key.startswith(DIAGNOSIS) and len(_noted) < NOTED_LIMIT:
        _noted[key, text] = None
    return text


def note_diagnosis(given: str, text: str) -> None:
    """Note a diagnosis a check's author gave as ``given`` (a message id or
    plain text) and that reads ``text``. An id was noted by ``msg`` if it is
    a diagnosis; a plain text is noted with itself as its id (its text
    before fields are filled), unless it is made of diagnoses noted already
    (their ids then say more than the whole does)."""
    noted = _noted
    if noted is None or not text or given in _catalogue or len(noted) >= NOTED_LIMIT:
        return
    if not any(seen in text for _, seen in noted):
        noted[given, text] = None


@contextlib.contextmanager
def noting_diagnoses() -> Iterator[list[tuple[str, str]]]:
    """``with noting_diagnoses() as noted:`` around a check's run: at its
    end ``noted`` holds the (id, text) of each diagnosis the check formatted
    or was given, in order. A nested use (a pytest run inside a check)
    notes its own, and the outer one goes on after it."""
    global _noted
    outer, mine = _noted, {}
    _noted = mine
    noted: list[tuple[str, str]] = []
    try:
        yield noted
    finally:
        noted.extend(mine)
        _noted = outer

"""Every sentence the grader says to a student or an instructor.

Code refers to messages by id and fills in named fields. Each language is
one catalogue, a dict with the same keys: ``en.py`` (``EN``) and ``zh.py``
(``ZH``); ``use_language`` picks one, ``set_language`` installs another.
Every layer of the grader may import this package; it imports none of them.
"""

from __future__ import annotations

from .en import EN

LANGUAGES = ("en", "zh")
_catalogue: dict[str, str] = EN
_language = "en"


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
    return _catalogue[key].format(**fields)

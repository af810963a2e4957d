"""Every sentence the grader says to a student or an instructor.

Code refers to messages by id and fills in named fields. Each language is
one catalogue, a dict with the same keys: ``en.py`` (``EN``) and ``zh.py``
(``ZH``); ``use_language`` picks one. A course adds its own ids per language
(``add_course_messages``, which the ``pytest_grade_messages`` hook feeds);
they never replace the grader's and survive ``use_language``. An id is
looked up in the run's language (the course's, then the grader's), then in
English, then in any language the course gave. ``set_language`` is the
programmatic form: its texts win in every language.
Every layer of the grader may import this package; it imports none of them.
"""

from __future__ import annotations

import contextlib
import string
from collections.abc import Callable, Iterator

from .en import EN

LANGUAGES = ("en", "zh")
_grader: dict[str, str] = EN  # the grader's catalogue in the run's language
_language = "en"
# Message ids that start so are diagnoses (the grader's and a course's own).
DIAGNOSIS = "diag."
NOTED_LIMIT = 500  # distinct diagnoses noted per check: a loop formatting them cannot grow it without end
# While a check runs (``noting_diagnoses``): (id, text) of each diagnosis
# formatted or given, in order; None otherwise, which costs ``msg`` one test.
_noted: dict[tuple[str, str], None] | None = None
_course: dict[str, dict[str, str]] = {}  # language -> the course's ids and texts
_custom: dict[str, str] = {}  # set_language's texts, whatever the language


class CourseMessageError(ValueError):
    """Messages a course gave that the grader refuses; says why in words."""


def catalogue(language: str) -> dict[str, str]:
    """The grader's own messages in ``language`` (``LANGUAGES``)."""
    if language == "zh":
        from .zh import ZH

        return ZH
    return EN


def use_language(language: str) -> None:
    """Speak ``language`` from now on (``--grade-lang``); a course's
    messages and ``set_language``'s stay."""
    global _grader, _language
    _grader, _language = catalogue(language), language


def current_language() -> str:
    return _language


def saved_language() -> Callable[[], None]:
    """A function that puts back the language and the course's messages in
    use now (a pytest run inside another, as pytester makes, must neither
    change the outer one's nor leave its course's messages to the next)."""
    grader, language = _grader, _language
    course = {lang: dict(texts) for lang, texts in _course.items()}
    custom = dict(_custom)

    def restore() -> None:
        global _grader, _language
        _grader, _language = grader, language
        _course.clear()
        _course.update(course)
        _custom.clear()
        _custom.update(custom)

    return restore


def set_language(messages: dict[str, str]) -> None:
    """Add ``messages`` (id -> text) to what the grader says, in every
    language, winning over the grader's and the course's own texts; ids it
    lacks keep theirs. Call it from a conftest or a plugin."""
    _check_texts(messages, "set_language")
    _custom.update(messages)


def add_course_messages(messages: object, source: str = "pytest_grade_messages") -> None:
    """Add a course's ``{language: {id: text}}``; ``CourseMessageError``
    (in words, naming ``source``) when an id is the grader's own, an id or
    text is no string, or one id's fields differ between languages."""
    checked = _checked_course(messages, source)
    _check_fields_agree(checked, source)
    for language, texts in checked.items():
        _course.setdefault(language, {}).update(texts)


def _checked_course(messages: object, source: str) -> dict[str, dict[str, str]]:
    """``messages`` once it is a dict of languages to texts none of whose
    ids is the grader's own."""
    if not isinstance(messages, dict):
        raise CourseMessageError(msg("messages.not_dict", source=source, got=type(messages).__name__))
    checked: dict[str, dict[str, str]] = {}
    for language, texts in messages.items():
        if not isinstance(language, str) or not isinstance(texts, dict):
            raise CourseMessageError(msg("messages.not_dict", source=source, got=repr(language)))
        checked[language] = _check_texts(texts, source)
        for key in checked[language]:
            if key in EN:
                raise CourseMessageError(msg("messages.grader_id", source=source, message_id=key))
    return checked


def _check_fields_agree(messages: dict[str, dict[str, str]], source: str) -> None:
    """Each id has the same {fields} in every language, the course's
    messages added before included."""
    for language, texts in messages.items():
        for key, text in texts.items():
            for other, known in [*messages.items(), *_course.items()]:
                if key in known and _fields(known[key]) != _fields(text):
                    raise CourseMessageError(
                        msg(
                            "messages.fields_differ",
                            source=source,
                            message_id=key,
                            language=language,
                            other=other,
                            fields=_listed(_fields(text)),
                            other_fields=_listed(_fields(known[key])),
                        )
                    )


def _check_texts(texts: object, source: str) -> dict[str, str]:
    """``texts`` once it is a dict of string ids to texts that format."""
    if not isinstance(texts, dict):
        raise CourseMessageError(msg("messages.not_dict", source=source, got=type(texts).__name__))
    for key, text in texts.items():
        if not isinstance(key, str) or not isinstance(text, str):
            raise CourseMessageError(
                msg("messages.not_str", source=source, message_id=repr(key), got=type(text).__name__)
            )
        try:
            _fields(text)
        except ValueError as exc:
            raise CourseMessageError(msg("messages.bad_text", source=source, message_id=key, reason=str(exc))) from None
    return texts


def _listed(fields: set[str]) -> str:
    return ", ".join("{" + name + "}" for name in sorted(fields)) or "-"


def _fields(text: str) -> set[str]:
    """The names of a text's {fields} (ValueError for a stray brace)."""
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(text) if name}


def _lookup(key: str) -> str | None:
    if key in _custom:
        return _custom[key]
    for language, grader in ((_language, _grader), ("en", EN)):
        text = _course.get(language, {}).get(key)
        if text is None:
            text = grader.get(key)
        if text is not None:
            return text
    for texts in _course.values():
        if key in texts:
            return texts[key]
    return None


def has_message(key: str) -> bool:
    return _lookup(key) is not None


def template(key: str) -> str:
    """A message's text in the language in use, its {fields} not filled
    in (to recognise the message in a text made from it); "" when unknown."""
    return _lookup(key) or ""


def msg(key: str, **fields: object) -> str:
    """The text of message id ``key`` in the run's language (else English,
    else any language the course gave), its ``{fields}`` filled in; a
    ``KeyError`` for an id no catalogue has."""
    said = _lookup(key)
    if said is None:
        raise KeyError(key)
    said = said.format(**fields)
    if _noted is not None and key.startswith(DIAGNOSIS) and len(_noted) < NOTED_LIMIT:
        _noted[key, said] = None
    return said


def note_diagnosis(given: str, text: str) -> None:
    """Note a diagnosis a check's author gave as ``given`` (a message id or
    plain text) and that reads ``text``. An id is noted whatever its prefix
    (a broken instruction's ``req.*`` names the mistake as a ``diag.*``
    does); a plain text is noted with itself as its id (its text before
    fields are filled), unless it is made of diagnoses noted already (their
    ids then say more than the whole does)."""
    noted = _noted
    if noted is None or not text or len(noted) >= NOTED_LIMIT:
        return
    if _lookup(given) is not None:
        noted[given, text] = None
    elif not any(seen in text for _, seen in noted):
        noted[given, text] = None


@contextlib.contextmanager
def noting_diagnoses() -> Iterator[list[tuple[str, str]]]:
    """``with noting_diagnoses() as noted:`` around a check's run: at its
    end ``noted`` holds the (id, text) of each diagnosis the check formatted
    or was given, in order. A nested use (a pytest run inside a check)
    notes its own, and the outer one goes on after it."""
    global _noted
    outer = _noted
    mine: dict[tuple[str, str], None] = {}
    _noted = mine
    noted: list[tuple[str, str]] = []
    try:
        yield noted
    finally:
        noted.extend(mine)
        _noted = outer


class MissingField(KeyError):
    """A text asked for a field its caller did not give (the check's
    mistake: the check's callers make it its ``error``)."""

    def __str__(self) -> str:
        return str(self.args[0])


def text(message: str, **fields: object) -> str:
    """A message id's text, or ``message`` itself when it is no id, with
    ``fields`` filled in either way (plain text given no fields is left as
    it is: it may quote braces); ``MissingField`` names a field it lacks."""
    known = _lookup(message)
    if known is None and not fields:
        return message
    try:
        return (message if known is None else known).format(**fields)
    except KeyError as exc:
        raise MissingField(
            msg(
                "messages.field_missing",
                field=str(exc.args[0]),
                message=message[:200],
                given=", ".join(sorted(fields)) or "-",
            )
        ) from None
    except (IndexError, ValueError) as exc:
        raise MissingField(
            msg("messages.bad_text", source="autograd", message_id=message[:200], reason=str(exc))
        ) from None

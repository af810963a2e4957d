"""Text for GitHub's formats: a student's text (feedback quotes exception
messages and printed output) escaped for the place it lands in, so that it
can neither break the step summary's Markdown and HTML nor start a workflow
command in the job's log; and cut to the length GitHub shows.

- ``escape_data``, ``escape_property``: a workflow command's message and
  property values (the annotations);
- ``defuse_commands``: any text printed to the job's log;
- ``table_cell``, ``code_span``, ``fenced``: Markdown for the step summary;
- ``bounded``: the first lines and characters, cut between words.
"""

from __future__ import annotations

import html
import re

from ..i18n import msg

# Characters that end a line for some reader of the log (.NET splits on
# CR and LF, Python's splitlines on these too) or that drive a terminal.
_LINE_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f" + _LINE_BREAKS + "]")


def clean(text: str) -> str:
    """``text`` without control characters and odd line breaks; tabs, CR
    and LF stay for the format's own escaping."""
    return _CONTROL.sub(" ", text.replace("\r\n", "\n"))


def escape_data(text: str) -> str:
    """A workflow command's message, as GitHub's runner unescapes it."""
    return clean(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (file, title)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def defuse_commands(text: str) -> str:
    """Student text for the job's log (the Classroom reporter prints names
    and messages; pytest prints feedback): GitHub's runner takes a line that
    starts with ``::`` (after spaces) or holds ``##[`` anywhere for a
    workflow command, so a zero-width space goes between the two characters."""
    lines = clean(text).replace("\r", "\n").split("\n")
    lines = [line.replace("##[", "#\u200b#[") for line in lines]
    lines = [re.sub(r"^(\s*):(?=:)", "\\1:\u200b", line) for line in lines]
    return "\n".join(lines)


def table_cell(text: str) -> str:
    """A Markdown table cell: one line, HTML-escaped, ``|`` escaped."""
    return html.escape(" ".join(clean(text).split())).replace("|", "&#124;")


def code_span(text: str) -> str:
    """``text`` on one line as a Markdown code span, shown as it is written:
    no link, image, emphasis or HTML in it is read. Its backticks are a run
    longer than any inside it (GitHub's way of quoting backticks)."""
    text = " ".join(clean(text).split())
    if not text:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{'`' * (longest + 1)}{pad}{text}{pad}{'`' * (longest + 1)}"


def fenced(text: str) -> list[str]:
    """``text`` in a fenced code block that no line of it can close: the
    fence is longer than the longest run of backticks inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "text", *clean(text).replace("\r", "\n").split("\n"), fence]


def bounded(text: str, lines: int, chars: int) -> str:
    """The first ``lines`` lines and ``chars`` characters of ``text``, cut
    between words (a quote it leaves open closed)."""
    from ..boundary.shortening import shorten

    kept = text.splitlines()
    cut = len(kept) > lines or len(text) > chars
    short = shorten("\n".join(kept[:lines]), chars)
    return short + "\n" + msg("github.cut") if cut else short

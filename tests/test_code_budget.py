"""The functions' budget (docs/contributors/testing.md): ruff, with the
project's own settings, fails a function over complexity 10, 50 statements
or 10 parameters and passes one at the limit, so that the budget cannot be
switched off or loosened in pyproject.toml without this test noticing; and
every exception marked in the code says why beside its `noqa`."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUDGET_RULES = ("C901", "PLR0913", "PLR0915")
# the folders of ours that ruff checks (mistakes/ is wrong on purpose)
LINTED = ("pytest_autograd_grader", "tests", "bench", "docs", "exercises", "solutions", "templates")


def _branches(name: str, ifs: int) -> str:
    """A function of complexity ifs + 1."""
    body = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(ifs))
    return f"def {name}(x):\n{body}    return -1\n"


def _statements(name: str, count: int) -> str:
    body = "".join(f"    print({i})\n" for i in range(count))
    return f"def {name}():\n{body}"


def _parameters(name: str, count: int) -> str:
    names = ", ".join(f"p{i}" for i in range(count))
    return f"def {name}({names}):\n    return p0\n"


def _budget_findings(tmp_path: Path, source: str) -> dict[str, set[str]]:
    """ruff's budget findings on source, by rule, as the names of the functions."""
    pytest.importorskip("ruff", reason="ruff is in the test extra: pip install -e '.[test]'")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(source, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--output-format",
            "json",
            "--config",
            str(ROOT / "pyproject.toml"),
            str(snippet),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    found: dict[str, set[str]] = {rule: set() for rule in BUDGET_RULES}
    for finding in json.loads(done.stdout):
        if finding["code"] in found:
            def_line = source.splitlines()[finding["location"]["row"] - 1]
            found[finding["code"]].add(def_line.split("(")[0].removeprefix("def "))
    return found


def test_the_budget_fails_a_function_over_it_and_passes_one_at_it(tmp_path: Path) -> None:
    source = "\n\n".join(
        [
            _branches("complexity_10", 9),
            _branches("complexity_11", 10),
            _statements("statements_50", 50),
            _statements("statements_51", 51),
            _parameters("parameters_10", 10),
            _parameters("parameters_11", 11),
        ]
    )
    assert _budget_findings(tmp_path, source) == {
        "C901": {"complexity_11"},
        "PLR0915": {"statements_51"},
        "PLR0913": {"parameters_11"},
    }


def test_a_budget_noqa_still_silences_only_its_own_function(tmp_path: Path) -> None:
    marked = _branches("dispatch", 10).replace(
        "def dispatch(x):", "def dispatch(x):  # noqa: C901  (one table of cases reads best whole)"
    )
    source = marked + "\n\n" + _branches("unmarked", 10)
    assert _budget_findings(tmp_path, source)["C901"] == {"unmarked"}


NOQA = re.compile(r"#\s*noqa:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)(?P<rest>.*)$")


def _comments(text: str) -> Iterator[tuple[int, str]]:
    """The comments of a module with their line numbers (a noqa in a string is no noqa)."""
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def _unexplained_budget_exceptions(text: str) -> list[int]:
    """The lines whose noqa silences a budget rule without a reason in parentheses after it."""
    lines = []
    for number, comment in _comments(text):
        match = NOQA.search(comment)
        if not match:
            continue
        codes = {code.strip() for code in match["codes"].split(",")}
        if codes & set(BUDGET_RULES) and not re.match(r"\s*\(\s*[^)\s][^)]*\)", match["rest"]):
            lines.append(number)
    return lines


def test_the_reason_check_tells_a_reason_from_none() -> None:
    assert _unexplained_budget_exceptions("def f():  # noqa: C901  (a dispatch table)") == []
    assert _unexplained_budget_exceptions("def f(a, b):  # noqa: PLR0913,PLR0915 (the hook's spec)") == []
    assert _unexplained_budget_exceptions("def f():  # noqa: C901") == [1]
    assert _unexplained_budget_exceptions("x = 1\ndef f():  # noqa: E501, C901  ()") == [2]
    assert _unexplained_budget_exceptions("import os  # noqa: F401") == []


def test_every_exception_to_the_budget_says_why() -> None:
    unexplained = [
        f"{path.relative_to(ROOT)}:{line}"
        for folder in LINTED
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line in _unexplained_budget_exceptions(path.read_text(encoding="utf-8"))
    ]
    assert unexplained == [], (
        "a `# noqa: C901` (or PLR0913, PLR0915) needs its reason in parentheses after it, "
        f"e.g. `# noqa: C901  (one match over every stage reads best whole)`: {unexplained}"
    )

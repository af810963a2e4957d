"""The options' defaults are written once, in options.DEFAULTS: the help
texts and read_settings take them from there, and the options page of the
docs must state each as the table has it, so changing a default cannot
leave the docs (or the help) behind."""

from __future__ import annotations

import re

from conftest import REPO

from pytest_autograd_grader import options

OPTIONS_PAGE = (REPO / "docs" / "instructors" / "options.md").read_text(encoding="utf-8")


def _row(ini_key: str) -> str:
    """The options table's row of the ini key ``ini_key``."""
    rows = [line for line in OPTIONS_PAGE.splitlines() if line.startswith("| `--grade") and f"| `{ini_key}` |" in line]
    assert len(rows) == 1, f"docs/instructors/options.md has no row for {ini_key}"
    return rows[0]


def test_the_options_page_states_each_default_as_the_table_has_it():
    for dest, default in options.DEFAULTS.items():
        stated = re.search(r"\(default `?([^`;),]+)`?[;),]", _row(dest))
        assert stated, f"the row of {dest} in docs/instructors/options.md says no '(default ...)'"
        assert stated.group(1) == default, (dest, stated.group(1), default)


def test_the_help_texts_state_each_default_as_the_table_has_it():
    helps = {flag[2:].replace("-", "_"): text for flag, _, text in options.OPTIONS}
    for dest, default in options.DEFAULTS.items():
        assert f"default {default}" in helps[dest], (dest, helps[dest])
    assert not [text for text in helps.values() if "{" in text]


def test_a_run_without_options_grades_with_the_tables_defaults(pytester):
    config = pytester.parseconfig("--grade")
    settings = options.read_settings(config)
    assert (settings.device, settings.timeout, settings.memory_mb, settings.isolation, settings.answer_limit_mb) == (
        "cpu",
        10.0,
        4096,
        "auto",
        8.0,
    )
    assert settings.seed_was_random

"""Command-line options, their ini keys, and validating them into Settings.

Every ``--grade-x`` option is also the ini key ``grade_x``; the command line
wins. Bad values are usage errors before anything is graded.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from . import i18n
from .i18n import LANGUAGES, msg

DEVICES = ("cpu", "cuda", "auto", "all")
ISOLATIONS = ("auto", "bwrap", "user", "process")

IniType = Literal["bool", "string", "cli"]

# The options' defaults, written once: the help texts below and
# read_settings take them from here, and tests/test_options_defaults.py
# holds docs/instructors/options.md to them.
DEFAULTS: dict[str, str] = {
    "grade_device": "cpu",
    "grade_seed": "random",
    "grade_timeout": "10",
    "grade_memory": "4096",
    "grade_isolation": "auto",
    "grade_answer_limit": "8",
}

# (flag, ini type, help). The dest of "--grade-x" is "grade_x", as is the ini
# key; "{default}" in a help text is the option's entry in DEFAULTS.
_OPTION_TEXTS: tuple[tuple[str, IniType, str], ...] = (
    ("--grade", "bool", "grade the checks: per-concept scores, report files, student code run in sandboxed workers"),
    (
        "--grade-submission",
        "string",
        "directory the student's modules are loaded from (default: the directory of each checks file)",
    ),
    (
        "--grade-device",
        "string",
        "device for tensors: cpu, cuda, auto (cuda when available) or all (every available device); default {default}",
    ),
    (
        "--grade-seed",
        "string",
        "seed of the random inputs: a whole number, or 'random' (default {default}); printed in the header",
    ),
    ("--grade-timeout", "string", "wall-clock limit in seconds for student code in one check (default {default})"),
    ("--grade-memory", "string", "memory limit in megabytes for a worker running student code (default {default})"),
    (
        "--grade-isolation",
        "string",
        "how student code is fenced off: auto (the strongest that works), bwrap (bubblewrap), user (a uid per worker; needs root) or process; default {default}",
    ),
    ("--grade-answer-limit", "string", "largest answer in megabytes a student function may return (default {default})"),
    ("--grade-lang", "string", "language of every message: en or zh (default: from the locale, LANG=zh_* gives zh)"),
    ("--grade-json", "string", "write the JSON report (schema pytest-autograd-grader/1) to this path"),
    (
        "--grade-json-private",
        "string",
        "write the JSON report with hidden checks' real feedback (for instructors only) to this path",
    ),
    ("--grade-gradescope", "string", "write a Gradescope results.json to this path"),
    (
        "--grade-github",
        "bool",
        "GitHub Actions outputs: step summary, annotations, the Classroom result (on by default when GITHUB_ACTIONS=true)",
    ),
    (
        "--grade-manifest",
        "string",
        "a manifest of the course's check files (python -m pytest_autograd_grader manifest): an edited or missing check file fails its checks",
    ),
    ("--grade-fail-under", "string", "exit 0 when the total percent is at least this, else 1"),
    (
        "--grade-inline",
        "cli",
        "UNSAFE, for check authors debugging with pdb: run student code inside the pytest process",
    ),
)


def _dest(flag: str) -> str:
    return flag[2:].replace("-", "_")


OPTIONS: tuple[tuple[str, IniType, str], ...] = tuple(
    (flag, ini_type, text.format(default=DEFAULTS.get(_dest(flag)))) for flag, ini_type, text in _OPTION_TEXTS
)

# Turning the sandbox off must be typed by a person: never read from an ini
# file or addopts, which may sit in a student's repository.
CLI_ONLY = {"grade_inline"}


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("grade", "autograd grading (pytest-autograd-grader)")
    for flag, ini_type, help_text in OPTIONS:
        dest = _dest(flag)
        if ini_type in ("bool", "cli"):
            group.addoption(flag, action="store_true", default=None, dest=dest, help=help_text)
        else:
            group.addoption(
                flag, action="store", default=None, dest=dest, metavar=dest.split("_", 1)[-1].upper(), help=help_text
            )
        if ini_type != "cli":
            parser.addini(dest, help_text, type=ini_type, default=None)


def _value(config: pytest.Config, dest: str) -> str | bool | None:
    value = config.getoption(dest)
    if value is None and dest not in CLI_ONLY:
        value = config.getini(dest)
    if isinstance(value, str):
        value = value.strip() or None
    return value


def _setting(config: pytest.Config, dest: str) -> str:
    """The option's value as typed, else its entry in DEFAULTS."""
    value = _value(config, dest)
    return DEFAULTS[dest] if value is None else str(value)


def read_device(config: pytest.Config) -> str:
    """``--grade-device`` lower-cased, unchecked (read_settings checks it)."""
    return _setting(config, "grade_device").lower()


def grading_enabled(config: pytest.Config) -> bool:
    return bool(_value(config, "grade"))


def github_enabled(config: pytest.Config) -> bool:
    """``--grade-github``, the ini key ``grade_github``, else on inside
    GitHub Actions (``GITHUB_ACTIONS=true``)."""
    if config.getoption("grade_github"):
        return True
    ini = config.getini("grade_github")
    if ini is not None:
        return bool(ini)
    return os.environ.get("GITHUB_ACTIONS", "").lower() == "true"


def _manifest_path(value: str | None) -> Path | None:
    if not value:
        return None
    path = _absolute(value)
    if not path.is_file():
        raise pytest.UsageError(msg("usage.manifest_missing", path=value))
    return path


@dataclass(frozen=True)
class Settings:
    submission: Path | None
    device: str
    seed: int
    seed_was_random: bool
    timeout: float
    memory_mb: int
    isolation: str
    answer_limit_mb: float
    json_path: Path | None
    gradescope_path: Path | None
    fail_under: float | None
    inline: bool
    lang: str = "en"
    json_private_path: Path | None = None
    github: bool = False  # write GitHub Actions' outputs
    manifest_path: Path | None = None


def _report_path(option: str, value: str | None) -> Path | None:
    if not value:
        return None
    path = _absolute(value)
    if path.is_dir():
        raise pytest.UsageError(msg("usage.report_is_dir", option=option, path=value))
    directory = path.parent
    if not directory.is_dir():
        raise pytest.UsageError(msg("usage.report_dir", option=option, path=value, directory=str(directory)))
    if not os.access(directory, os.W_OK):
        raise pytest.UsageError(msg("usage.report_unwritable", option=option, path=value, directory=str(directory)))
    return path


def _number(
    value: str | bool | float, key: str, *, low: float, high: float | None = None, low_inclusive: bool = True
) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise pytest.UsageError(msg(key, value=value)) from None
    too_low = number < low if low_inclusive else number <= low
    if too_low or (high is not None and number > high) or number != number:
        raise pytest.UsageError(msg(key, value=value))
    return number


def parse_seed(value: object) -> tuple[int, bool]:
    if value is None or str(value).strip().lower() == "random":
        return random.Random().getrandbits(32), True
    try:
        seed = int(str(value).strip())
    except ValueError:
        raise pytest.UsageError(msg("usage.seed", value=value)) from None
    if seed < 0:
        raise pytest.UsageError(msg("usage.seed", value=value))
    return seed, False


def read_language(config: pytest.Config) -> str:
    """``--grade-lang``, else the locale (``LC_ALL``, ``LC_MESSAGES``,
    ``LANG``, as gettext reads them): ``zh_*`` gives Chinese."""
    value = _value(config, "grade_lang")
    if value is None:
        for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
            locale = os.environ.get(name)
            if locale:
                return "zh" if locale.lower().startswith("zh") else "en"
        return "en"
    lang = str(value).lower().replace("_", "-")
    lang = {"zh-cn": "zh", "zh-hans": "zh", "en-us": "en", "en-gb": "en"}.get(lang, lang)
    if lang not in LANGUAGES:
        raise pytest.UsageError(msg("usage.lang", value=value))
    return lang


def _collects_submission(tests: Path, submission: Path) -> bool:
    """Whether pytest, given the test path ``tests``, would collect files of
    the student's folder ``submission`` beyond the checks' own directory: a
    folder above the submission (it walks into it) or inside it, or a file
    deeper inside it. The checks' own directory as submission is the
    default written out, and fine."""
    if tests.is_dir() or (not tests.exists() and not tests.suffix):
        return tests != submission and (tests in submission.parents or submission in tests.parents)
    return submission in tests.parent.parents


def _authors_configuration(config: pytest.Config, submission: Path) -> bool:
    """Whether a configuration file inside the submission folder is the
    author's: named with -c, or found beside the checks because they sit in
    that folder themselves (``pytest --grade exercises/
    --grade-submission=exercises``, the default written out, where
    exercises/ is the course's own folder with its pytest.ini)."""
    if getattr(config.option, "inifilename", None):
        return True
    paths = [_argument_path(config, arg) for arg in config.args]
    folders = [path if path.is_dir() else path.parent for path in paths]
    return bool(folders) and all(folder == submission for folder in folders)


def _absolute(value: str) -> Path:
    """``value`` as a path, relative ones from the current directory."""
    path = Path(value)
    return path if path.is_absolute() else Path(os.getcwd()) / path


def _argument_path(config: pytest.Config, arg: str) -> Path:
    """The file or folder of a test argument (``path::name``), resolved
    from where pytest was invoked."""
    path = Path(arg.split("::")[0])
    return (path if path.is_absolute() else config.invocation_params.dir / path).resolve()


def _refuse_students_configuration(config: pytest.Config, submission: Path, value: str) -> None:
    inipath = config.inipath
    if (
        inipath is not None
        and submission in Path(inipath).resolve().parents
        and not _authors_configuration(config, submission)
    ):
        # "--grade-submission DIR" in two words makes pytest look for its
        # configuration in DIR before our option is known.
        raise pytest.UsageError(msg("usage.student_config", inifile=str(inipath), path=value))


def _refuse_collected_submission(config: pytest.Config, submission: Path, value: str) -> None:
    for arg in config.args:
        if _collects_submission(_argument_path(config, arg), submission):
            # the student's conftest.py and test files would run inside
            # the grader, outside the sandbox
            raise pytest.UsageError(msg("usage.submission_collected", path=value, tests=arg))


def _submission(config: pytest.Config) -> Path | None:
    """``--grade-submission``: an existing folder, neither holding the
    configuration pytest read nor collected by it."""
    value = _value(config, "grade_submission")
    if not value:
        return None
    value = str(value)
    path = _absolute(value)
    if not path.exists():
        raise pytest.UsageError(msg("usage.submission_missing", path=value))
    if not path.is_dir():
        raise pytest.UsageError(msg("usage.submission_not_dir", path=value))
    path = path.resolve()
    _refuse_students_configuration(config, path, value)
    _refuse_collected_submission(config, path, value)
    return path


def _choice(config: pytest.Config, dest: str, choices: tuple[str, ...], key: str) -> str:
    value = _setting(config, dest).lower()
    if value not in choices:
        raise pytest.UsageError(msg(key, value=value))
    return value


def _seed(config: pytest.Config) -> tuple[int, bool]:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "grade_seed" in workerinput:
        # An xdist worker grades with the controller's seed.
        return int(workerinput["grade_seed"]), bool(workerinput["grade_seed_was_random"])
    return parse_seed(_setting(config, "grade_seed"))


def _fail_under(config: pytest.Config) -> float | None:
    value = _value(config, "grade_fail_under")
    return None if value is None else _number(value, "usage.fail_under", low=0, high=100)


def _path_option(config: pytest.Config, dest: str) -> str | None:
    value = _value(config, dest)
    return None if value is None else str(value)


def read_settings(config: pytest.Config) -> Settings:
    """Validate every grading option; raise UsageError naming the bad one
    (in the order below, so the first bad option is the one named)."""
    submission = _submission(config)
    device = _choice(config, "grade_device", DEVICES, "usage.device")
    seed, was_random = _seed(config)
    timeout = _number(_setting(config, "grade_timeout"), "usage.timeout", low=0, low_inclusive=False)
    memory = _number(_setting(config, "grade_memory"), "usage.memory", low=1)
    isolation = _choice(config, "grade_isolation", ISOLATIONS, "usage.isolation")
    answer_limit = _number(_setting(config, "grade_answer_limit"), "usage.answer_limit", low=0, low_inclusive=False)
    fail_under = _fail_under(config)
    return Settings(
        submission=submission,
        device=device,
        seed=seed,
        seed_was_random=was_random,
        timeout=timeout,
        memory_mb=int(memory),
        isolation=isolation,
        answer_limit_mb=answer_limit,
        json_path=_report_path("--grade-json", _path_option(config, "grade_json")),
        gradescope_path=_report_path("--grade-gradescope", _path_option(config, "grade_gradescope")),
        fail_under=fail_under,
        json_private_path=_report_path("--grade-json-private", _path_option(config, "grade_json_private")),
        github=github_enabled(config),
        manifest_path=_manifest_path(_path_option(config, "grade_manifest")),
        # invocation_params.args holds what was typed, without addopts.
        inline=bool(config.getoption("grade_inline")) and "--grade-inline" in config.invocation_params.args,
        lang=i18n.current_language(),
    )

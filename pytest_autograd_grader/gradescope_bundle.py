"""``autograd-grader gradescope-bundle CHECKS -o autograder.zip``: the zip an
instructor uploads to Gradescope as the assignment's autograder.

At the zip's root: ``setup.sh`` (installs Python, the CPU build of torch,
bubblewrap where it can, and the grader), ``run_autograder`` (grades the
upload with the safe invocation and always leaves a valid results.json),
``gradescope_run.py`` (what run_autograder runs), ``requirements.txt`` (the
grader, as --grader-requirement says), ``bundle.json`` (the grading options
and the messages of the fallback), and ``checks/``, a copy of CHECKS.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import stat
import sys
import zipfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from . import __version__
from .layout import is_check_file
from .messages import EN, LANGUAGES, catalogue, msg, saved_language, use_language
from .reporters.files import ReportWriteError, write_bytes_atomic

# not the instructor's checks, and nothing Gradescope needs
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".git", ".hg", ".svn", ".mypy_cache", ".ipynb_checkpoints",
             ".venv", "venv"}
SKIP_SUFFIXES = (".pyc", ".pyo")
# pytest settings that -c checks/pytest.ini would silently ignore
OTHER_CONFIGS = (("pyproject.toml", "[tool.pytest.ini_options]"), ("tox.ini", "[pytest]"),
                 ("setup.cfg", "[tool:pytest]"))
# the messages gradescope_run.py and run_autograder's fallback speak
RUN_MESSAGES = ("gradescope.failed", "gradescope.failed.no_results", "gradescope.failed.unreadable",
                "gradescope.failed.incomplete")
SCRIPT_MODE = 0o755
FILE_MODE = 0o644
# fixed timestamps: the same checks give the same zip
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


class BundleError(Exception):
    """The bundle cannot be made; the message says what to do."""


@dataclass
class Bundle:
    """The zip's contents: name -> (bytes, mode)."""

    files: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def add(self, name: str, data: bytes, mode: int = FILE_MODE) -> None:
        self.files[name] = (data, mode)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checks", metavar="CHECKS",
                        help="the directory of your checks (test_*.py, conftest.py, pytest.ini, helper files)")
    parser.add_argument("-o", "--output", default="autograder.zip",
                        help="the zip to write (default: autograder.zip)")
    parser.add_argument("--grader-requirement", metavar="SPEC", default=None,
                        help="what setup.sh pip-installs for the grader: a requirement, a .whl file (put in the "
                             f"zip) or a git URL (default: pytest-autograd-grader=={__version__})")
    parser.add_argument("--timeout", metavar="SECONDS", default=None,
                        help="--grade-timeout for every run (default: the grader's)")
    parser.add_argument("--seed", metavar="N", default=None,
                        help="--grade-seed for every run (default: random on every run, kept in results.json)")
    parser.add_argument("--lang", choices=LANGUAGES, default="en",
                        help="the language of the feedback and of this command (default: en)")


def run(args: argparse.Namespace) -> int:
    restore = saved_language()  # cli.main may run inside another program (tests)
    use_language(args.lang)
    try:
        return _run(args)
    finally:
        restore()


def _run(args: argparse.Namespace) -> int:
    try:
        bundle = build_bundle(Path(args.checks), requirement=args.grader_requirement, timeout=args.timeout,
                              seed=args.seed, lang=args.lang)
        output = _output_path(Path(args.output), Path(args.checks))
        data = zip_bytes(bundle)
        _write(output, data)
    except BundleError as exc:
        print(exc, file=sys.stderr)
        return 2
    for warning in bundle.warnings:
        print(warning, file=sys.stderr)
    print(msg("bundle.wrote", output=output, size=_size(len(data))))
    for name, (content, mode) in sorted(bundle.files.items()):
        print(f"  {stat.filemode(stat.S_IFREG | mode)}  {_size(len(content)):>9}  {name}")
    print(msg("bundle.seed_fixed", seed=args.seed) if args.seed is not None else msg("bundle.seed_random"))
    print(msg("bundle.next", output=output))
    return 0


def build_bundle(checks: Path, requirement: str | None = None, timeout: str | float | None = None,
                 seed: str | int | None = None, lang: str = "en") -> Bundle:
    """Everything the zip holds; raises BundleError on bad input."""
    if not checks.is_dir():
        raise BundleError(msg("bundle.not_dir", path=str(checks)))
    bundle = Bundle()
    options = ["--grade-lang", lang]
    if timeout is not None:
        options += ["--grade-timeout", _timeout(timeout)]
    if seed is not None:
        options += ["--grade-seed", _seed(seed)]
    _add_checks(bundle, checks)
    if not any(_is_test_file(name) for name in bundle.files):
        raise BundleError(msg("bundle.no_tests", path=str(checks)))
    if "checks/pytest.ini" not in bundle.files:
        # -c checks/pytest.ini needs a file; [pytest] makes it the config
        bundle.add("checks/pytest.ini", b"[pytest]\n")
        bundle.warnings.append(msg("bundle.ini_written", path=checks))
        for name, section in OTHER_CONFIGS:
            entry = bundle.files.get(f"checks/{name}")
            if entry is not None and section.encode() in entry[0]:
                bundle.warnings.append(msg("bundle.ini_ignored", file=checks / name))
    bundle.add("requirements.txt", _requirement(bundle, requirement).encode() + b"\n")
    texts = {**EN, **catalogue(lang)}
    bundle.add("bundle.json", (json.dumps({
        "grader": __version__, "grade_options": options,
        "messages": {key: texts[key] for key in RUN_MESSAGES},
    }, indent=2, ensure_ascii=False) + "\n").encode())
    bundle.add("setup.sh", _resource("setup.sh"), SCRIPT_MODE)
    bundle.add("run_autograder", _run_autograder(lang), SCRIPT_MODE)
    bundle.add("gradescope_run.py", _resource("gradescope_run.py"))
    bundle.add("layout.py", resources.files(__package__).joinpath("layout.py").read_bytes())
    return bundle


def zip_bytes(bundle: Bundle) -> bytes:
    """The zip of ``bundle``, with Unix modes (run_autograder executable)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, (data, mode) in sorted(bundle.files.items()):
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.create_system = 3  # Unix: unzip applies the mode bits
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


# -- the pieces --------------------------------------------------------------

def _is_test_file(name: str) -> bool:
    return name.startswith("checks/") and is_check_file(name.rsplit("/", 1)[-1])


def _add_checks(bundle: Bundle, checks: Path) -> None:
    """Copy CHECKS under checks/: regular files only, no caches or VCS
    data; a symbolic link is left out with a warning (on Gradescope it would
    point nowhere, or somewhere the instructor did not mean to ship)."""
    for root, dirs, names in os.walk(checks, followlinks=False):
        here = Path(root)
        kept = []
        for name in sorted(dirs):
            if name in SKIP_DIRS:
                continue
            if (here / name).is_symlink():
                bundle.warnings.append(msg("bundle.symlink", path=here / name))
            else:
                kept.append(name)
        dirs[:] = kept
        for name in sorted(names):
            path = here / name
            if name.endswith(SKIP_SUFFIXES):
                continue
            if path.is_symlink():
                bundle.warnings.append(msg("bundle.symlink", path=path))
                continue
            if not path.is_file():
                continue  # sockets, fifos
            relative = path.relative_to(checks).as_posix()
            bundle.add(f"checks/{relative}", path.read_bytes())


def _requirement(bundle: Bundle, spec: str | None) -> str:
    """The line of requirements.txt; a local .whl or sdist goes into the zip
    (setup.sh installs it from there), a directory is refused."""
    if spec is None:
        return f"pytest-autograd-grader=={__version__}"
    spec = spec.strip()
    if not spec or "\n" in spec or "\r" in spec or spec.startswith("-"):
        raise BundleError(msg("bundle.requirement_bad", spec=spec))
    path = Path(spec).expanduser()
    if path.is_dir():
        raise BundleError(msg("bundle.requirement_dir", spec=spec))
    if path.is_file():
        bundle.add(f"wheels/{path.name}", path.read_bytes())
        return f"./wheels/{path.name}"
    return spec


def _timeout(value) -> str:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise BundleError(msg("bundle.timeout", value=str(value)))
    return f"{seconds:g}"


def _seed(value) -> str:
    try:
        return str(int(str(value), 10))
    except ValueError:
        raise BundleError(msg("bundle.seed", value=str(value))) from None


def _resource(name: str) -> bytes:
    return resources.files(__package__).joinpath("gradescope_files", name).read_bytes()


def _run_autograder(lang: str) -> bytes:
    """run_autograder with the results it writes when python3 itself fails,
    in the bundle's language (one line of JSON in a quoted here-document)."""
    texts = {**EN, **catalogue(lang)}
    fallback = {
        "score": 0.0,
        "output": texts["gradescope.failed"].format(reason=texts["gradescope.failed.no_python"]),
        "output_format": "text",
        "stdout_visibility": "hidden",
        "tests": [],
        "extra_data": {"complete": False},
    }
    script = _resource("run_autograder").decode()
    return script.replace("@FALLBACK_RESULTS@", json.dumps(fallback, ensure_ascii=False)).encode()


def _output_path(output: Path, checks: Path) -> Path:
    resolved = output.expanduser().absolute()
    if checks.is_dir():
        checks_dir = checks.resolve()
        if checks_dir == resolved.resolve() or checks_dir in resolved.resolve().parents:
            raise BundleError(msg("bundle.output_inside", output=str(output), path=str(checks)))
    if not resolved.parent.is_dir():
        raise BundleError(msg("bundle.output_dir", output=str(output), directory=str(resolved.parent)))
    return output


def _write(output: Path, data: bytes) -> None:
    try:
        write_bytes_atomic(output, data)
    except ReportWriteError as exc:
        raise BundleError(msg("bundle.write_failed", output=str(output), reason=str(exc))) from None


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"

"""``autograd-grader gradescope-bundle CHECKS -o autograder.zip``: the zip an
instructor uploads to Gradescope as the assignment's autograder.

At the zip's root: ``setup.sh`` (installs Python, the CPU build of torch,
bubblewrap where it can, and the grader), ``run_autograder`` (grades the
upload with the safe invocation and always leaves a valid results.json),
``gradescope_run.py`` (what run_autograder runs), ``wheels/`` (the wheel of
the grader that wrote the bundle: the grader is not on the package index),
``requirements.txt`` (that wheel, or what --grader-requirement says),
``bundle.json`` (the grading options and the messages of the fallback),
``checks/``, a copy of CHECKS, and ``grade-manifest.json``, its checks and
their points (so a check file that cannot be loaded on Gradescope costs its
points visibly instead of leaving the total).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from .. import __version__
from ..i18n import LANGUAGES, catalogue, msg, saved_language, use_language
from ..i18n.en import EN
from ..reporters.files import ReportWriteError, write_bytes_atomic
from . import SetupError
from .course_files import FILE_MODE, SCRIPT_MODE, listing, read_checks, refuse_inside, size, zip_bytes
from .wheel import grader_wheel

# the messages gradescope_run.py and run_autograder's fallback speak
RUN_MESSAGES = (
    "gradescope.failed",
    "gradescope.failed.no_results",
    "gradescope.failed.unreadable",
    "gradescope.failed.incomplete",
)
# a requirement setup.sh's pip fetches from elsewhere than the index: a URL
# (also as a direct reference, name @ url) or a VCS scheme
URL = re.compile(r"://|^(git|hg|svn|bzr)\+", re.I)
# what pip takes for a file of its own
EXTRAS = "notebook,engine"  # what a grading server needs of the grader's extras (see _requirement)
ARCHIVE_SUFFIXES = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz")
MANIFEST = "grade-manifest.json"  # beside checks/: run from the zip's folder, the grader reads it there


@dataclass
class Bundle:
    """The zip's contents: name -> (bytes, mode)."""

    files: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def add(self, name: str, data: bytes, mode: int = FILE_MODE) -> None:
        self.files[name] = (data, mode)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "checks",
        metavar="CHECKS",
        help="the directory of your checks (test_*.py, conftest.py, pytest.ini, helper files)",
    )
    parser.add_argument("-o", "--output", default="autograder.zip", help="the zip to write (default: autograder.zip)")
    parser.add_argument(
        "--grader-requirement",
        metavar="SPEC",
        default=None,
        help="what setup.sh pip-installs for the grader instead of the default, the wheel of the "
        "grader you run (put in the zip): another .whl file (put in the zip), a git URL, or "
        "a requirement (fetched from the package index, where this grader is not yet)",
    )
    parser.add_argument(
        "--timeout", metavar="SECONDS", default=None, help="--grade-timeout for every run (default: the grader's)"
    )
    parser.add_argument(
        "--seed",
        metavar="N",
        default=None,
        help="--grade-seed for every run (default: random on every run, kept in results.json)",
    )
    parser.add_argument(
        "--lang", choices=LANGUAGES, default="en", help="the language of the feedback and of this command (default: en)"
    )


def run(args: argparse.Namespace) -> int:
    restore = saved_language()  # cli.main may run inside another program (tests)
    use_language(args.lang)
    try:
        return _run(args)
    finally:
        restore()


def _run(args: argparse.Namespace) -> int:
    try:
        bundle = build_bundle(
            Path(args.checks), requirement=args.grader_requirement, timeout=args.timeout, seed=args.seed, lang=args.lang
        )
        output = _output_path(Path(args.output), Path(args.checks))
        data = zip_bytes(dict(sorted(bundle.files.items())))
        _write(output, data)
    except SetupError as exc:
        print(exc, file=sys.stderr)
        return 2
    for warning in bundle.warnings:
        print(warning, file=sys.stderr)
    print(msg("bundle.wrote", output=output, size=size(len(data))))
    print("\n".join(listing(bundle.files)))
    print(msg("bundle.seed_fixed", seed=args.seed) if args.seed is not None else msg("bundle.seed_random"))
    print(msg("bundle.next", output=output))
    return 0


def build_bundle(
    checks: Path,
    requirement: str | None = None,
    timeout: str | float | None = None,
    seed: str | int | None = None,
    lang: str = "en",
) -> Bundle:
    """Everything the zip holds; raises SetupError on bad input."""
    copied = read_checks(checks, "bundle")
    bundle = Bundle(warnings=copied.warnings)
    for name, data in copied.files.items():
        bundle.add(f"checks/{name}", data)
    options = ["--grade-lang", lang]
    if timeout is not None:
        options += ["--grade-timeout", _timeout(timeout)]
    if seed is not None:
        options += ["--grade-seed", _seed(seed)]
    manifest = _manifest(copied.files, bundle)
    if manifest is not None:
        # a check file that fails to load on Gradescope (a package it lacks) keeps its points, scored 0
        bundle.add(MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
        options += ["--grade-manifest", MANIFEST]
    bundle.add("requirements.txt", _requirement(bundle, requirement).encode() + b"\n")
    texts = {**EN, **catalogue(lang)}
    bundle.add(
        "bundle.json",
        (
            json.dumps(
                {
                    "grader": __version__,
                    "grade_options": options,
                    "messages": {key: texts[key] for key in RUN_MESSAGES},
                },
                indent=2,
                ensure_ascii=False,
            )
            + "\n"
        ).encode(),
    )
    bundle.add("setup.sh", _resource("setup.sh"), SCRIPT_MODE)
    bundle.add("run_autograder", _run_autograder(lang), SCRIPT_MODE)
    bundle.add("gradescope_run.py", _resource("gradescope_run.py"))
    bundle.add("layout.py", resources.files("pytest_autograd_grader.boundary").joinpath("layout.py").read_bytes())
    return bundle


# -- the pieces --------------------------------------------------------------


def _manifest(files: dict[str, bytes], bundle: Bundle) -> dict | None:
    """The manifest of the checks as the zip holds them, listed from a copy;
    None, with a warning, when pytest cannot list them here."""
    from .course_files import manifest_of_files
    from .manifest import ManifestError

    try:
        return manifest_of_files(files, prefix="gradescope-bundle-")
    except ManifestError as exc:
        bundle.warnings.append(msg("bundle.no_manifest", reason=str(exc)))
        return None


def _requirement(bundle: Bundle, spec: str | None) -> str:
    """The line of requirements.txt. By default the wheel of the grader
    running now, in the zip (setup.sh installs it from there); a local .whl
    or sdist goes into the zip too; a directory or a missing file is
    refused; a plain requirement is written as is, with a warning, since
    pip would fetch it from the index, where this grader is not yet."""
    # [notebook]: nbformat, to read exercises handed in as notebooks;
    # [engine]: hypothesis, for a course whose checks fuzz an engine (fuzz_engine)
    if spec is None:
        wheel = grader_wheel()
        bundle.add(f"wheels/{wheel.name}", wheel.data)
        return f"./wheels/{wheel.name}[{EXTRAS}]"
    spec = spec.strip()
    if not spec or "\n" in spec or "\r" in spec or spec.startswith("-"):
        raise SetupError(msg("bundle.requirement_bad", spec=spec))
    path = Path(spec).expanduser()
    if path.is_dir():
        raise SetupError(msg("bundle.requirement_dir", spec=spec))
    if path.is_file():
        bundle.add(f"wheels/{path.name}", path.read_bytes())
        return f"./wheels/{path.name}" + (f"[{EXTRAS}]" if path.name.endswith(".whl") else "")
    if URL.search(spec):
        return spec
    if spec.lower().endswith(ARCHIVE_SUFFIXES) or "/" in spec or "\\" in spec:
        raise SetupError(msg("bundle.requirement_missing", spec=spec))
    bundle.warnings.append(msg("bundle.requirement_index", spec=spec))
    return spec


def _timeout(value: str | float) -> str:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise SetupError(msg("bundle.timeout", value=str(value)))
    return f"{seconds:g}"


def _seed(value: str | int) -> str:
    try:
        return str(int(str(value), 10))
    except ValueError:
        raise SetupError(msg("bundle.seed", value=str(value))) from None


def _resource(name: str) -> bytes:
    return resources.files(__package__).joinpath("gradescope_files").joinpath(name).read_bytes()


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
    refuse_inside(output, checks, "bundle")
    if not resolved.parent.is_dir():
        raise SetupError(msg("bundle.output_dir", output=str(output), directory=str(resolved.parent)))
    return output


def _write(output: Path, data: bytes) -> None:
    try:
        write_bytes_atomic(output, data)
    except ReportWriteError as exc:
        raise SetupError(msg("bundle.write_failed", output=str(output), reason=str(exc))) from None

"""Grade one Gradescope submission; run by run_autograder as
``python3 gradescope_run.py ROOT`` (written by ``autograd-grader
gradescope-bundle``; the standard library only, so it works even where the
grader failed to install).

It finds the student's modules in ROOT/submission, grades them with the
checks in ROOT/source/checks, and then makes sure ROOT/results/results.json
is valid JSON with a score and an output that says what went wrong, if
anything did. Exit status 0 means that file is valid.

The student must not be able to steer the grader through the upload:
pytest runs from ROOT/source with our own ini file and rootdir, and the
submission is only ever the value of --grade-submission=DIR (with '=', so
pytest never takes it for a place to look for configuration or tests).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# layout.py lies beside this file in the bundle
sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    from layout import find_modules
except ImportError:  # read from the installed package (its tests)
    from pytest_autograd_grader.boundary.layout import find_modules

# what this file falls back to when bundle.json is unreadable (the bundle
# writes the messages in the language it was made with)
MESSAGES = {
    "gradescope.failed": "The autograder could not finish grading your submission: {reason}. This is most likely "
    "not a problem in your code: contact your instructor, who can see the autograder's log.",
    "gradescope.failed.no_results": "the grader stopped (exit status {code}) without writing any results",
    "gradescope.failed.unreadable": "the grader's results file could not be read (exit status {code})",
    "gradescope.failed.incomplete": "the grader stopped (exit status {code}) before every check had run; "
    "the scores here are those of the checks that finished",
}


def load_bundle(source: Path) -> dict:
    try:
        data = json.loads((source / "bundle.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def grade_command(root: Path, modules: Path, options: list[str]) -> list[str]:
    """The safe invocation (README, instructor CI): our ini file and rootdir,
    no cache written anywhere, the submission only as --grade-submission=."""
    checks = root / "source" / "checks"
    return [
        sys.executable,
        "-m",
        "pytest",
        "-c",
        str(checks / "pytest.ini"),
        "--rootdir",
        str(checks),
        "-p",
        "no:cacheprovider",
        "--grade",
        str(checks),
        f"--grade-submission={modules}",
        "--grade-gradescope",
        str(root / "results" / "results.json"),
        *options,
    ]


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _dict(value: object) -> dict:
    """``value`` when it is a dict, else an empty one (results.json and
    bundle.json are read, not trusted)."""
    return value if isinstance(value, dict) else {}


def finish_results(path: Path, code: int, messages: dict[str, str]) -> dict:
    """The results Gradescope gets after a grading run that exited with
    ``code``: the grader's own when they are complete; else what could be
    read of them (partial scores kept) with an explanation on top."""

    def text(key: str, **fields: object) -> str:
        template = messages.get(key) or MESSAGES[key]
        try:
            return template.format(**fields)
        except (KeyError, IndexError, ValueError):
            return MESSAGES[key].format(**fields)

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data, reason = {}, "gradescope.failed.no_results"
    except (OSError, ValueError):
        data, reason = {}, "gradescope.failed.unreadable"
    else:
        if not isinstance(data, dict):
            data = {}
        extra = _dict(data.get("extra_data"))
        if _number(data.get("score")) and extra.get("complete") is not False:
            return data  # a complete run: the grader's own results
        reason = "gradescope.failed.incomplete" if data else "gradescope.failed.unreadable"
    tests = [t for t in data.get("tests", []) if isinstance(t, dict)] if isinstance(data.get("tests"), list) else []
    if not _number(data.get("score")):
        data["score"] = sum(t["score"] for t in tests if _number(t.get("score")))
    data["tests"] = tests
    output = data.get("output") if isinstance(data.get("output"), str) else ""
    data["output"] = text("gradescope.failed", reason=text(reason, code=code)) + ("\n\n" + output if output else "")
    data.setdefault("output_format", "text")
    data.setdefault("stdout_visibility", "hidden")
    extra = _dict(data.get("extra_data"))
    data["extra_data"] = {**extra, "grader_exit_code": code, "complete": False}
    return data


def write_results(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else os.environ.get("AUTOGRADER_ROOT", "/autograder")).absolute()
    results = root / "results" / "results.json"
    bundle = load_bundle(root / "source")
    messages = _dict(bundle.get("messages"))
    code = -1
    try:
        options = [str(o) for o in bundle.get("grade_options", [])]
        modules = find_modules(root / "submission")
        command = grade_command(root, modules, options)
        print("run_autograder: the student's modules are in", modules, flush=True)
        print("run_autograder:", " ".join(command), flush=True)
        code = subprocess.run(command, cwd=root / "source", stdin=subprocess.DEVNULL).returncode
    except Exception as exc:  # whatever broke, Gradescope still gets a results file
        print(f"run_autograder: could not run the grader: {type(exc).__name__}: {exc}", file=sys.stderr)
    try:
        write_results(results, finish_results(results, code, messages))
    except Exception as exc:
        print(f"run_autograder: could not write {results}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

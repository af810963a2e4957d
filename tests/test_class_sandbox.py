"""Students graded side by side by a class run share the workers' zygotes
(one torch import for the class, not one per worker), yet see nothing of
each other: each worker finds only its own staged submission and a /tmp of
its own, however hard its code looks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from conftest import class_command
from test_isolation import require_isolation

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox needs Linux")

CHECKS = """
import pytest

pytestmark = pytest.mark.grade(concept="leaf")


def test_look(submission):
    submission("nosy").look()
"""

NOSY = '''
import glob
import os
import sys
import time


def look():
    """Wait for the student graded beside us, then tell all we can find of
    it: every staged submission, everything in /tmp and /dev/shm, and the
    files of every folder we find."""
    with open("/tmp/{name}-was-here", "w") as handle:
        handle.write("{name}")
    time.sleep(0.4)
    places = ["/run/grader/stage", "/tmp", "/dev/shm"]
    seen = sorted(path for place in places for path in glob.glob(place + "/**", recursive=True))
    stolen = []
    for path in seen:
        if path.startswith(sys.prefix + "/"):
            continue  # the Python we run on (a venv in /tmp), read-only
        try:
            if os.path.isfile(path):
                with open(path, errors="replace") as handle:
                    stolen.append(handle.read(40))
        except OSError:
            pass
    raise ValueError("SEEN " + repr(seen) + " READ " + repr(stolen) + " END")
'''


def test_students_graded_side_by_side_see_nothing_of_each_other(tmp_path):
    checks, subs, out = tmp_path / "checks", tmp_path / "subs", tmp_path / "out"
    checks.mkdir()
    (checks / "test_look.py").write_text(CHECKS)
    (checks / "pytest.ini").write_text("[pytest]\n")
    names = [f"student{n}" for n in range(6)]
    for name in names:
        (subs / name).mkdir(parents=True)
        (subs / name / "nosy.py").write_text(NOSY.replace("{name}", name))
    done = subprocess.run(
        class_command(checks, subs, out, "-j", "2", "--timeout=20"),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    stages = set()
    for name in names:
        (check,) = json.loads((out / f"{name}.json").read_text())["checks"]
        found = re.search(r"SEEN (.*) READ (.*) END", check["feedback"])
        assert found, check["feedback"]
        seen, read = found.group(1), found.group(2)
        for other in names:
            if other != name:
                assert other not in seen and other not in read, (name, check["feedback"])
        staged = re.findall(r"/run/grader/stage/([^/']+)/nosy\.py", seen)
        assert len(staged) <= 1, seen  # its own submission, and no other
        stages.update(staged)
    if any("-" in stage for stage in stages):
        # bubblewrap's sandbox was shared: both workers' students were in it
        assert {stage.split("-")[0] for stage in stages} == {"0", "1"}, stages


THIEF = '''
import os
import re
import sys

from secret import SECRET  # noqa: F401  (what a classmate would be after)

PLACES = {places!r}


def look():
    """Read every file within reach where a classmate's work or report may
    lie, and tell every secret found."""
    found, read = set(), 0
    for place in PLACES:
        for root, dirs, files in os.walk(place):
            dirs[:] = [d for d in dirs if not os.path.join(root, d).startswith((sys.prefix, sys.base_prefix))]
            for name in files:
                read += 1
                if read > 20000:
                    break
                try:
                    with open(os.path.join(root, name), "rb") as handle:
                        found.update(re.findall(rb"SECRET-[a-z]+-[0-9]+", handle.read(1 << 16)))
                except OSError:
                    pass
    raise ValueError("FOUND " + repr(sorted(s.decode() for s in found)) + " END")
'''


def _class_in_the_open() -> Path:
    """A folder every user may enter (an instructor's course folder) with
    the class's export in it, private to the instructor: each student's
    code looks for the other's files there, in the class's OUT (the reports,
    the export unpacked in OUT/.intake) and in every staging place."""
    place = Path(tempfile.mkdtemp(prefix="class-open-", dir="/tmp"))
    place.chmod(0o755)
    checks, subs, out = place / "checks", place / "subs", place / "out"
    checks.mkdir()
    (checks / "test_look.py").write_text(CHECKS.replace('"nosy"', '"thief"'))
    (checks / "pytest.ini").write_text("[pytest]\n")
    places = [str(subs), str(out), str(out / ".intake"), "/run/grader/stage", "/tmp", "/dev/shm", "/var/tmp"]
    with zipfile.ZipFile(place / "export.zip", "w") as archive:
        for number, name in enumerate(("alice", "bob")):
            archive.writestr(f"{name}/secret.py", f'SECRET = "SECRET-{name}-{number}{os.getpid()}"\n')
            archive.writestr(f"{name}/thief.py", THIEF.replace("{places!r}", repr(places)))
    (place / "export.zip").chmod(0o600)
    return place


def _grade(place: Path, submissions: Path, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        class_command(place / "checks", submissions, place / "out", "-j", "1", "--timeout=60", "--isolation", mode),
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("mode", ["bwrap", "user"])
def test_a_students_code_reads_nothing_of_a_classmates(mode: str):
    # in user isolation each worker is another uid of the same machine: the
    # grader's unpacked copies (OUT/.intake), the staged copies and the
    # reports (with -j 1, the student graded second looks for the first
    # one's report) must all be out of its reach
    require_isolation(mode)
    place = _class_in_the_open()
    try:
        out = place / "out"
        done = _grade(place, place / "export.zip", mode)
        assert done.returncode == 0, done.stderr
        for name in ("alice", "bob"):
            (check,) = json.loads((out / f"{name}.json").read_text())["checks"]
            found = re.search(r"FOUND (.*) END", check["feedback"])
            assert found, check["feedback"]
            secrets = re.findall(r"SECRET-([a-z]+)-", found.group(1))
            assert secrets == [name], (name, check["feedback"])  # its own staged copy, nothing else
        assert out.stat().st_mode & 0o077 == 0 and (out / "alice.json").stat().st_mode & 0o077 == 0
    finally:
        shutil.rmtree(place, ignore_errors=True)


@pytest.mark.parametrize("given", ["folder", "zip"])
def test_a_class_others_can_read_is_not_graded_under_user_isolation(given: str):
    # the instructor's folder graded where it is, or the export's zip
    # itself, stays where every worker's uid could read it: each student is
    # told what to do, none is graded
    require_isolation("user")
    place = _class_in_the_open()
    try:
        submissions = place / "export.zip"
        if given == "folder":
            with zipfile.ZipFile(submissions) as archive:
                archive.extractall(place / "subs")
            submissions = place / "subs"
            for folder in [submissions, *submissions.iterdir()]:
                folder.chmod(0o755)
        else:
            submissions.chmod(0o644)
        _grade(place, submissions, "user")
        for name in ("alice", "bob"):
            report = json.loads((place / "out" / f"{name}.json").read_text())
            assert report["status"] == "error" and "chmod -R o-rwx" in report["error"], report
            assert str(submissions) in report["error"] and report["checks"] == []
    finally:
        shutil.rmtree(place, ignore_errors=True)

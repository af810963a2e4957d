"""Students graded side by side by a class run share the workers' zygotes
(one torch import for the class, not one per worker), yet see nothing of
each other: each worker finds only its own staged submission and a /tmp of
its own, however hard its code looks."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox needs Linux")

CHECKS = '''
import pytest

pytestmark = pytest.mark.grade(concept="leaf")


def test_look(submission):
    submission("nosy").look()
'''

NOSY = '''
import glob
import os
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
        try:
            if os.path.isfile(path):
                with open(path) as handle:
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
    done = subprocess.run([sys.executable, "-m", "pytest_autograd_grader", "class", "--checks", str(checks),
                           "--submissions", str(subs), "--out", str(out), "-j", "2", "--timeout=20"],
                          capture_output=True, text=True)
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

"""A class graded on a real one-node Slurm cluster with the ready files of
templates/cluster/slurm: munged, slurmctld and slurmd started here with a
configuration written by the test (REFERENCE.md's settings), the job array
and its afterok merge submitted by the template's submit.sh, and the merged
gradebook compared row by row with a single-machine run at the same salt.

CI installs slurm-wlm and munge and runs this; elsewhere it is skipped with
the reason when the daemons cannot start. A journey: slow (a cluster and
three gradings), left out locally with -m 'not journey'."""

from __future__ import annotations

import csv
import io
import os
import subprocess
from pathlib import Path

import pytest
from conftest import class_command
from slurm_cluster import ClusterUnavailable, one_node_cluster, wait_for_queue

pytestmark = pytest.mark.journey

REPO = Path(__file__).resolve().parent.parent
SLURM = REPO / "templates" / "cluster" / "slurm"


@pytest.fixture
def cluster(tmp_path):
    try:
        with one_node_cluster(tmp_path / "slurm") as env:
            yield env
    except ClusterUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Slurm test: {exc} (.ci/run installs slurm-wlm and munge)")
        pytest.skip(f"needs a one-node Slurm cluster: {exc}")


def _table(path: Path) -> list[dict]:
    rows = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")))
    return [{k: v for k, v in row.items() if k not in ("started", "finished")} for row in rows]


def test_a_class_graded_by_the_slurm_templates_equals_one_machines(cluster, tmp_path):
    from test_class_runner import _make_class

    checks, subs = _make_class(tmp_path)
    out, alone = tmp_path / "out", tmp_path / "alone"
    env = {**cluster, "CHECKS": str(checks), "SUBMISSIONS": str(subs), "OUT": str(out), "SALT": "s-cluster"}
    env = {k: v for k, v in env.items() if not k.startswith(("SLURM_ARRAY", "GRADE_SHARD", "JOB_COMPLETION"))}
    # two tasks of one core each on this machine's two (options after SHARDS go to the array's sbatch)
    submitted = subprocess.run(
        ["bash", str(SLURM / "submit.sh"), "2", "--cpus-per-task=1"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert submitted.returncode == 0, submitted.stderr
    assert "2 shards, salt s-cluster" in submitted.stdout
    # the same class on one machine, at the same salt, while the cluster works
    subprocess.run(
        class_command(checks, subs, alone, "--salt", "s-cluster", "-j", "1"),
        check=True,
        capture_output=True,
        timeout=600,
    )
    assert wait_for_queue(env, 600), "the array and its merge did not finish in 10 minutes"
    logs = "\n".join(p.read_text()[-2000:] for p in sorted(tmp_path.glob("autograd-*.log")))
    assert {p.name for p in out.glob("part-*")} == {"part-1-of-2", "part-2-of-2"}, logs
    assert (out / "merged" / "gradebook.csv").is_file(), logs
    assert _table(out / "merged" / "gradebook.csv") == _table(alone / "gradebook.csv")

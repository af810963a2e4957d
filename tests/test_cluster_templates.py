"""The ready files for clusters (templates/cluster/): each checked against
its engine's schema where one exists (Kubernetes' own, GitHub's workflow
schema), run through bash's parser, and their shard arithmetic played
against one class: every student graded by exactly one task. The Slurm
files also run on a real one-node cluster (test_slurm.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from pytest_autograd_grader.classroom.shards import from_environment, part_folder
from pytest_autograd_grader.classroom.students import Student, shard

REPO = Path(__file__).resolve().parent.parent
CLUSTER = REPO / "templates" / "cluster"
CLASS = [Student(f"s{i:03d}", f"s{i:03d}", Path("."), True) for i in range(37)]


def graded_once(envs):
    """Each task's shard from its scheduler's variables: together, the class once."""
    seen = []
    for env in envs:
        spec, _ = from_environment(env)
        seen += [s.id for s in shard(CLASS, spec)]
    return sorted(seen) == sorted(s.id for s in CLASS)


def test_slurm_files_parse_and_their_array_tasks_split_the_class():
    for name in ("grade-class.sbatch", "merge-class.sbatch", "submit.sh"):
        subprocess.run(["bash", "-n", str(CLUSTER / "slurm" / name)], check=True)
    grade = (CLUSTER / "slurm" / "grade-class.sbatch").read_text()
    assert re.search(r"^#SBATCH --job-name=", grade, re.M) and "--shard" not in grade.split("set -euo")[1]
    submit = (CLUSTER / "slurm" / "submit.sh").read_text()
    assert '--array="0-$((shards - 1))"' in submit and '--dependency="afterok:' in submit
    for tasks in (1, 2, 4, 7):
        assert graded_once(
            {
                "SLURM_ARRAY_TASK_ID": str(t),
                "SLURM_ARRAY_TASK_MIN": "0",
                "SLURM_ARRAY_TASK_MAX": str(tasks - 1),
                "SLURM_ARRAY_TASK_COUNT": str(tasks),
            }
            for t in range(tasks)
        )


def test_kubernetes_jobs_meet_kubernetes_schemas_and_their_indexes_split_the_class():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    jobs = {}
    for name in ("grade-class.yaml", "merge-class.yaml"):
        for document in yaml.safe_load_all((CLUSTER / "kubernetes" / name).read_text()):
            kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)
            jobs[document["metadata"]["name"]] = document
    grade = jobs["autograd-grade"]["spec"]
    assert grade["completionMode"] == "Indexed" and grade["completions"] == grade["parallelism"]
    env = {e["name"]: e["value"] for e in grade["template"]["spec"]["containers"][0]["env"]}
    assert int(env["GRADE_SHARDS"]) == grade["completions"]  # a pod sees no count: it is handed in
    assert graded_once(
        {"JOB_COMPLETION_INDEX": str(i), "GRADE_SHARDS": env["GRADE_SHARDS"]} for i in range(grade["completions"])
    )
    assert "merge /data/out --out /data/out/merged" in str(jobs["autograd-merge"])


def test_the_actions_workflow_meets_githubs_schema_and_its_matrix_splits_the_class():
    workflow = CLUSTER / "github-actions" / "grade-class.yml"
    checked = subprocess.run(
        ["check-jsonschema", "--builtin-schema", "vendor.github-workflows", str(workflow)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    jobs = yaml.safe_load(workflow.read_text())["jobs"]
    shards = jobs["grade"]["strategy"]["matrix"]["shard"]
    assert jobs["grade"]["env"]["GRADE_SHARD"] == "${{ matrix.shard }}/${{ strategy.job-total }}"
    # GitHub fills the expression: job-total is the matrix's size
    assert graded_once({"GRADE_SHARD": f"{k}/{len(shards)}"} for k in shards)
    assert jobs["merge"]["needs"] == "grade"
    download = next(s for s in jobs["merge"]["steps"] if s.get("uses", "").startswith("actions/download-artifact"))
    assert download["with"]["merge-multiple"] is True
    # each shard uploads out/, which holds its part-K-of-N: the merge finds every part in out/
    assert part_folder(f"1/{len(shards)}") == "part-1-of-4"

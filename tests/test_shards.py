"""Which shard a class run grades when --shard is not given: the variables
of the scheduler that started it (a Slurm job array, a Kubernetes Indexed
Job, a GitHub Actions matrix through GRADE_SHARD); what does not fit is
told with what to set."""

from __future__ import annotations

import pytest

from pytest_autograd_grader.classroom.shards import ShardError, from_environment, part_folder


@pytest.mark.parametrize(
    ("env", "shard"),
    [
        ({}, None),
        ({"GRADE_SHARD": "2/4"}, ("2/4", "GRADE_SHARD")),
        # sbatch --array=0-3 and --array=1-4: the same four shards
        (
            {
                "SLURM_ARRAY_TASK_ID": "0",
                "SLURM_ARRAY_TASK_MIN": "0",
                "SLURM_ARRAY_TASK_MAX": "3",
                "SLURM_ARRAY_TASK_COUNT": "4",
            },
            ("1/4", "SLURM_ARRAY_TASK_ID"),
        ),
        (
            {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4"},
            ("4/4", "SLURM_ARRAY_TASK_ID"),
        ),
        ({"JOB_COMPLETION_INDEX": "0", "GRADE_SHARDS": "3"}, ("1/3", "JOB_COMPLETION_INDEX")),
        ({"JOB_COMPLETION_INDEX": "2", "GRADE_SHARDS": "3"}, ("3/3", "JOB_COMPLETION_INDEX")),
        # --shard's own variable first
        (
            {
                "GRADE_SHARD": "1/2",
                "SLURM_ARRAY_TASK_ID": "3",
                "SLURM_ARRAY_TASK_MIN": "0",
                "SLURM_ARRAY_TASK_MAX": "3",
            },
            ("1/2", "GRADE_SHARD"),
        ),
    ],
)
def test_the_shard_comes_from_the_schedulers_variables(env, shard):
    assert from_environment(env) == shard


@pytest.mark.parametrize(
    ("env", "told"),
    [
        ({"GRADE_SHARD": "3/2"}, "GRADE_SHARD=3/2: write K/N"),
        (
            {
                "SLURM_ARRAY_TASK_ID": "2",
                "SLURM_ARRAY_TASK_MIN": "0",
                "SLURM_ARRAY_TASK_MAX": "6",
                "SLURM_ARRAY_TASK_COUNT": "4",
            },
            "give sbatch a contiguous --array",
        ),  # --array=0-6:2
        (
            {"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "1"},
            "SLURM_ARRAY_TASK_ID=x: not a whole number",
        ),
        ({"JOB_COMPLETION_INDEX": "1"}, "set the env GRADE_SHARDS to the Job's completions"),
        ({"JOB_COMPLETION_INDEX": "3", "GRADE_SHARDS": "3"}, "JOB_COMPLETION_INDEX=3"),
    ],
)
def test_what_does_not_fit_says_what_to_set(env, told):
    with pytest.raises(ShardError, match=None) as raised:
        from_environment(env)
    assert told in str(raised.value)


def test_a_shard_writes_its_own_part_of_a_shared_out():
    assert part_folder("2/4") == "part-2-of-4"

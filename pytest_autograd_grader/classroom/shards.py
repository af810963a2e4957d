"""Which part of a class a run grades: ``--shard K/N``, else the variables
of the scheduler that started it, so that one job file grades a class
across a cluster without a wrapper script:

- ``GRADE_SHARD=K/N``, the same as ``--shard`` (a GitHub Actions matrix
  sets it: ``${{ matrix.shard }}/${{ strategy.job-total }}``);
- a Slurm job array: ``SLURM_ARRAY_TASK_ID`` among ``SLURM_ARRAY_TASK_MIN``
  to ``SLURM_ARRAY_TASK_MAX`` (``SLURM_ARRAY_TASK_COUNT`` tasks, contiguous);
- a Kubernetes Indexed Job: ``JOB_COMPLETION_INDEX`` (0-based), with the
  Job's ``completions`` handed in as ``GRADE_SHARDS`` (a pod sees no count).

A shard found this way writes into ``OUT/part-K-of-N``, so every task can
be given one shared OUT, and ``autograd-grader merge OUT`` joins them."""

from __future__ import annotations

from collections.abc import Mapping

from ..i18n import msg


class ShardError(Exception):
    """The shard asked for cannot be graded; the message says what to fix."""


def parse(spec: str) -> tuple[int, int]:
    """``K/N`` as (K, N), 1 <= K <= N; ValueError otherwise."""
    k, n = (int(x) for x in spec.split("/"))
    if not 1 <= k <= n:
        raise ValueError(spec)
    return k, n


def part_folder(spec: str) -> str:
    k, n = parse(spec)
    return f"part-{k}-of-{n}"


def _int(env: Mapping[str, str], name: str) -> int:
    try:
        return int(env[name])
    except (KeyError, ValueError):
        raise ShardError(msg("class.shard_env_bad", name=name, value=env.get(name, ""))) from None


def from_environment(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(``K/N``, the variables it came from), or None where no scheduler
    named a shard."""
    if env.get("GRADE_SHARD"):
        spec = env["GRADE_SHARD"].strip()
        try:
            parse(spec)
        except ValueError:
            raise ShardError(msg("class.bad_shard", shard=f"GRADE_SHARD={spec}")) from None
        return spec, "GRADE_SHARD"
    if env.get("SLURM_ARRAY_TASK_ID"):
        task, low, high = (_int(env, f"SLURM_ARRAY_TASK_{x}") for x in ("ID", "MIN", "MAX"))
        count = _int(env, "SLURM_ARRAY_TASK_COUNT") if "SLURM_ARRAY_TASK_COUNT" in env else high - low + 1
        if count != high - low + 1 or not low <= task <= high:
            raise ShardError(msg("class.shard_slurm_gaps", low=low, high=high, count=count))
        return f"{task - low + 1}/{count}", "SLURM_ARRAY_TASK_ID"
    if env.get("JOB_COMPLETION_INDEX"):
        index = _int(env, "JOB_COMPLETION_INDEX")
        if not env.get("GRADE_SHARDS"):
            raise ShardError(msg("class.shard_k8s_count"))
        count = _int(env, "GRADE_SHARDS")
        if not 0 <= index < count:
            raise ShardError(msg("class.shard_env_bad", name="JOB_COMPLETION_INDEX", value=str(index)))
        return f"{index + 1}/{count}", "JOB_COMPLETION_INDEX"
    return None

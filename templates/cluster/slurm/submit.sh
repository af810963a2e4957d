#!/bin/bash
# Submit the grading array and its merge: ./submit.sh SHARDS [SBATCH OPTIONS...]
# with CHECKS, SUBMISSIONS and OUT set (see grade-class.sbatch). Options
# after SHARDS go to the grading array's sbatch (they override its #SBATCH
# lines), e.g. --cpus-per-task=8 --partition=teaching.
set -euo pipefail
shards="${1:?usage: submit.sh SHARDS [SBATCH OPTIONS...] (SHARDS: the number of array tasks)}"
shift
here="$(cd "$(dirname "$0")" && pwd)"
export SALT="${SALT:-$(python3 -c 'import secrets; print(secrets.token_hex(8))')}"
array=$(sbatch --parsable --array="0-$((shards - 1))" --export=ALL "$@" "$here/grade-class.sbatch")
merge=$(sbatch --parsable --dependency="afterok:${array%%;*}" --export=ALL "$here/merge-class.sbatch")
echo "grading array $array ($shards shards, salt $SALT); merge $merge into $OUT/merged"

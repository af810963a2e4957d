#!/bin/bash
# Submit the grading array and its merge: ./submit.sh SHARDS
# with CHECKS, SUBMISSIONS and OUT set (see grade-class.sbatch).
set -euo pipefail
shards="${1:?usage: submit.sh SHARDS (the number of array tasks)}"
here="$(cd "$(dirname "$0")" && pwd)"
export SALT="${SALT:-$(python3 -c 'import secrets; print(secrets.token_hex(8))')}"
array=$(sbatch --parsable --array="0-$((shards - 1))" --export=ALL "$here/grade-class.sbatch")
merge=$(sbatch --parsable --dependency="afterok:${array%%;*}" --export=ALL "$here/merge-class.sbatch")
echo "grading array $array ($shards shards, salt $SALT); merge $merge into $OUT/merged"

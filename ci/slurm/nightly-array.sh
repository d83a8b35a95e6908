#!/usr/bin/env bash
#SBATCH --job-name=pairbench-nightly
# One task of the nightly job array (ci/slurm/submit.sh submits it): the node kind in row
# SLURM_ARRAY_TASK_ID of the kinds table runs ci/nightly.sh, which builds for this node, runs the
# benchmarks, gates them against this machine's baseline and stores the run in $PAIRBENCH_DB.
# Arguments go to `pairbench run` (e.g. --experiments dispatch).
# Runs without the scheduler too: SLURM_ARRAY_TASK_ID=0 ci/slurm/nightly-array.sh
# Environment: PAIRBENCH_DB (required: the database every node uploads to), PAIRBENCH_KINDS (the
# kinds table, default ci/slurm/kinds.tsv), PAIRBENCH_BATCH (names this night's artifact folder,
# results/slurm/<batch>/<kind>/), and what ci/nightly.sh reads (PROFILE, UNDECIDED, FUZZ_SECONDS,
# BUILD_DIR, SKIP_BUILD).
set -uo pipefail
# sbatch runs a copy of this script from its spool directory: the checkout is the directory the
# job was submitted from (submit.sh passes --chdir), not this file's.
repo=${PAIRBENCH_REPO:-${SLURM_SUBMIT_DIR:-$PWD}}
cd "$repo" || { echo "ci/slurm/nightly-array.sh: cannot enter the checkout $repo" >&2; exit 2; }
. ci/slurm/kinds.sh
kinds_load "${PAIRBENCH_KINDS:-ci/slurm/kinds.tsv}" || exit 2
task=${SLURM_ARRAY_TASK_ID:-}
if ! [[ $task =~ ^[0-9]+$ ]] || [ "$task" -ge ${#KIND[@]} ]; then
  echo "ci/slurm/nightly-array.sh: SLURM_ARRAY_TASK_ID: expected a row of the kinds table (0 to $((${#KIND[@]} - 1))), is \"$task\"" >&2
  exit 2
fi
if [ -z "${PAIRBENCH_DB:-}" ]; then
  echo "ci/slurm/nightly-array.sh: PAIRBENCH_DB: expected the shared database (a postgresql:// URL; a SQLite path only where every job runs on this host), is unset" >&2
  exit 2
fi
kind=${KIND[$task]}
export ARTIFACTS_DIR="${ARTIFACTS_DIR:-results/slurm/${PAIRBENCH_BATCH:-${SLURM_ARRAY_JOB_ID:-local}}/$kind}"
export BUILD_DIR="${BUILD_DIR:-build-$kind}"   # node kinds may share the checkout: one build each
export RUN_TAG="$kind"
echo "ci/slurm/nightly-array.sh: kind $kind (task $task) on $(hostname), artifacts in $ARTIFACTS_DIR"
exec ./ci/nightly.sh "$@"

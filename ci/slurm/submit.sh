#!/usr/bin/env bash
# Submits a night of pairbench to Slurm: the job array ci/slurm/nightly-array.sh, one array task
# per node kind of the kinds table (each builds, runs ci/nightly.sh and stores its run in
# $PAIRBENCH_DB), and one job that waits for all of them (afterany: a node that failed does not
# hold back the others' verdicts) and runs ci/fleet-report.sh: the gate across machines and the
# report with its cross-machine page.
#   PAIRBENCH_DB=postgresql://host/pairbench ci/slurm/submit.sh [--dry-run] [--kinds FILE] [-- ARGS]
# ARGS go to `pairbench run` on every node (e.g. -- --experiments dispatch).
# --dry-run prints the sbatch lines (job ids as <job:KIND>) and submits nothing.
# Slurm gives all tasks of one array the same resource request, so each kind's task is submitted
# as its own row of the array (--array=ROW) with its partition, --constraint and --gres; the task
# reads its kind from the table by SLURM_ARRAY_TASK_ID. Artifacts and logs go to
# results/slurm/<batch>/ in this checkout (shared storage on a cluster). Other sbatch options
# (account, QOS) come from sbatch's own environment variables (SBATCH_ACCOUNT, SBATCH_QOS).
# Environment: PAIRBENCH_DB (required), PROFILE, UNDECIDED, FUZZ_SECONDS, BUILD_DIR, SKIP_BUILD
# (passed to every job), REPORT_PARTITION (default: the first kind's partition).
# Exit: 0 submitted (or printed), 2 bad input or sbatch refused a job (the jobs already
# submitted are named).
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
dry_run=0
kinds_file=ci/slurm/kinds.tsv
while (($#)); do
  case $1 in
    --dry-run) dry_run=1; shift ;;
    --kinds) [ $# -ge 2 ] || { echo "ci/slurm/submit.sh: --kinds: expected a file" >&2; exit 2; }; kinds_file=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "ci/slurm/submit.sh: $1: expected --dry-run, --kinds FILE or -- followed by pairbench run arguments" >&2; exit 2 ;;
  esac
done
. ci/slurm/kinds.sh
kinds_load "$kinds_file" || exit 2
kinds_file=$(realpath "$kinds_file")
if [ -z "${PAIRBENCH_DB:-}" ]; then
  echo "ci/slurm/submit.sh: PAIRBENCH_DB: expected the database every node uploads to (a postgresql:// URL; a SQLite path only where every job runs on this host), is unset" >&2
  exit 2
fi
batch=$(date -u +%Y%m%dT%H%M%SZ)
logs="results/slurm/$batch"
commit=$(git rev-parse HEAD 2>/dev/null || echo "")
# PAIRBENCH_DB reaches the jobs through the environment (--export=ALL), never on a command line
# (squeue and ps would show a URL's password).
export_list="ALL,PAIRBENCH_BATCH=$batch,PAIRBENCH_KINDS=$kinds_file,PAIRBENCH_COMMIT=$commit"
[ "$dry_run" = 1 ] || mkdir -p "$logs"

shell_word() {  # as a shell would read it back: plain when safe, else in single quotes
  if [[ $1 =~ ^[A-Za-z0-9_./:=,%@+-]+$ ]]; then printf '%s' "$1"; else printf "'%s'" "${1//\'/\'\\\'\'}"; fi
}

submit() {  # prints the command; submits it unless --dry-run; the job id goes to $job
  local word line=sbatch
  for word in "$@"; do line+=" $(shell_word "$word")"; done
  echo "$line"
  if [ "$dry_run" = 1 ]; then return 0; fi
  local reply
  if ! reply=$(sbatch --parsable "$@"); then
    echo "ci/slurm/submit.sh: sbatch refused the job above${submitted:+; already submitted: $submitted}" >&2
    exit 2
  fi
  job=${reply%%;*}
}

job="" submitted="" dependency=""
for i in "${!KIND[@]}"; do
  kind=${KIND[$i]}
  opts=(--array="$i" --job-name="pairbench-nightly-$kind" --chdir="$repo" --output="$logs/%x-%A_%a.out"
        --time="${TIME_LIMIT[$i]}" --export="$export_list")
  [ -n "${PARTITION[$i]}" ] && opts+=(--partition="${PARTITION[$i]}")
  [ -n "${CONSTRAINT[$i]}" ] && opts+=(--constraint="${CONSTRAINT[$i]}")
  [ -n "${GRES[$i]}" ] && opts+=(--gres="${GRES[$i]}")
  submit "${opts[@]}" ci/slurm/nightly-array.sh "$@"
  [ "$dry_run" = 1 ] && job="<job:$kind>"
  submitted+="${submitted:+ }$job ($kind)"
  dependency+=":$job"
done
report_partition=${REPORT_PARTITION:-${PARTITION[0]}}
opts=(--dependency="afterany$dependency" --job-name=pairbench-fleet-report --chdir="$repo"
      --output="$logs/%x-%j.out" --time=01:00:00 --export="$export_list,ARTIFACTS_DIR=$logs/fleet")
[ -n "$report_partition" ] && opts+=(--partition="$report_partition")
submit "${opts[@]}" --wrap="./ci/fleet-report.sh $logs"
if [ "$dry_run" = 1 ]; then
  echo "ci/slurm/submit.sh: dry run: nothing submitted (${#KIND[@]} kind(s) from $kinds_file)"
else
  echo "ci/slurm/submit.sh: submitted ${#KIND[@]} array task(s): $submitted; report job $job (after all of them)"
  echo "ci/slurm/submit.sh: logs and artifacts in $repo/$logs/"
fi

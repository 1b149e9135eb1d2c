#!/usr/bin/env bash
# Submits a launch script with up to RETRIES queued retries. Retry k starts only if the job and every retry before it
# ended in failure (a crash, a stall the progress watchdog stopped, a node failure, the time limit: Slurm's
# `afternotok` on all of them) and resumes the run where it stopped (launch/README.md, "How to resume"); once one
# of them succeeds, Slurm cancels the retries left (`--kill-on-invalid-dep=yes`, their dependency can no longer be
# met). A failure that repeats (a wrong path, a config error) fails each retry at its preflight, within minutes.
#
# Usage: bash launch/submit_with_retries.sh RETRIES [sbatch options...] launch/run_<recipe>.sh [hydra overrides...]
#   bash launch/submit_with_retries.sh 3 launch/run_dapo_32k_to_40k.sh
# Prints the job ids, the first job's first. Every submission gets the same options, script, overrides and the
# environment of this shell (sbatch copies it), so activate the environment first.
set -euo pipefail
retries=${1:-}
[[ "$retries" =~ ^[0-9]+$ ]] || {
  echo "usage: bash launch/submit_with_retries.sh RETRIES [sbatch options...] launch/run_<recipe>.sh [overrides...]" >&2
  exit 2
}
shift
[[ $# -gt 0 ]] || { echo "submit_with_retries: no launch script given" >&2; exit 2; }
ids=$(sbatch --parsable "$@")
ids=${ids%%;*}
echo "$ids"
for ((k = 1; k <= retries; k++)); do
  job=$(sbatch --parsable "--dependency=afternotok:$ids" --kill-on-invalid-dep=yes "$@")
  job=${job%%;*}
  echo "$job"
  ids+=":$job"
done

#!/usr/bin/env bash
# The CPU mode's chain on one node without GPUs (recipe/nouscoder/cpu/README.md): debug_cpu, its best checkpoint
# by validation score on the bundled sample, debug_cpu_extended from that model. The same stage chain as the GPU
# recipes (resume, selection, retention, Ray over the job's node), with logical device slots instead of GPUs.
#SBATCH --job-name=nouscoder-debug-cpu
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=2
#SBATCH --time=1:00:00
#SBATCH --output=%x-%j.out
# A job that reaches its time limit saves, requeues itself and resumes (launch/README.md "A chain longer than the time
# limit"): requeueable, and each run of it appends to the same output file.
#SBATCH --requeue
#SBATCH --open-mode=append
# Every #SBATCH line is a default: sbatch options on the command line win. Knobs: launch/stage_chain.sh and
# launch/lib/ray_slurm.sh. Usage: [sbatch] launch/run_debug_cpu_chain.sh [hydra overrides...]
set -euo pipefail
: "${STAGES:=debug_cpu debug_cpu_extended}"
: "${RUN_NAME:=debug_cpu_chain}"
: "${RESCORE=}"
# RUN_EVAL=1 EVAL_CONFIG=eval_debug_cpu EVAL_DATA=<the sample's test.parquet> adds the final evaluation and its
# pass@k report (final_eval/report/), as on the cluster.
: "${RUN_EVAL:=0}"
: "${EVAL_CONFIG:=eval_debug_cpu}"
: "${SCORE_METRIC:=val-core/nous_sample/acc/mean@[0-9]+$}"  # the bundled sample's data source, any n
# Ray's device slots (2 FSDP ranks of the sync layout) and the logical CPUs verl's placement groups reserve.
: "${GPUS_PER_NODE:=2}"
: "${RAY_NUM_CPUS:=16}"
# The bundled sample's 28 training problems are too few to filter (stage 0 needs a GPU config's vLLM as well).
: "${OFFLINE_FILTER:=none}"
export STAGES RUN_NAME RESCORE RUN_EVAL EVAL_CONFIG SCORE_METRIC GPUS_PER_NODE RAY_NUM_CPUS OFFLINE_FILTER
# sbatch runs a copy of this file from Slurm's spool directory: find launch/ through the job record then.
if [[ -z "${LAUNCH_DIR:-}" ]]; then
  LAUNCH_DIR=$(dirname "${BASH_SOURCE[0]}")
  if [[ ! -f "$LAUNCH_DIR/stage_chain.sh" && -n "${SLURM_JOB_ID:-}" ]]; then
    LAUNCH_DIR=$(dirname "$(scontrol show job "$SLURM_JOB_ID" | sed -n 's/^ *Command=\([^ ]*\).*/\1/p')")
  fi
fi
export LAUNCH_DIR
exec bash "$LAUNCH_DIR/stage_chain.sh" "$@"

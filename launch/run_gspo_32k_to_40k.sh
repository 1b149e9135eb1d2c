#!/usr/bin/env bash
# NousCoder-14B with the sequence-level GSPO objective on 6 nodes x 8 GPUs: 32k stage, best checkpoint by
# LiveCodeBench score, 40k stage from it, then LiveCodeBench at 81,920 tokens with YaRN.
#SBATCH --job-name=nouscoder-gspo
#SBATCH --nodes=6
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
#SBATCH --mem=0
#SBATCH --time=48:00:00
#SBATCH --output=%x-%j.out
# A job that reaches its time limit saves, requeues itself and resumes (launch/README.md "A chain longer than the time
# limit"): requeueable, and each run of it appends to the same output file.
#SBATCH --requeue
#SBATCH --open-mode=append
# Every #SBATCH line is a default: sbatch options on the command line win (sbatch --nodes=2 --time=4:00:00 ...).
# Knobs: launch/stage_chain.sh and launch/lib/ray_slurm.sh. Usage: [sbatch] launch/run_gspo_32k_to_40k.sh [hydra overrides...]
set -euo pipefail
: "${STAGES:=gspo_32k gspo_40k}"
: "${RUN_NAME:=gspo_32k_to_40k}"
# The 32k stage's defaults, when it is one of STAGES (not, e.g., for STAGES=debug_64): the 32k model that starts the
# 40k stage is the best at 40k context (NousCoder "Iterative Context Extension"), and training skips the problems the
# base model always solves, a filter stage 0 builds (NousCoder "Additional Training Tricks"; OFFLINE_FILTER=none: all).
if [[ " $STAGES " == *" gspo_32k "* ]]; then
  : "${RESCORE=gspo_32k=eval_lcb_40k}"
  : "${OFFLINE_FILTER:=build}"
fi
: "${RESCORE=}"
: "${OFFLINE_FILTER:=none}"
: "${EVAL_CONFIG:=eval_lcb_80k}"
export STAGES RUN_NAME RESCORE OFFLINE_FILTER EVAL_CONFIG
# sbatch runs a copy of this file from Slurm's spool directory: find launch/ through the job record then.
if [[ -z "${LAUNCH_DIR:-}" ]]; then
  LAUNCH_DIR=$(dirname "${BASH_SOURCE[0]}")
  if [[ ! -f "$LAUNCH_DIR/stage_chain.sh" && -n "${SLURM_JOB_ID:-}" ]]; then
    LAUNCH_DIR=$(dirname "$(scontrol show job "$SLURM_JOB_ID" | sed -n 's/^ *Command=\([^ ]*\).*/\1/p')")
  fi
fi
export LAUNCH_DIR
exec bash "$LAUNCH_DIR/stage_chain.sh" "$@"

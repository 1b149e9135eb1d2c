#!/usr/bin/env bash
# MicroCoder-GRPO on Qwen3-4B-Instruct-2507, 4K responses, 300 steps on one node of 8 GPUs (configs/microcoder_4k.yaml),
# best checkpoint by LiveCodeBench score, then LiveCodeBench at 8K tokens, 4 samples (configs/eval_microcoder_8k.yaml;
# MicroCoder: train on 4K, test on 4K and 8K, average accuracy over four attempts). The training data is required:
#   sbatch launch/run_microcoder_4k.sh data.train_files=/path/microcoder_dataset/train.parquet
# (or the DeepCoder mix: data.train_files=data/deepcoder_mix/train.parquet).
#SBATCH --job-name=microcoder-4k
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
#SBATCH --mem=0
#SBATCH --time=12:00:00
#SBATCH --output=%x-%j.out
# A job that reaches its time limit saves, requeues itself and resumes (launch/README.md "A chain longer than the time
# limit"): requeueable, and each run of it appends to the same output file.
#SBATCH --requeue
#SBATCH --open-mode=append
# Every #SBATCH line is a default: sbatch options on the command line win (sbatch --nodes=2 --time=4:00:00 ...).
# Knobs: launch/stage_chain.sh and launch/lib/ray_slurm.sh. Usage: [sbatch] launch/run_microcoder_4k.sh [hydra overrides...]
set -euo pipefail
: "${STAGES:=microcoder_4k}"
: "${RUN_NAME:=microcoder_4k}"
# Test on 8K with four attempts per problem (MicroCoder sections 5 and 6), on every GPU of the job.
: "${EVAL_CONFIG:=eval_microcoder_8k}"
# MicroCoder trains on its dataset as given (no offline filter in the paper); OFFLINE_FILTER=build or a file to filter.
: "${OFFLINE_FILTER:=none}"
export STAGES RUN_NAME EVAL_CONFIG OFFLINE_FILTER
# sbatch runs a copy of this file from Slurm's spool directory: find launch/ through the job record then.
if [[ -z "${LAUNCH_DIR:-}" ]]; then
  LAUNCH_DIR=$(dirname "${BASH_SOURCE[0]}")
  if [[ ! -f "$LAUNCH_DIR/stage_chain.sh" && -n "${SLURM_JOB_ID:-}" ]]; then
    LAUNCH_DIR=$(dirname "$(scontrol show job "$SLURM_JOB_ID" | sed -n 's/^ *Command=\([^ ]*\).*/\1/p')")
  fi
fi
export LAUNCH_DIR
exec bash "$LAUNCH_DIR/stage_chain.sh" "$@"

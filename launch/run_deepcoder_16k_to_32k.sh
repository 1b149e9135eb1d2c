#!/usr/bin/env bash
# DeepCoder-14B-Preview GRPO+ (DeepCoder model card "Training Recipe") on 4 nodes x 8 GPUs, colocated: the 16K stage,
# its best checkpoint by in-run LiveCodeBench v5 score, the 32K stage from it ("Iterative Context Lengthening":
# 16K -> 32K), its best checkpoint, then DeepCoder's own evaluation, LiveCodeBench v5 at 64K (eval_lcb_v5_64k; its
# data: python -m data_prep.build_benchmarks --benchmarks lcb_v5). 4 nodes: configs/_deepcoder.yaml says why.
#SBATCH --job-name=deepcoder-16k-32k
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
#SBATCH --mem=0
#SBATCH --time=48:00:00
#SBATCH --output=%x-%j.out
# Every #SBATCH line is a default: sbatch options on the command line win (sbatch --nodes=8 --time=4:00:00 ...).
# Knobs: launch/stage_chain.sh and launch/lib/ray_slurm.sh. Usage: [sbatch] launch/run_deepcoder_16k_to_32k.sh [hydra overrides...]
set -euo pipefail
: "${STAGES:=deepcoder_16k deepcoder_32k}"
: "${RUN_NAME:=deepcoder_16k_to_32k}"
# Selection by each stage's own in-run score (the card re-scores nothing); DeepCoder filtered its data offline by
# difficulty before training (the card's "Offline Difficulty Filtering"): no stage 0 here (OFFLINE_FILTER=build to run one).
: "${RESCORE=}"
: "${OFFLINE_FILTER:=none}"
: "${EVAL_CONFIG:=eval_lcb_v5_64k}"
: "${EVAL_DATA:=${SLURM_SUBMIT_DIR:-$PWD}/data/benchmarks/lcb_v5.parquet}"
export STAGES RUN_NAME RESCORE OFFLINE_FILTER EVAL_CONFIG EVAL_DATA
# sbatch runs a copy of this file from Slurm's spool directory: find launch/ through the job record then.
if [[ -z "${LAUNCH_DIR:-}" ]]; then
  LAUNCH_DIR=$(dirname "${BASH_SOURCE[0]}")
  if [[ ! -f "$LAUNCH_DIR/stage_chain.sh" && -n "${SLURM_JOB_ID:-}" ]]; then
    LAUNCH_DIR=$(dirname "$(scontrol show job "$SLURM_JOB_ID" | sed -n 's/^ *Command=\([^ ]*\).*/\1/p')")
  fi
fi
export LAUNCH_DIR
exec bash "$LAUNCH_DIR/stage_chain.sh" "$@"

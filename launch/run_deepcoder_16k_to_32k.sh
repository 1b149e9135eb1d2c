#!/usr/bin/env bash
# DeepCoder-14B-Preview GRPO+ (DeepCoder model card "Training Recipe") on 4 nodes x 8 GPUs, colocated: the 16K stage,
# its best checkpoint by in-run LiveCodeBench v5 score, the 32K stage from it ("Iterative Context Lengthening":
# 16K -> 32K), its best checkpoint, then LiveCodeBench v5 at 81,920 tokens (eval_lcb_80k: within the model's 131,072
# positions, so the launcher's preflight drops its YaRN settings). 4 nodes: configs/_deepcoder.yaml says why.
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
: "${EVAL_CONFIG:=eval_lcb_80k}"
: "${EVAL_DATA:=${SLURM_SUBMIT_DIR:-$PWD}/data/deepcoder_mix_lcb_v5/test.parquet}"
# (choice) 2 x ~300k KV tokens per replica / 40,636 mean tokens ~ 25 sequences of DeepSeek-R1-Distill-Qwen-14B at
# 81,920 tokens (192 KiB of KV per token; launch/run_plan.py's max_num_seqs warning).
if [[ "${RUN_EVAL:-1}" == 1 && "$EVAL_CONFIG" == eval_lcb_80k ]]; then
  : "${STAGE_OVERRIDES_eval_lcb_80k=actor_rollout_ref.rollout.max_num_seqs=24}"
  export STAGE_OVERRIDES_eval_lcb_80k
fi
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

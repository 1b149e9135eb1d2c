#!/usr/bin/env bash
# A rehearsal of the NousCoder run on 2 nodes of your cluster, before booking 48 GPUs for four days (launch/README.md
# "The rehearsal"): the job's own path end to end in ~20-30 minutes, on a small model of the same family, the real data
# (fewer problems) and short responses. The 32k stage's kinds: the separate-async trainer on one node and its standalone
# vLLM pool on the other, the weight sync through cupy's NCCL between them, Ulysses, an FSDP mesh of 2 replicas
# (HYBRID_SHARD, as 2 x 8 on 48 GPUs), the Ray grading pool. What it does, through the same stage chain as the real run
# (launch/stage_chain.sh: preflight, site check on both nodes, Ray):
#   a few steps with a checkpoint each; the trainer killed in the middle of a step; the chain started again in the same
#   job, resuming from that checkpoint; validation; the best checkpoint merged to a Hugging Face model; a short
#   LiveCodeBench evaluation of it with the evaluation config's YaRN settings (eval_lcb_80k);
# then the report (launch/rehearsal.py report: RUN_DIR/rehearsal_report.json and a table): the time split of each step,
# tokens/s per rollout GPU, peak memory per role, the weight sync's time and bytes, and one verdict line.
#SBATCH --job-name=nouscoder-rehearsal
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
#SBATCH --mem=0
#SBATCH --time=1:30:00
#SBATCH --output=%x-%j.out
#SBATCH --open-mode=append
# Every #SBATCH line is a default (sbatch --gres=gpu:4 --partition=... launch/rehearse.sh). Usage:
#   sbatch launch/rehearse.sh [hydra overrides for every run...]
# Knobs (environment variables; defaults in brackets), besides the chain's (launch/stage_chain.sh, launch/lib/ray_slurm.sh):
#   REHEARSAL_LAYOUT           gpu: the 32k stage (dapo_32k) split over the 2 nodes, then eval_lcb_80k; cpu: the CPU
#                              mode's (rehearsal_cpu, then the CPU chain's evaluation eval_debug_cpu, without YaRN; one
#                              logical device slot per node), as CI runs it [gpu]
#   REHEARSAL_MODEL            the model to start from, a small one of the real model's family; gpu only [Qwen/Qwen3-0.6B]
#   REHEARSAL_DATA             a directory with train.parquet and test.parquet (data_prep) [SUBMIT_DIR/data/deepcoder_mix]
#   REHEARSAL_TRAIN_PROBLEMS   training problems used (the first ones) [512]
#   REHEARSAL_TEST_PROBLEMS    LiveCodeBench problems of the validations and the evaluation [64]
#   REHEARSAL_STEPS            training steps; a checkpoint after each, validation at the middle one and the last [6]
#   REHEARSAL_KILL_AFTER       the trainer is killed REHEARSAL_KILL_DELAY_S after this step is saved and logged [steps / 2]
#   REHEARSAL_KILL_DELAY_S     [30]
#   REHEARSAL_RESPONSE_TOKENS  data.max_response_length of every run [2048]
set -euo pipefail
# sbatch runs a copy of this file from Slurm's spool directory: find launch/ through the job record then.
if [[ -z "${LAUNCH_DIR:-}" ]]; then
  LAUNCH_DIR=$(dirname "${BASH_SOURCE[0]}")
  if [[ ! -f "$LAUNCH_DIR/stage_chain.sh" && -n "${SLURM_JOB_ID:-}" ]]; then
    LAUNCH_DIR=$(dirname "$(scontrol show job "$SLURM_JOB_ID" | sed -n 's/^ *Command=\([^ ]*\).*/\1/p')")
  fi
fi
export LAUNCH_DIR
# shellcheck source=launch/lib/ray_slurm.sh
source "$LAUNCH_DIR/lib/ray_slurm.sh"

SUBMIT_DIR=${SLURM_SUBMIT_DIR:-$PWD}
LAYOUT=${REHEARSAL_LAYOUT:-gpu}
STEPS=${REHEARSAL_STEPS:-6}
KILL_AFTER=${REHEARSAL_KILL_AFTER:-$((STEPS / 2))}
DATA=${REHEARSAL_DATA:-$SUBMIT_DIR/data/deepcoder_mix}
export RUN_NAME=${RUN_NAME:-rehearsal_${SLURM_JOB_ID:-$(date +%Y%m%d-%H%M%S)}}
export OUTPUT_ROOT=${OUTPUT_ROOT:-$SUBMIT_DIR/outputs}
RUN_DIR=$OUTPUT_ROOT/$RUN_NAME
((KILL_AFTER >= 1 && KILL_AFTER < STEPS)) || die "REHEARSAL_KILL_AFTER=$KILL_AFTER: the kill must come after a step and before the last of REHEARSAL_STEPS=$STEPS."
resolve_nodes
[[ ${#NODES[@]} -eq 2 ]] || die "the rehearsal runs on 2 nodes (trainer on one, rollout on the other); this job has ${#NODES[@]}: sbatch --nodes=2."

"${HOST_PYTHON[@]}" "$LAUNCH_DIR/rehearsal.py" data --train "$DATA/train.parquet" --test "$DATA/test.parquet" \
  --train-problems "${REHEARSAL_TRAIN_PROBLEMS:-512}" --test-problems "${REHEARSAL_TEST_PROBLEMS:-64}" --out "$RUN_DIR/rehearsal_data"
overrides=("data.train_files=$RUN_DIR/rehearsal_data/train.parquet" "data.val_files=$RUN_DIR/rehearsal_data/test.parquet"
  "trainer.total_training_steps=$STEPS" "trainer.save_freq=1" "trainer.test_freq=$(((STEPS + 1) / 2))")
if [[ "$LAYOUT" == gpu ]]; then
  resolve_gpus_per_node
  STAGE=dapo_32k EVAL=eval_lcb_80k
  export INIT_MODEL=${INIT_MODEL:-${REHEARSAL_MODEL:-Qwen/Qwen3-0.6B}}
  MODEL=$INIT_MODEL TRAINER_GPUS=$GPUS_PER_NODE ROLLOUT_GPUS=$GPUS_PER_NODE
  # One node for each pool; FSDP groups of half a node, so that the trainer's mesh has 2 replicas (HYBRID_SHARD), as
  # dapo_32k's fsdp_size 8 over 2 x 8 GPUs does.
  overrides+=("trainer.nnodes=1" "trainer.n_gpus_per_node=$GPUS_PER_NODE" "actor_rollout_ref.rollout.nnodes=1"
    "actor_rollout_ref.rollout.n_gpus_per_node=$GPUS_PER_NODE"
    "actor_rollout_ref.actor.fsdp_config.fsdp_size=$((GPUS_PER_NODE > 1 ? GPUS_PER_NODE / 2 : 1))"
    "data.max_response_length=${REHEARSAL_RESPONSE_TOKENS:-2048}")
elif [[ "$LAYOUT" == cpu ]]; then
  STAGE=rehearsal_cpu EVAL=eval_debug_cpu
  export GPUS_PER_NODE=${GPUS_PER_NODE:-1} RAY_NUM_CPUS=${RAY_NUM_CPUS:-16}
  export SCORE_METRIC=${SCORE_METRIC:-val-core/nous_sample/acc/mean@[0-9]+$} # the bundled sample's data source, any n
  MODEL="the CPU mode's tiny Qwen2" TRAINER_GPUS=1 ROLLOUT_GPUS=1
else
  die "REHEARSAL_LAYOUT=$LAYOUT: use gpu or cpu."
fi
export STAGES=$STAGE EVAL_CONFIG=$EVAL RESCORE='' OFFLINE_FILTER=none RUN_EVAL=1
export EVAL_DATA=$RUN_DIR/rehearsal_data/test.parquet
marker=$RUN_DIR/killed_once
export TRAINER_CMD="python $LAUNCH_DIR/kill_once.py --stage $STAGE --after-step $KILL_AFTER --delay-s ${REHEARSAL_KILL_DELAY_S:-30} --marker $marker -- ${TRAINER_CMD:-python -m recipe.nouscoder.main}"

log "rehearsal $RUN_NAME: $STAGE on ${NODES[*]} ($LAYOUT layout, $MODEL), $STEPS steps, the trainer killed inside step $((KILL_AFTER + 1)); then $EVAL"
status=0
bash "$LAUNCH_DIR/stage_chain.sh" "${overrides[@]}" "$@" || status=$?
if [[ "$status" != 0 ]]; then
  [[ -f "$marker" ]] || die "rehearsal: the stage chain failed (exit $status) before the planned kill; see above and $RUN_DIR/logs/."
  log "rehearsal: $(cat "$marker"); starting the chain again, as a resubmission would: it must resume from global_step_$KILL_AFTER"
  LOG_DIR_SUFFIX=.resumed bash "$LAUNCH_DIR/stage_chain.sh" "${overrides[@]}" "$@" ||
    die "rehearsal: the resumed chain failed; see above and $RUN_DIR/logs/."
fi
"${HOST_PYTHON[@]}" "$LAUNCH_DIR/rehearsal.py" report --run-dir "$RUN_DIR" --stage "$STAGE" --model "$MODEL" \
  --nodes 2 --gpus-per-node "${GPUS_PER_NODE:-$TRAINER_GPUS}" --trainer-gpus "$TRAINER_GPUS" --rollout-gpus "$ROLLOUT_GPUS" \
  --killed --out "$RUN_DIR/rehearsal_report.json" "${overrides[@]}" "$@"

#!/usr/bin/env bash
# Chained context stages on a Ray cluster over the Slurm job's nodes (NousCoder "Iterative Context
# Extension"): train stage 1 (e.g. 32k), pick its best checkpoint by LiveCodeBench score, train stage 2
# (e.g. 40k) from that model, pick again, then evaluate the final model at 81,920 tokens with YaRN.
# Called by the run_*.sh wrappers, which set STAGES and RUN_NAME and carry the #SBATCH defaults.
#
# Usage: [sbatch] launch/run_<recipe>.sh [hydra overrides for every stage...]
#
# Stages are idempotent, so resubmitting the same command after a crash continues where it stopped:
#   - a stage with RUN_DIR/<stage>/best_model is finished and skipped;
#   - an unfinished stage resumes from its latest checkpoint (trainer.resume_mode=auto) with the same
#     wandb run (WANDB_RUN_ID from RUN_DIR/<stage>/wandb_run_id, WANDB_RESUME=allow);
#   - a stage whose training finished (RUN_DIR/<stage>/TRAINED) only redoes the checkpoint selection.
#
# Knobs (environment variables; defaults in brackets). Ray, network and NCCL knobs: launch/lib/ray_slurm.sh.
#   STAGES                 stage config names in order, e.g. "dapo_32k dapo_40k" [set by the wrapper]
#   RUN_NAME               run directory name [set by the wrapper]
#   OUTPUT_ROOT            parent of the run directory [$SLURM_SUBMIT_DIR/outputs, else $PWD/outputs]
#   INIT_MODEL             model of the first stage [empty: the stage config's actor_rollout_ref.model.path]
#   TRAINER_CMD            trainer, called as TRAINER_CMD --config-name STAGE OVERRIDES... [python -m recipe.nouscoder.main]
#   SELECT_CMD             best-checkpoint selection, called as SELECT_CMD CHECKPOINT_DIR SELECT_ARGS; its last
#                          stdout line is the next stage's model [python -m recipe.nouscoder.select_checkpoint]
#   SELECT_ARGS            extra selection arguments, word-split (e.g. "--no-merge") []
#   SCORE_METRIC           regular expression of the validation score key, for selection and retention alike
#                          [select_checkpoint's default: val-core/<LiveCodeBench data source>/acc/mean@n]
#   KEEP_LAST_CHECKPOINTS  checkpoints kept besides the best-scoring one; older ones are deleted while training [2]
#   PRUNE_EVERY_S          seconds between retention passes during training [600]
#   PRUNE_CMD              retention pass [python LAUNCH_DIR/prune_checkpoints.py]
#   RUN_EVAL               1: evaluate the last stage's best model after training; 0: skip [1]
#   EVAL_DATA              LiveCodeBench test parquet, checked before training starts [$SLURM_SUBMIT_DIR/data/deepcoder_mix/test.parquet]
#   EVAL_CMD               evaluation command line, run by `bash -c` in RUN_DIR/final_eval on the head node with
#                          MODEL (the last stage's best model), EVAL_DATA, NNODES, GPUS_PER_NODE and RAY_ADDRESS
#                          exported [DEFAULT_EVAL_CMD below: LiveCodeBench at 81,920 tokens with YaRN factor 2].
#                          Multi-node alternative, verl validation on the whole cluster:
#                          EVAL_CMD='python -m recipe.nouscoder.main --config-name eval_lcb_80k actor_rollout_ref.model.path="$MODEL"'
#   WANDB_*                passed through (WANDB_API_KEY, WANDB_PROJECT, WANDB_ENTITY, WANDB_MODE, ...)
#
# Layout: RUN_DIR=OUTPUT_ROOT/RUN_NAME
#   RUN_DIR/<stage>/checkpoints/   trainer.default_local_dir: global_step_N/, metrics.jsonl, best_hf/ (merged model)
#   RUN_DIR/<stage>/best_model     path of the selected model (the stage is finished when this exists)
#   RUN_DIR/final_eval/            final evaluation output (DONE when finished)
#   RUN_DIR/logs/<job>/            ray_<node>.log per node, <stage>.log, eval.log
set -euo pipefail

LAUNCH_DIR=${LAUNCH_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
# shellcheck source=launch/lib/ray_slurm.sh
source "$LAUNCH_DIR/lib/ray_slurm.sh"

: "${STAGES:?set STAGES to the stage configs to chain, e.g. STAGES=\"dapo_32k dapo_40k\" (the run_*.sh wrappers do)}"
: "${RUN_NAME:?set RUN_NAME, the run directory name under OUTPUT_ROOT (the run_*.sh wrappers do)}"
SUBMIT_DIR=${SLURM_SUBMIT_DIR:-$PWD}
OUTPUT_ROOT=${OUTPUT_ROOT:-$SUBMIT_DIR/outputs}
RUN_DIR=$OUTPUT_ROOT/$RUN_NAME
LOG_DIR=$RUN_DIR/logs/${SLURM_JOB_ID:-local-$(date +%Y%m%d-%H%M%S)}
read -ra TRAINER <<<"${TRAINER_CMD:-python -m recipe.nouscoder.main}"
read -ra SELECT <<<"${SELECT_CMD:-python -m recipe.nouscoder.select_checkpoint} ${SELECT_ARGS:-}"
read -ra PRUNE <<<"${PRUNE_CMD:-python $LAUNCH_DIR/prune_checkpoints.py}"
if [[ -n "${SCORE_METRIC:-}" ]]; then
  SELECT+=(--metric "$SCORE_METRIC")
  PRUNE+=(--metric "$SCORE_METRIC")
fi
KEEP_LAST_CHECKPOINTS=${KEEP_LAST_CHECKPOINTS:-2}
PRUNE_EVERY_S=${PRUNE_EVERY_S:-600}
RUN_EVAL=${RUN_EVAL:-1}
export EVAL_DATA=${EVAL_DATA:-$SUBMIT_DIR/data/deepcoder_mix/test.parquet}
# NousCoder's final evaluation: 81,920-token context with YaRN (factor 2 over 40,960); 79,872 response tokens
# leave the 2,048-token prompt budget of configs/eval_lcb_80k.yaml; 16 samples at the eval temperature/top-p.
# shellcheck disable=SC2016  # expanded by `bash -c` when the evaluation runs
DEFAULT_EVAL_CMD='python -m recipe.nouscoder.eval_lcb --model "$MODEL" --data "$EVAL_DATA" --n 16 --temperature 0.6 --top-p 0.95 --max-tokens 79872 --yarn-factor 2.0 --out .'
EVAL_CMD=${EVAL_CMD:-$DEFAULT_EVAL_CMD}

# WANDB_RUN_ID of a stage, created once and reused by every later job of the same run.
stage_wandb_id() {
  local file=$1/wandb_run_id
  if [[ ! -s "$file" ]]; then
    printf '%s-%s\n' "${RUN_NAME//[^A-Za-z0-9_-]/_}-${2//[^A-Za-z0-9_-]/_}" "$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')" >"$file.tmp"
    mv "$file.tmp" "$file"
  fi
  cat "$file"
}

# Trains one stage from MODEL (empty: the config's), resuming from its latest checkpoint if any.
train_stage() {
  local stage=$1 stage_dir=$2 model=$3
  shift 3
  local ckpt_dir=$stage_dir/checkpoints
  mkdir -p "$ckpt_dir"
  export WANDB_RUN_ID WANDB_RESUME=allow
  WANDB_RUN_ID=$(stage_wandb_id "$stage_dir" "$stage")
  if [[ -s "$ckpt_dir/latest_checkpointed_iteration.txt" ]]; then
    log "stage $stage: resuming from global_step_$(cat "$ckpt_dir/latest_checkpointed_iteration.txt") (wandb run $WANDB_RUN_ID)"
  else
    log "stage $stage: starting (wandb run $WANDB_RUN_ID)"
  fi
  # Launcher defaults first, the user's overrides next (hydra: the last value wins), then what the
  # chain itself must fix: where checkpoints go and which model a later stage starts from. The GPU layout
  # (trainer.nnodes, actor_rollout_ref.rollout.nnodes, ...) stays the config's or the user's to set.
  local -a overrides=("trainer.experiment_name=${RUN_NAME}_$stage" trainer.resume_mode=auto
    trainer.max_actor_ckpt_to_keep=null)
  overrides+=("$@" "trainer.default_local_dir=$ckpt_dir")
  [[ -n "$model" ]] && overrides+=("actor_rollout_ref.model.path=$model")
  log "stage $stage: ${TRAINER[*]} --config-name $stage ${overrides[*]}"

  # Retention while training; the EXIT trap stops it if the job ends first.
  "${PRUNE[@]}" "$ckpt_dir" --keep-last "$KEEP_LAST_CHECKPOINTS" --every "$PRUNE_EVERY_S" >>"$LOG_DIR/prune_$stage.log" 2>&1 &
  local pruner=$! status=0
  HELPER_PIDS+=("$pruner")
  WATCH_LOG=$LOG_DIR/$stage.log run_watched "${TRAINER[@]}" --config-name "$stage" "${overrides[@]}" || status=$?
  kill -TERM "$pruner" 2>/dev/null || true
  wait "$pruner" 2>/dev/null || true
  [[ "$status" == 0 ]] || die "stage $stage: trainer failed (exit $status); resubmit the same command to resume from the latest checkpoint. Log: $LOG_DIR/$stage.log"
  touch "$stage_dir/TRAINED"
  log "stage $stage: training finished"
}

# Picks the stage's best checkpoint (merged to a Hugging Face model) and records it in best_model.
select_stage_model() {
  local stage=$1 stage_dir=$2 output selected
  "${PRUNE[@]}" "$stage_dir/checkpoints" --keep-last "$KEEP_LAST_CHECKPOINTS" >>"$LOG_DIR/prune_$stage.log" 2>&1 ||
    log "WARNING: stage $stage: final retention pass failed, see $LOG_DIR/prune_$stage.log"
  log "stage $stage: selecting the best checkpoint: ${SELECT[*]} $stage_dir/checkpoints"
  output=$("${SELECT[@]}" "$stage_dir/checkpoints" 2> >(tee -a "$LOG_DIR/select_$stage.log" >&2)) || die "stage $stage: checkpoint selection failed; fix it and resubmit (training is kept)."
  selected=${output##*$'\n'}
  [[ -e "$selected" ]] || die "stage $stage: the selection printed '$selected', which does not exist."
  printf '%s\n' "$selected" >"$stage_dir/best_model.tmp"
  mv "$stage_dir/best_model.tmp" "$stage_dir/best_model"
  log "stage $stage: best model $selected"
}

run_stage() {
  local stage=$1 model=$2
  shift 2
  local stage_dir=$RUN_DIR/$stage
  if [[ -s "$stage_dir/best_model" ]]; then
    log "stage $stage: finished earlier, best model $(cat "$stage_dir/best_model"); skipping"
    return 0
  fi
  mkdir -p "$stage_dir"
  if [[ -f "$stage_dir/TRAINED" ]]; then
    log "stage $stage: training finished earlier; redoing the selection only"
  else
    train_stage "$stage" "$stage_dir" "$model" "$@"
  fi
  select_stage_model "$stage" "$stage_dir"
}

run_final_eval() {
  local model=$1 out=$RUN_DIR/final_eval
  if [[ "$RUN_EVAL" != 1 ]]; then
    log "evaluation: skipped (RUN_EVAL=$RUN_EVAL)"
    return 0
  fi
  if [[ -f "$out/DONE" ]]; then
    log "evaluation: finished earlier, results in $out"
    return 0
  fi
  mkdir -p "$out"
  log "evaluation of $model in $out: $EVAL_CMD"
  local status=0
  export NNODES GPUS_PER_NODE
  WATCH_LOG=$LOG_DIR/eval.log MODEL=$model run_watched env -C "$out" bash -c "$EVAL_CMD" || status=$?
  [[ "$status" == 0 ]] || die "evaluation failed (exit $status); resubmit to retry it (training is kept). Log: $LOG_DIR/eval.log"
  touch "$out/DONE"
  log "evaluation finished: $out"
}

# True when every stage has its best model and the evaluation is done or off: nothing to start Ray for.
run_is_complete() {
  local stage
  for stage in $STAGES; do [[ -s "$RUN_DIR/$stage/best_model" ]] || return 1; done
  [[ "$RUN_EVAL" != 1 || -f "$RUN_DIR/final_eval/DONE" ]]
}

main() {
  local stage model=${INIT_MODEL:-}
  if run_is_complete; then
    log "run $RUN_NAME in $RUN_DIR is complete already: nothing to do (new RUN_NAME to start another)"
    return 0
  fi
  if [[ "$RUN_EVAL" == 1 && ! -e "$EVAL_DATA" ]]; then
    die "EVAL_DATA=$EVAL_DATA does not exist: build the LiveCodeBench test split (data_prep), set EVAL_DATA, or set RUN_EVAL=0."
  fi
  mkdir -p "$LOG_DIR"
  log "run $RUN_NAME in $RUN_DIR: stages $STAGES; job ${SLURM_JOB_ID:-local}; logs in $LOG_DIR"
  resolve_nodes
  resolve_gpus_per_node
  export_training_env
  detect_head_network
  log "nodes (${#NODES[@]}): ${NODES[*]}; $GPUS_PER_NODE GPU(s) per node; head ${NODES[0]} at $HEAD_IP on $HEAD_IFACE"
  arm_stop_trap
  start_ray_cluster "$LOG_DIR"
  for stage in $STAGES; do
    run_stage "$stage" "$model" "$@"
    model=$(cat "$RUN_DIR/$stage/best_model")
  done
  run_final_eval "$model"
  log "run $RUN_NAME complete: final model $model"
}

main "$@"

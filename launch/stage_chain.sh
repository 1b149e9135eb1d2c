#!/usr/bin/env bash
# Chained context stages on a Ray cluster over the Slurm job's nodes (NousCoder "Iterative Context
# Extension"): train stage 1 (e.g. 32k), pick its best checkpoint by LiveCodeBench score (re-scored at the next
# stage's 40k context, as the blog picks it), train stage 2 (e.g. 40k) from that model, pick again, then evaluate
# the final model at 81,920 tokens with YaRN on every GPU of the job.
# Called by the run_*.sh wrappers, which set STAGES, RUN_NAME, RESCORE, EVAL_CONFIG and carry the #SBATCH defaults.
#
# Usage: [sbatch] launch/run_<recipe>.sh [hydra overrides for every stage and evaluation...]
#
# Stages are idempotent, so resubmitting the same command after a crash continues where it stopped:
#   - a stage with RUN_DIR/<stage>/best_model is finished and skipped;
#   - an unfinished stage resumes from its latest checkpoint (trainer.resume_mode=auto) with the same
#     wandb run (the id in RUN_DIR/<stage>/wandb_run_id, passed to the Ray job's environment);
#   - a stage whose training finished (RUN_DIR/<stage>/TRAINED) only redoes the checkpoint selection, and a
#     re-scoring keeps the candidates already scored.
#
# Knobs (environment variables; defaults in brackets). Ray, network and node knobs: launch/lib/ray_slurm.sh.
#   STAGES                 stage config names in order, e.g. "dapo_32k dapo_40k" [set by the wrapper]
#   RUN_NAME               run directory name [set by the wrapper]
#   OUTPUT_ROOT            parent of the run directory [$SLURM_SUBMIT_DIR/outputs, else $PWD/outputs]
#   INIT_MODEL             model of the first stage [empty: the stage config's actor_rollout_ref.model.path]
#   OFFLINE_FILTER         problems left out of training, the job log says which: a filtered train parquet written by
#                          data_prep.filter_by_pass_rate (-> data.train_files) or a problem-id list (JSON list,
#                          {"problem_ids": [...]} or one id a line -> nouscoder.offline_filter.problem_ids_path);
#                          empty: the whole data.train_files [empty]
#   TRAINER_CMD            trainer, called as TRAINER_CMD --config-name CONFIG OVERRIDES... for training and for
#                          the validation-only evaluations [python -m recipe.nouscoder.main]
#   RESCORE                "STAGE=CONFIG ...": pick STAGE's model by the validation score of CONFIG (a val_only
#                          config, e.g. eval_lcb_40k) instead of its in-run score [set by the wrapper]
#   RESCORE_TOP_K          checkpoints re-scored, the best by in-run score; retention keeps them [3]
#   SELECT_CMD             best-checkpoint selection of stages without RESCORE, called as SELECT_CMD CHECKPOINT_DIR
#                          SELECT_ARGS; its last stdout line is the next stage's model [python -m recipe.nouscoder.select_checkpoint]
#   SELECT_ARGS            extra selection arguments, word-split (e.g. "--no-merge") []
#   SCORE_METRIC           regular expression of the validation score key, for selection, re-scoring and retention
#                          [select_checkpoint's default: val-core/<LiveCodeBench data source>/acc/mean@n]
#   KEEP_LAST_CHECKPOINTS  checkpoints kept besides the best-scoring one(s); older ones are deleted while training [2]
#   PRUNE_EVERY_S          seconds between retention passes during training [600]
#   PRUNE_CMD              retention pass [python LAUNCH_DIR/prune_checkpoints.py]
#   RUN_EVAL               1: evaluate the last stage's best model after training; 0: skip [1]
#   EVAL_CONFIG            the final evaluation's val_only config, run on every GPU of the job [set by the wrapper]
#   EVAL_DATA              LiveCodeBench test parquet of the re-scoring and the final evaluation (data.val_files),
#                          checked before training starts [$SLURM_SUBMIT_DIR/data/deepcoder_mix/test.parquet]
#   WANDB_API_KEY          when set, every run also logs to wandb (trainer.logger=[console,file,wandb]; an override of
#                          trainer.logger after the script name wins); WANDB_PROJECT, WANDB_ENTITY, ... pass through
#
# Layout: RUN_DIR=OUTPUT_ROOT/RUN_NAME
#   RUN_DIR/<stage>/checkpoints/   trainer.default_local_dir: global_step_N/, metrics.jsonl, best_hf/ (merged model)
#   RUN_DIR/<stage>/rescore/       re-scored candidates (launch/rescore_checkpoints.py): models, runs, selection.json
#   RUN_DIR/<stage>/best_model     path of the selected model (the stage is finished when this exists)
#   RUN_DIR/final_eval/            final evaluation: metrics.jsonl, generations/ (verl's dump), score, DONE
#   RUN_DIR/logs/<job>/            ray_<node>.log per node, <stage>.log, rescore/eval logs, layout.log
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
RESCORE_CMD=(python "$LAUNCH_DIR/rescore_checkpoints.py")
if [[ -n "${SCORE_METRIC:-}" ]]; then
  SELECT+=(--metric "$SCORE_METRIC")
  PRUNE+=(--metric "$SCORE_METRIC")
  RESCORE_CMD+=(--metric "$SCORE_METRIC")
fi
KEEP_LAST_CHECKPOINTS=${KEEP_LAST_CHECKPOINTS:-2}
PRUNE_EVERY_S=${PRUNE_EVERY_S:-600}
RESCORE_TOP_K=${RESCORE_TOP_K:-3}
RUN_EVAL=${RUN_EVAL:-1}
[[ "$RUN_EVAL" != 1 ]] ||
  : "${EVAL_CONFIG:?set EVAL_CONFIG, the final evaluation config, e.g. eval_lcb_80k (the run_*.sh wrappers do), or RUN_EVAL=0}"
EVAL_DATA=${EVAL_DATA:-$SUBMIT_DIR/data/deepcoder_mix/test.parquet}
declare -A RESCORE_CONFIG=() LAYOUT=()

# The re-scoring config of each stage, from RESCORE="STAGE=CONFIG ...".
parse_rescore() {
  local pair
  for pair in ${RESCORE:-}; do
    [[ "$pair" == *=* ]] || die "RESCORE=$RESCORE: write STAGE=CONFIG pairs, e.g. RESCORE=\"dapo_32k=eval_lcb_40k\"."
    RESCORE_CONFIG[${pair%%=*}]=${pair#*=}
  done
}

# Every config this job may run: the stages, their re-scoring configs, the final evaluation.
job_configs() {
  local stage
  for stage in $STAGES; do
    printf '%s\n' "$stage"
    [[ -z "${RESCORE_CONFIG[$stage]:-}" ]] || printf '%s\n' "${RESCORE_CONFIG[$stage]}"
  done
  [[ "$RUN_EVAL" != 1 ]] || printf '%s\n' "$EVAL_CONFIG"
}

# Fills LAYOUT[config] with the overrides that fit each config to the allocation (launch/stage_layout.py), or dies
# with what to pass instead, before anything starts.
resolve_layouts() {
  local -a configs args=()
  local config name overrides output
  mapfile -t configs < <(job_configs)
  for config in "${configs[@]}"; do args+=(--config "$config"); done
  log "checking the GPU layout of ${configs[*]} against $NNODES node(s) x $GPUS_PER_NODE GPU(s)"
  output=$(python "$LAUNCH_DIR/stage_layout.py" --nodes "$NNODES" --gpus-per-node "$GPUS_PER_NODE" "${args[@]}" "$@" \
    2> >(tee "$LOG_DIR/layout.log" | grep '^stage_layout' >&2)) ||
    die "the configs do not fit this allocation (above, and $LOG_DIR/layout.log); resubmit with what it names."
  while IFS=$'\t' read -r name overrides; do LAYOUT[$name]=$overrides; done <<<"$output"
}

# The offline filter's override, and a log line saying loudly which filter this run trains with.
offline_filter_overrides() {
  OFFLINE_OVERRIDES=()
  if [[ -z "${OFFLINE_FILTER:-}" ]]; then
    log "WARNING: offline filter: NONE: every problem of the stages' data.train_files is trained on (NousCoder drops the ~10k of 24k problems the base model always solves first; set OFFLINE_FILTER, launch/README.md)"
  elif [[ ! -s "$OFFLINE_FILTER" ]]; then
    die "OFFLINE_FILTER=$OFFLINE_FILTER does not exist or is empty."
  elif [[ "$OFFLINE_FILTER" == *.parquet ]]; then
    OFFLINE_OVERRIDES=("data.train_files=$OFFLINE_FILTER")
    log "offline filter: training on the filtered parquet $OFFLINE_FILTER (data.train_files)"
  else
    OFFLINE_OVERRIDES=("nouscoder.offline_filter.problem_ids_path=$OFFLINE_FILTER")
    log "offline filter: the problem ids listed in $OFFLINE_FILTER are left out (nouscoder.offline_filter.problem_ids_path)"
  fi
}

# WANDB_RUN_ID of a run directory, created once and reused by every later job of the same run.
run_wandb_id() {
  local file=$1/wandb_run_id
  if [[ ! -s "$file" ]]; then
    printf '%s-%s\n' "${RUN_NAME//[^A-Za-z0-9_-]/_}-${2//[^A-Za-z0-9_-]/_}" "$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')" >"$file.tmp"
    mv "$file.tmp" "$file"
  fi
  cat "$file"
}

# Runs TRAINER_CMD --config-name CONFIG in RUN_SUBDIR (its trainer.default_local_dir) with NAME's wandb run, under
# run_watched; LOG is its log file. Overrides, last wins: launcher defaults, the user's ("$@"), the config's
# layout, then what the chain itself must fix (where it writes; the per-call ones in EXTRA_OVERRIDES).
# verl's TaskRunner, where wandb starts, is a Ray actor of a cluster started before this: it gets WANDB_RUN_ID and
# WANDB_RESUME through the Ray job's runtime_env (ray_kwargs.ray_init.runtime_env.env_vars), not this shell.
run_trainer() {
  local config=$1 run_subdir=$2 name=$3 log_file=$4
  shift 4
  local wandb_id layout
  mkdir -p "$run_subdir"
  wandb_id=$(run_wandb_id "$run_subdir" "$name")
  export WANDB_RUN_ID=$wandb_id WANDB_RESUME=allow
  local -a overrides=("trainer.experiment_name=${RUN_NAME}_$name")
  [[ -z "${WANDB_API_KEY:-}" ]] || overrides+=("trainer.logger=[console,file,wandb]")
  read -ra layout <<<"${LAYOUT[$config]:-}"
  overrides+=("$@" "${layout[@]}" "trainer.default_local_dir=$run_subdir"
    "++ray_kwargs.ray_init.runtime_env.env_vars.WANDB_RUN_ID=$wandb_id"
    "++ray_kwargs.ray_init.runtime_env.env_vars.WANDB_RESUME=allow" "${EXTRA_OVERRIDES[@]}")
  log "$name: ${TRAINER[*]} --config-name $config ${overrides[*]} (wandb run $wandb_id)"
  WATCH_LOG=$log_file run_watched "${TRAINER[@]}" --config-name "$config" "${overrides[@]}"
}

# Trains one stage from MODEL (empty: the config's), resuming from its latest checkpoint if any.
train_stage() {
  local stage=$1 stage_dir=$2 model=$3
  shift 3
  local ckpt_dir=$stage_dir/checkpoints keep_best=1
  mkdir -p "$ckpt_dir"
  [[ -z "${RESCORE_CONFIG[$stage]:-}" ]] || keep_best=$RESCORE_TOP_K
  if [[ -s "$ckpt_dir/latest_checkpointed_iteration.txt" ]]; then
    log "stage $stage: resuming from global_step_$(cat "$ckpt_dir/latest_checkpointed_iteration.txt")"
  else
    log "stage $stage: starting"
  fi
  # Retention while training; the EXIT trap stops it if the job ends first.
  "${PRUNE[@]}" "$ckpt_dir" --keep-last "$KEEP_LAST_CHECKPOINTS" --keep-best "$keep_best" --every "$PRUNE_EVERY_S" \
    >>"$LOG_DIR/prune_$stage.log" 2>&1 &
  local pruner=$! status=0
  HELPER_PIDS+=("$pruner")
  EXTRA_OVERRIDES=(trainer.resume_mode=auto trainer.max_actor_ckpt_to_keep=null "${OFFLINE_OVERRIDES[@]}")
  [[ -z "$model" ]] || EXTRA_OVERRIDES+=("actor_rollout_ref.model.path=$model")
  run_trainer "$stage" "$ckpt_dir" "$stage" "$LOG_DIR/$stage.log" "$@" || status=$?
  kill -TERM "$pruner" 2>/dev/null || true
  wait "$pruner" 2>/dev/null || true
  [[ "$status" == 0 ]] || die "stage $stage: trainer failed (exit $status); resubmit the same command to resume from the latest checkpoint. Log: $LOG_DIR/$stage.log"
  "${PRUNE[@]}" "$ckpt_dir" --keep-last "$KEEP_LAST_CHECKPOINTS" --keep-best "$keep_best" >>"$LOG_DIR/prune_$stage.log" 2>&1 ||
    log "WARNING: stage $stage: final retention pass failed, see $LOG_DIR/prune_$stage.log"
  touch "$stage_dir/TRAINED"
  log "stage $stage: training finished"
}

# The stage's model by its in-run validation score: SELECT_CMD merges the best checkpoint.
select_by_in_run_score() {
  local stage=$1 stage_dir=$2 output
  log "stage $stage: selecting the best checkpoint: ${SELECT[*]} $stage_dir/checkpoints"
  output=$("${SELECT[@]}" "$stage_dir/checkpoints" 2> >(tee -a "$LOG_DIR/select_$stage.log" >&2)) ||
    die "stage $stage: checkpoint selection failed; fix it and resubmit (training is kept)."
  SELECTED=${output##*$'\n'}
}

# The stage's model by the score of its RESCORE_TOP_K best checkpoints under the stage's re-scoring config.
select_by_rescoring() {
  local stage=$1 stage_dir=$2 rescore=${RESCORE_CONFIG[$1]} rescore_dir=$2/rescore step model eval_dir output
  shift 2
  log "stage $stage: re-scoring its $RESCORE_TOP_K best checkpoints with $rescore (NousCoder: the model that starts the next stage is the best at the next context)"
  output=$("${RESCORE_CMD[@]}" candidates "$stage_dir/checkpoints" "$rescore_dir" --top-k "$RESCORE_TOP_K" \
    2> >(tee -a "$LOG_DIR/select_$stage.log" >&2)) || die "stage $stage: preparing the re-scoring failed; see $LOG_DIR/select_$stage.log."
  while read -r step model eval_dir; do
    [[ -n "$step" ]] || continue
    EXTRA_OVERRIDES=("actor_rollout_ref.model.path=$model" "data.val_files=$EVAL_DATA")
    run_trainer "$rescore" "$eval_dir" "${stage}_rescore_step$step" "$LOG_DIR/rescore_${stage}_step$step.log" "$@" ||
      die "stage $stage: re-scoring global_step_$step failed; resubmit to redo it (training is kept). Log: $LOG_DIR/rescore_${stage}_step$step.log"
  done <<<"$output"
  output=$("${RESCORE_CMD[@]}" pick "$rescore_dir" 2> >(tee -a "$LOG_DIR/select_$stage.log" >&2)) ||
    die "stage $stage: picking the re-scored checkpoint failed; see $LOG_DIR/select_$stage.log."
  SELECTED=${output##*$'\n'}
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
  if [[ -n "${RESCORE_CONFIG[$stage]:-}" ]]; then
    select_by_rescoring "$stage" "$stage_dir" "$@"
  else
    select_by_in_run_score "$stage" "$stage_dir"
  fi
  [[ -e "$SELECTED" ]] || die "stage $stage: the selection printed '$SELECTED', which does not exist."
  printf '%s\n' "$SELECTED" >"$stage_dir/best_model.tmp"
  mv "$stage_dir/best_model.tmp" "$stage_dir/best_model"
  log "stage $stage: best model $SELECTED"
}

run_final_eval() {
  local model=$1 out=$RUN_DIR/final_eval score
  shift
  if [[ "$RUN_EVAL" != 1 ]]; then
    log "evaluation: skipped (RUN_EVAL=$RUN_EVAL)"
    return 0
  fi
  if [[ -f "$out/DONE" ]]; then
    log "evaluation: finished earlier, results in $out ($(cat "$out/score" 2>/dev/null))"
    return 0
  fi
  log "evaluation of $model with $EVAL_CONFIG on all $NNODES node(s)"
  EXTRA_OVERRIDES=("actor_rollout_ref.model.path=$model" "data.val_files=$EVAL_DATA" "trainer.validation_data_dir=$out/generations")
  run_trainer "$EVAL_CONFIG" "$out" final_eval "$LOG_DIR/eval.log" "$@" ||
    die "evaluation failed; resubmit to retry it (training is kept). Log: $LOG_DIR/eval.log"
  score=$("${RESCORE_CMD[@]}" score "$out") || die "evaluation: no validation score in $out/metrics.jsonl; see $LOG_DIR/eval.log."
  printf '%s\n' "$score" >"$out/score"
  touch "$out/DONE"
  log "evaluation finished: $score (generations in $out/generations)"
}

# True when every stage has its best model and the evaluation is done or off: nothing to start Ray for.
run_is_complete() {
  local stage
  for stage in $STAGES; do [[ -s "$RUN_DIR/$stage/best_model" ]] || return 1; done
  [[ "$RUN_EVAL" != 1 || -f "$RUN_DIR/final_eval/DONE" ]]
}

main() {
  local stage model=${INIT_MODEL:-}
  parse_rescore
  if run_is_complete; then
    log "run $RUN_NAME in $RUN_DIR is complete already: nothing to do (new RUN_NAME to start another)"
    return 0
  fi
  if [[ ("$RUN_EVAL" == 1 || ${#RESCORE_CONFIG[@]} -gt 0) && ! -e "$EVAL_DATA" ]]; then
    die "EVAL_DATA=$EVAL_DATA does not exist: build the LiveCodeBench test split (data_prep), set EVAL_DATA, or set RUN_EVAL=0 RESCORE=."
  fi
  mkdir -p "$LOG_DIR"
  log "run $RUN_NAME in $RUN_DIR: stages $STAGES; job ${SLURM_JOB_ID:-local}; logs in $LOG_DIR; bash $BASH_VERSION"
  resolve_nodes
  resolve_gpus_per_node
  resolve_layouts "$@"
  offline_filter_overrides
  export_training_env
  detect_head_network
  log "nodes (${#NODES[@]}): ${NODES[*]}; $GPUS_PER_NODE GPU(s) per node; head ${NODES[0]} at $HEAD_IP on $HEAD_IFACE"
  check_sandbox_isolation "$LOG_DIR"
  arm_stop_trap
  start_ray_cluster "$LOG_DIR"
  for stage in $STAGES; do
    run_stage "$stage" "$model" "$@"
    model=$(cat "$RUN_DIR/$stage/best_model")
  done
  run_final_eval "$model" "$@"
  log "run $RUN_NAME complete: final model $model"
}

main "$@"

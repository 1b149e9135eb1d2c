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
#   OFFLINE_FILTER         problems left out of training (NousCoder drops the ~10k of 24k the base model always
#                          solves), the job log says which [set by the wrapper: build for the NousCoder stages]:
#                          build = stage 0 generates G rollouts of the first stage's model per problem of its
#                          data.train_files (OFFLINE_FILTER_CONFIG, on every GPU) and trains every stage on the
#                          filtered parquet (launch/offline_filter.py); a filtered train parquet (-> data.train_files);
#                          a problem-id list (JSON list, {"problem_ids": [...]} or one id a line ->
#                          nouscoder.offline_filter.problem_ids_path); none = every problem of data.train_files
#   OFFLINE_FILTER_CONFIG  stage 0's validation-only config [offline_filter]
#   BUDGET_GPU_HOURS       GPU-hours of the whole chain: each training stage's total_training_steps, save_freq and
#                          test_freq planned for it on this allocation (launch/run_plan.py; configs/README.md "Run
#                          plan"); empty: the stages' configured lengths (planned for 4,608 GPU-hours on 48 GPUs) []
#   CHECKPOINT_GB          one checkpoint's size as saved, for the disk check; empty: from the first stage's model
#                          config when it is local or in the Hugging Face cache, else the check is skipped []
#   STAGE_OVERRIDES_<CONFIG>  hydra overrides of that config only (a stage, the re-scoring, the final evaluation or
#                          stage 0), word-split, after the common ones (after the script name), e.g.
#                          STAGE_OVERRIDES_dapo_40k="context=24k actor_rollout_ref.rollout.max_num_seqs=96"; a name the
#                          job does not run fails the preflight []
#   NOUSCODER_CONFIG_DIR   the experiment config directory (a copy of configs/ with your own experiments), read by the
#                          preflight and every trainer run alike [this repository's configs/]
#   MODEL_CONFIG           the first stage's model's config.json, where the model is not on this machine yet (the
#                          preflight's shape, memory, plan and disk checks need it; the experiments' own models are
#                          known) [the model's own: a directory or the Hugging Face cache]
#   GPU, GPU_MEMORY_GB     the GPU kind the plan and memory checks assume (h100, h200, a100, b200), and its memory if
#                          another [h100, the kind's]
#   PACE_CHECK_STEPS, PACE_FACTOR, PACE_ACTION  after PACE_CHECK_STEPS training steps of a stage, their median step
#                          time against the run plan's: beyond PACE_FACTOR either way, a warning (warn) or the run
#                          stopped (stop), naming the re-plan command (launch/progress_watchdog.py) [3, 2, warn]
#   TRAINER_CMD            trainer, called as TRAINER_CMD --config-name CONFIG OVERRIDES... for training and for
#                          the validation-only evaluations [python -m recipe.nouscoder.main]
#   RESCORE                "STAGE=CONFIG ...": pick STAGE's model by the validation score of CONFIG (a val_only
#                          config, e.g. eval_lcb_40k) instead of its in-run score [set by the wrapper]
#   RESCORE_TOP_K          checkpoints re-scored, the best by in-run score; retention keeps them [3]
#   SELECT_CMD             best-checkpoint selection of stages without RESCORE, called as SELECT_CMD CHECKPOINT_DIR
#                          SELECT_ARGS; its last stdout line is the next stage's model [python -m recipe.nouscoder.selection.select_checkpoint]
#   SELECT_ARGS            extra selection arguments, word-split (e.g. "--no-merge") []
#   SCORE_METRIC           regular expression of the validation score key, for selection, re-scoring and retention
#                          [select_checkpoint's default: val-core/<LiveCodeBench data source>/acc/mean@n]
#   KEEP_LAST_CHECKPOINTS  checkpoints kept besides the best-scoring one(s); older ones are deleted while training;
#                          after a stage's selection the optimizer shards of its other checkpoints go too [2]
#   PRUNE_EVERY_S          seconds between retention passes during training [600]
#   PRUNE_CMD              retention pass [python LAUNCH_DIR/prune_checkpoints.py]
#   PICK_TEMPERATURE       1: before the first stage, pick the training temperature from the first model's output
#                          diversity (MicroCoder section 2.4, recipe.nouscoder.selection.pick_temperature: vLLM on
#                          the head node's GPUs before Ray starts); every training stage then samples at it [0]
#   PICK_TEMPERATURE_ARGS  the picker's arguments besides model, problems and report, word-split; its threshold is a
#                          choice (the paper gives none) ["--temperatures 0.8,1.0,1.2,1.4 --threshold 0.75"]
#   PICK_TEMPERATURE_CMD   the picker [python -m recipe.nouscoder.selection.pick_temperature]
#   RUN_EVAL               1: evaluate the last stage's best model after training; 0: skip [1]
#   EVAL_CONFIG            the final evaluation's val_only config, run on every GPU of the job [set by the wrapper]
#   EVAL_DATA              LiveCodeBench test parquet of the re-scoring and the final evaluation (data.val_files),
#                          checked before training starts [$SLURM_SUBMIT_DIR/data/deepcoder_mix/test.parquet]
#   EVAL_BENCHMARKS        the final evaluation's benchmarks instead of EVAL_DATA, space-separated, each NAME (read
#                          from EVAL_BENCHMARK_DIR/NAME.parquet) or NAME=PARQUET, NAME one of lcb_v6 lcb_v5
#                          codeforces humanevalplus (python -m data_prep.build_benchmarks); one validation run each
#                          with EVAL_CONFIG []
#   EVAL_BENCHMARK_DIR     where EVAL_BENCHMARKS' parquets are [$SLURM_SUBMIT_DIR/data/benchmarks]
#   EVAL_CODEFORCES_CONTESTS  contest data of the Codeforces rating (recipe.nouscoder.eval.codeforces_contests)
#                          [EVAL_BENCHMARK_DIR/codeforces_contests.json when it exists; without it no rating]
#   WANDB_API_KEY          when set, every run also logs to wandb (trainer.logger=[console,file,wandb]; an override of
#                          trainer.logger after the script name wins); WANDB_ENTITY, WANDB_BASE_URL, ... pass through;
#                          the site check turns WANDB_MODE=offline on when a node cannot reach wandb
#   WANDB_PROJECT          the wandb project: verl passes project=trainer.project_name to wandb.init, so the chain sets
#                          trainer.project_name from it (an override after the script name wins) [the configs' nouscoder]
#   WANDB_DIR              where wandb writes its runs (offline ones to sync afterwards) [RUN_DIR/wandb]
#   CHECK_ONLY             1: stop after the checks (preflight, node checks, site check and its all-reduce), before Ray:
#                          the site check of an allocation before the run [0]
#   SAVE_BEFORE_LIMIT_S    how long before the job's time limit a training stage is asked to save and stop, after which
#                          the job requeues itself and the next run resumes from that save [per stage, from the run plan:
#                          one step + a validation + a save + 5 min; launch/README.md "A chain longer than the time limit"]
#   WATCHDOG               1: a progress watchdog stops a run whose metrics.jsonl gets no new step within its bound
#                          (launch/progress_watchdog.py), after dumping diagnostics; 0: off [1]
#   STALL_FIRST_STEP_S     bound for a run's first step (start-up, model load, vLLM, validation before training) [7200]
#   STALL_MIN_S, STALL_FACTOR, STALL_WINDOW  later steps: max(STALL_MIN_S, STALL_FACTOR x the longest of the last
#                          STALL_WINDOW steps) [1800, 3, 5]
#   STALL_VALIDATION_S     added for a step that validates [3600]; a validation-only run's bound is
#                          max(STALL_FIRST_STEP_S, 2 x its planned time)
#
# Layout: RUN_DIR=OUTPUT_ROOT/RUN_NAME
#   RUN_DIR/<stage>/checkpoints/   trainer.default_local_dir: global_step_N/, metrics.jsonl, best_hf/ (merged model)
#   RUN_DIR/<stage>/rescore/       re-scored candidates (launch/rescore_checkpoints.py): models, runs, selection.json
#   RUN_DIR/<stage>/best_model     path of the selected model (the stage is finished when this exists)
#   RUN_DIR/<stage>/solved_problems.json  the selected checkpoint's online filter state, for the later stages
#   RUN_DIR/final_eval/            final evaluation: metrics.jsonl, generations/ (verl's dump), score (with
#                                  EVAL_BENCHMARKS: final_eval/<NAME>/ each); report/ (the pass@k report of the dump:
#                                  completions.jsonl, results.json, report.md, plots, per benchmark <NAME>/), DONE
#   RUN_DIR/pick_temperature/      report.json of the temperature picker (PICK_TEMPERATURE=1)
#   RUN_DIR/offline_filter/        stage 0: run/ (its metrics), generations/, train_filtered.parquet (+ report), DONE
#   RUN_DIR/logs/<job>/            ray_<node>.log per node, <stage>.log, rescore/eval logs, preflight.log,
#                                  bill_of_materials.json, <check>_<node>.log, stall_<run>/ (a stalled run's diagnostics)
set -euo pipefail

LAUNCH_DIR=${LAUNCH_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
# shellcheck source=launch/lib/ray_slurm.sh
source "$LAUNCH_DIR/lib/ray_slurm.sh"

: "${STAGES:?set STAGES to the stage configs to chain, e.g. STAGES=\"dapo_32k dapo_40k\" (the run_*.sh wrappers do)}"
: "${RUN_NAME:?set RUN_NAME, the run directory name under OUTPUT_ROOT (the run_*.sh wrappers do)}"
SUBMIT_DIR=${SLURM_SUBMIT_DIR:-$PWD}
OUTPUT_ROOT=${OUTPUT_ROOT:-$SUBMIT_DIR/outputs}
RUN_DIR=$OUTPUT_ROOT/$RUN_NAME
# A requeued job keeps its id: each of its runs logs apart (<job>.<restart>), as does a second chain in the same job
# (LOG_DIR_SUFFIX: the rehearsal's resumed one).
LOG_DIR=$RUN_DIR/logs/${SLURM_JOB_ID:-local-$(date +%Y%m%d-%H%M%S)}${SLURM_RESTART_COUNT:+.$SLURM_RESTART_COUNT}${LOG_DIR_SUFFIX:-}
# Every command the batch script runs goes under HOST_PREFIX (launch/lib/ray_slurm.sh, "Site conventions").
read -ra TRAINER <<<"${HOST_PREFIX[*]} ${TRAINER_CMD:-python -m recipe.nouscoder.main}"
read -ra SELECT <<<"${HOST_PREFIX[*]} ${SELECT_CMD:-python -m recipe.nouscoder.selection.select_checkpoint} ${SELECT_ARGS:-}"
read -ra PRUNE <<<"${HOST_PREFIX[*]} ${PRUNE_CMD:-python $LAUNCH_DIR/prune_checkpoints.py}"
RESCORE_CMD=("${HOST_PYTHON[@]}" "$LAUNCH_DIR/rescore_checkpoints.py")
read -ra PICK <<<"${PICK_TEMPERATURE_CMD:-python -m recipe.nouscoder.selection.pick_temperature}"
read -ra PICK_ARGS <<<"${PICK_TEMPERATURE_ARGS:---temperatures 0.8,1.0,1.2,1.4 --threshold 0.75}"
TRAINING_OVERRIDES=()  # every training stage's, after the configs' own (the picked temperature)
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
EVAL_BENCHMARK_DIR=${EVAL_BENCHMARK_DIR:-$SUBMIT_DIR/data/benchmarks}
: "${OFFLINE_FILTER:?set OFFLINE_FILTER to build (stage 0 builds the filter), a filter file, or none (the run_*.sh wrappers do)}"
OFFLINE_FILTER_CONFIG=${OFFLINE_FILTER_CONFIG:-offline_filter}
read -ra STAGE_LIST <<<"$STAGES"
# Per config, from launch/preflight.py: overrides appended to its command; the progress watchdog's facts.
declare -A RESCORE_CONFIG=() OVERRIDES=() TEST_FREQ=() TOTAL_STEPS=() EXPECTED_S=() STEP_S=() SAVE_LEAD_S=() SITE=()

# The re-scoring config of each stage, from RESCORE="STAGE=CONFIG ...", for stages of STAGES only.
parse_rescore() {
  local pair
  for pair in ${RESCORE:-}; do
    [[ "$pair" == *=* ]] || die "RESCORE=$RESCORE: write STAGE=CONFIG pairs, e.g. RESCORE=\"dapo_32k=eval_lcb_40k\"."
    [[ " $STAGES " == *" ${pair%%=*} "* ]] ||
      die "RESCORE=$RESCORE names stage ${pair%%=*}, which is not one of STAGES=\"$STAGES\": drop it (RESCORE=) or add the stage."
    RESCORE_CONFIG[${pair%%=*}]=${pair#*=}
  done
}

# Checks every config this job runs against the allocation, its software and its disk, and derives what the chain
# appends to each command (launch/preflight.py: layout, run plan, bill of materials for the node check, disk), or
# dies naming what to change, before anything starts. Fills OVERRIDES, TEST_FREQ, TOTAL_STEPS, EXPECTED_S,
# TRAIN_FILES and FIRST_MODEL.
run_preflight() {
  local -a args=(--nodes "$NNODES" --gpus-per-node "$GPUS_PER_NODE" --stages "$STAGES" --manifest "$BOM_MANIFEST"
    --output-root "$OUTPUT_ROOT" --run-dir "$RUN_DIR" --keep-last "$KEEP_LAST_CHECKPOINTS" --rescore-top-k "$RESCORE_TOP_K")
  local stage kind name value output
  for stage in "${!RESCORE_CONFIG[@]}"; do args+=(--rescore "$stage=${RESCORE_CONFIG[$stage]}"); done
  [[ "$RUN_EVAL" != 1 ]] || args+=(--eval-config "$EVAL_CONFIG")
  [[ "$OFFLINE_FILTER" != build ]] || args+=(--offline-filter-config "$OFFLINE_FILTER_CONFIG")
  [[ -z "${BUDGET_GPU_HOURS:-}" ]] || args+=(--budget-gpu-hours "$BUDGET_GPU_HOURS")
  [[ -z "${CHECKPOINT_GB:-}" ]] || args+=(--checkpoint-gb "$CHECKPOINT_GB")
  [[ -z "${INIT_MODEL:-}" ]] || args+=(--init-model "$INIT_MODEL")
  [[ -z "${MODEL_CONFIG:-}" ]] || args+=(--model-config "$MODEL_CONFIG")
  [[ -z "${GPU:-}" ]] || args+=(--gpu "$GPU")
  [[ -z "${GPU_MEMORY_GB:-}" ]] || args+=(--gpu-memory-gb "$GPU_MEMORY_GB")
  local var
  for var in $(compgen -v STAGE_OVERRIDES_); do args+=(--config-overrides "${var#STAGE_OVERRIDES_}=${!var}"); done
  if [[ ${#RESCORE_CONFIG[@]} -gt 0 || ("$RUN_EVAL" == 1 && -z "${EVAL_BENCHMARKS:-}") ]]; then
    args+=(--eval-data "$EVAL_DATA")
  fi
  if [[ "$RUN_EVAL" == 1 && -n "${EVAL_BENCHMARKS:-}" ]]; then
    while read -r value; do args+=(--eval-benchmark "${value#*=}"); done < <(eval_benchmarks)
  fi
  [[ -z "${WANDB_API_KEY:-}" ]] || args+=(--wandb)
  [[ -z "${TIME_LIMIT_S:-}" ]] || args+=(--time-limit-s "$TIME_LIMIT_S")
  [[ -z "${SAVE_BEFORE_LIMIT_S:-}" ]] || args+=(--save-lead-s "$SAVE_BEFORE_LIMIT_S")
  args+=(--site-manifest "$SITE_MANIFEST" --allocation-gpus "$ALLOCATION_GPUS")
  log "preflight of $STAGES${RESCORE:+, $RESCORE}$([[ "$RUN_EVAL" == 1 ]] && echo ", $EVAL_CONFIG") on $NNODES node(s) x $GPUS_PER_NODE GPU(s): layout, bill of materials, run plan, time limit, disk, data"
  output=$("${HOST_PYTHON[@]}" "$LAUNCH_DIR/preflight.py" "${args[@]}" "${LAUNCHER_OVERRIDES[@]}" "$@" \
    2> >(tee "$LOG_DIR/preflight.log" | grep '^preflight' >&2)) ||
    die "the preflight failed (above, and $LOG_DIR/preflight.log): change what it names and resubmit."
  while IFS=$'\t' read -r kind name value; do
    case $kind in
      overrides) OVERRIDES[$name]=$value ;;
      test_freq) TEST_FREQ[$name]=$value ;;
      steps) TOTAL_STEPS[$name]=$value ;;
      expected_s) EXPECTED_S[$name]=$value ;;
      step_s) STEP_S[$name]=$value ;;
      train_files) TRAIN_FILES=$value ;;
      model) FIRST_MODEL=$value ;;
      save_lead_s) SAVE_LEAD_S[$name]=$value ;;
      site) SITE[$name]=$value ;;
    esac
  done <<<"$output"
}

# The offline filter's override and a log line saying which filter this run trains with; for `build`, stage 0 runs
# after Ray starts (build_offline_filter) and sets the override then.
offline_filter_overrides() {
  OFFLINE_OVERRIDES=()
  case $OFFLINE_FILTER in
    none)
      log "offline filter: none (OFFLINE_FILTER=none): every problem of the stages' data.train_files is trained on" ;;
    build)
      [[ -s "$RUN_DIR/offline_filter/DONE" || -e "$TRAIN_FILES" ]] ||
        die "OFFLINE_FILTER=build: the training data $TRAIN_FILES (data.train_files of $STAGES) does not exist; build it (launch/README.md, Prerequisites) or pass data.train_files=PATH."
      log "offline filter: built by stage 0 from $FIRST_MODEL's rollouts on $TRAIN_FILES ($OFFLINE_FILTER_CONFIG; OFFLINE_FILTER=none trains on every problem)" ;;
    *.parquet)
      [[ -s "$OFFLINE_FILTER" ]] || die "OFFLINE_FILTER=$OFFLINE_FILTER does not exist or is empty."
      OFFLINE_OVERRIDES=("data.train_files=$OFFLINE_FILTER")
      log "offline filter: training on the filtered parquet $OFFLINE_FILTER (data.train_files)" ;;
    *)
      [[ -s "$OFFLINE_FILTER" ]] || die "OFFLINE_FILTER=$OFFLINE_FILTER: not build, none, or a file that exists."
      OFFLINE_OVERRIDES=("nouscoder.offline_filter.problem_ids_path=$OFFLINE_FILTER")
      log "offline filter: the problem ids listed in $OFFLINE_FILTER are left out (nouscoder.offline_filter.problem_ids_path)" ;;
  esac
}

# Stage 0: the first stage's model generates G rollouts per training problem, graded with the training reward
# (OFFLINE_FILTER_CONFIG, validation only, every GPU), then launch/offline_filter.py drops the always-solved problems.
# It generates for a copy of the training data whose tests are in extra_info (offline_filter.py prepare), graded by
# recipe/nouscoder/training/stage0_reward.py, so that verl holds and dumps no ground truth, only each line's problem id.
# Its DONE marker makes a resubmission reuse the filter.
build_offline_filter() {
  local out=$RUN_DIR/offline_filter
  local filtered=$out/train_filtered.parquet problems=$out/problems.parquet
  if [[ -f "$out/DONE" ]]; then
    log "offline filter: built earlier, $filtered ($(cat "$out/DONE"))"
  else
    log "offline filter: stage 0, $OFFLINE_FILTER_CONFIG on all $NNODES node(s): $FIRST_MODEL on every problem of $TRAIN_FILES"
    [[ -s "$problems" ]] || "${HOST_PYTHON[@]}" "$LAUNCH_DIR/offline_filter.py" prepare --data "$TRAIN_FILES" --out "$problems" \
      2>&1 | tee -a "$LOG_DIR/offline_filter.log" || die "offline filter: preparing $TRAIN_FILES failed; see $LOG_DIR/offline_filter.log."
    EXTRA_OVERRIDES=("actor_rollout_ref.model.path=$FIRST_MODEL" "data.val_files=$problems" "trainer.validation_data_dir=$out/generations"
      "reward.custom_reward_function.path=pkg://recipe.nouscoder.training.stage0_reward")
    run_trainer "$OFFLINE_FILTER_CONFIG" "$out/run" offline_filter "$LOG_DIR/offline_filter.log" "$@" ||
      die "offline filter: stage 0 failed; resubmit to retry it, or set OFFLINE_FILTER=none. Log: $LOG_DIR/offline_filter.log"
    "${HOST_PYTHON[@]}" "$LAUNCH_DIR/offline_filter.py" filter --generations "$out/generations" --data "$TRAIN_FILES" --out "$filtered" \
      2>&1 | tee -a "$LOG_DIR/offline_filter.log" || die "offline filter: filtering the generations failed; see $LOG_DIR/offline_filter.log."
    grep '^filter_by_pass_rate' "$LOG_DIR/offline_filter.log" | tail -n 1 >"$out/DONE"
  fi
  OFFLINE_OVERRIDES=("data.train_files=$filtered")
  log "offline filter: training on $filtered (data.train_files)"
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
# A training run (STOP_REQUEST set by train_stage) also gets NOUSCODER_STOP_REQUEST that way: run_watched writes that
# file at STOP_DEADLINE_S (bash's SECONDS), and the trainer saves at the end of its step and stops
# (recipe/nouscoder/training/stop_request.py).
run_trainer() {
  local config=$1 run_subdir=$2 name=$3 log_file=$4
  shift 4
  local wandb_id layout own var=STAGE_OVERRIDES_$config
  mkdir -p "$run_subdir"
  wandb_id=$(run_wandb_id "$run_subdir" "$name")
  export WANDB_RUN_ID=$wandb_id WANDB_RESUME=allow
  local -a overrides=("trainer.experiment_name=${RUN_NAME}_$name" "${LAUNCHER_OVERRIDES[@]}")
  read -ra layout <<<"${OVERRIDES[$config]:-}"
  read -ra own <<<"${!var:-}"
  overrides+=("$@" "${own[@]}" "${layout[@]}" "trainer.default_local_dir=$run_subdir"
    "++ray_kwargs.ray_init.runtime_env.env_vars.WANDB_RUN_ID=$wandb_id"
    "++ray_kwargs.ray_init.runtime_env.env_vars.WANDB_RESUME=allow" "${EXTRA_OVERRIDES[@]}")
  [[ -z "${STOP_REQUEST:-}" ]] || overrides+=("++ray_kwargs.ray_init.runtime_env.env_vars.NOUSCODER_STOP_REQUEST=$STOP_REQUEST")
  log "$name: ${TRAINER[*]} --config-name $config ${overrides[*]} (wandb run $wandb_id)"
  local stop_file=$LOG_DIR/stall_$name.txt status=0
  rm -f "$stop_file"
  start_watchdog "$config" "$run_subdir/metrics.jsonl" "$stop_file"
  WATCH_LOG=$log_file WATCH_STOP_FILE=$stop_file WATCH_DIAGNOSTICS_DIR=$LOG_DIR/stall_$name \
    WATCH_STOP_REQUEST=${STOP_REQUEST:-} WATCH_DEADLINE_S=${STOP_DEADLINE_S:-} \
    run_watched "${TRAINER[@]}" --config-name "$config" "${overrides[@]}" || status=$?
  stop_watchdog
  [[ "$status" != 124 ]] || log "$name stalled: $(cat "$stop_file"); diagnostics in $LOG_DIR/stall_$name/"
  return "$status"
}

# The progress watchdog of one trainer run (launch/progress_watchdog.py), with the bound's knobs (STALL_*) and the
# config's test_freq and total steps (a validation-only run: one line, bounded by twice its planned time).
start_watchdog() {
  local config=$1 metrics=$2 stop_file=$3 first=${STALL_FIRST_STEP_S:-7200}
  local -a last=()
  WATCHDOG_PID=
  [[ "${WATCHDOG:-1}" == 1 ]] || return 0
  if [[ -n "${EXPECTED_S[$config]:-}" ]]; then # validation only: one line, at step 0
    ((2 * EXPECTED_S[$config] <= first)) || first=$((2 * EXPECTED_S[$config]))
    last=(--last-step 0)
  elif ((${TOTAL_STEPS[$config]:-0} > 0)); then
    last=(--last-step "${TOTAL_STEPS[$config]}")
  fi
  "${HOST_PYTHON[@]}" "$LAUNCH_DIR/progress_watchdog.py" "$metrics" --stop-file "$stop_file" --first-step-s "$first" \
    --min-s "${STALL_MIN_S:-1800}" --factor "${STALL_FACTOR:-3}" --window "${STALL_WINDOW:-5}" \
    --validation-s "${STALL_VALIDATION_S:-3600}" --test-freq "${TEST_FREQ[$config]:-0}" \
    --total-steps "${TOTAL_STEPS[$config]:-0}" "${last[@]}" --poll-s "${STALL_POLL_S:-10}" \
    --planned-step-s "${STEP_S[$config]:-0}" --pace-steps "${PACE_CHECK_STEPS:-3}" --pace-factor "${PACE_FACTOR:-2}" \
    --pace-action "${PACE_ACTION:-warn}" > >(tee -a "$LOG_DIR/watchdog.log" | grep --line-buffered '^WARNING: step time' >&2) 2>&1 &
  WATCHDOG_PID=$!
  HELPER_PIDS+=("$WATCHDOG_PID")
}

stop_watchdog() {
  [[ -n "${WATCHDOG_PID:-}" ]] || return 0
  kill -TERM "$WATCHDOG_PID" 2>/dev/null || true
  wait "$WATCHDOG_PID" 2>/dev/null || true
  WATCHDOG_PID=
}

# The job's time left in seconds (JOB_END_S in bash's SECONDS clock, from Slurm at the start; empty: no limit).
time_left_s() { [[ -z "${JOB_END_S:-}" ]] || echo $((JOB_END_S - SECONDS)); }

# Slurm's "[D-]HH:MM:SS" / "MM:SS" time (squeue %l, %L) in seconds; nothing for UNLIMITED, NOT_SET, INVALID.
slurm_seconds() {
  local value=$1 days=0 seconds=0 part
  local -a parts
  [[ "$value" =~ ^([0-9]+-)?[0-9]+(:[0-9]+){1,2}$ ]] || return 0
  if [[ "$value" == *-* ]]; then
    days=${value%%-*}
    value=${value#*-}
  fi
  IFS=: read -ra parts <<<"$value"
  for part in "${parts[@]}"; do seconds=$((seconds * 60 + 10#$part)); done
  echo $((days * 86400 + seconds))
}

# TIME_LIMIT_S (the job's --time) and JOB_END_S, from Slurm; outside Slurm or without a limit, both empty.
resolve_time_limit() {
  TIME_LIMIT_S='' JOB_END_S=''
  in_slurm_job || return 0
  local limit left
  limit=$(squeue -h -j "$SLURM_JOB_ID" -o %l 2>/dev/null) || return 0
  left=$(squeue -h -j "$SLURM_JOB_ID" -o %L 2>/dev/null) || return 0
  TIME_LIMIT_S=$(slurm_seconds "$limit")
  left=$(slurm_seconds "$left")
  [[ -z "$left" ]] || JOB_END_S=$((SECONDS + left))
  [[ -z "$JOB_END_S" ]] || log "time limit: $limit ($left s left in this job); a training stage saves and stops before it, and the job requeues itself"
}

# STOP_REQUEST / STOP_DEADLINE_S of a training stage's run: the file run_watched writes SAVE_LEAD_S[stage] before the
# time limit (or at once on SIGUSR1, sbatch --signal=B:USR1@SECONDS) and the trainer answers with STOP_REQUEST.saved.
# A job with less time left than that requeues itself before starting the stage.
arm_stop_request() {
  local stage=$1
  STOP_REQUEST=$LOG_DIR/stop_request_$stage STOP_DEADLINE_S=
  rm -f "$STOP_REQUEST" "$STOP_REQUEST.saved"
  [[ -n "${JOB_END_S:-}" ]] || return 0
  STOP_DEADLINE_S=$((JOB_END_S - ${SAVE_LEAD_S[$stage]:-${SAVE_BEFORE_LIMIT_S:-2700}}))
  ((SECONDS < STOP_DEADLINE_S)) ||
    requeue_job "stage $stage: $(time_left_s)s left, less than the ${SAVE_LEAD_S[$stage]:-?}s a step and its save take"
}

# Ends this job so that it runs again from the start (stages are idempotent: the next run resumes): the EXIT trap stops
# the trainer and Ray everywhere, then requeues the job (requeue_this_job, launch/lib/ray_slurm.sh). A job that has done
# nothing yet fails instead: its successor would start with the same time and do nothing either.
requeue_job() {
  in_slurm_job || die "$1; outside Slurm nothing requeues: run the same command again to resume"
  [[ "${JOB_MADE_PROGRESS:-0}" == 1 ]] ||
    die "$1, and this job has not trained or finished anything yet: its time limit (--time) leaves too little after the start-up; raise --time (the preflight's \"time limit\" line)."
  REQUEUE_REASON=$1
  exit 0
}

# Trains one stage from MODEL (empty: the config's), resuming from its latest checkpoint if any.
train_stage() {
  local stage=$1 stage_dir=$2 model=$3
  shift 3
  local ckpt_dir=$stage_dir/checkpoints keep_best=1
  mkdir -p "$ckpt_dir"
  [[ -z "${RESCORE_CONFIG[$stage]:-}" ]] || keep_best=$RESCORE_TOP_K
  EXTRA_OVERRIDES=(trainer.resume_mode=auto trainer.max_actor_ckpt_to_keep=null "${OFFLINE_OVERRIDES[@]}")
  # Validation before training scores the starting model: once per stage, and not for a stage whose starting model
  # the previous stage's selection scored already (30-60 minutes of idle GPUs each time, configs/README.md).
  if [[ -s "$ckpt_dir/latest_checkpointed_iteration.txt" ]]; then
    log "stage $stage: resuming from global_step_$(cat "$ckpt_dir/latest_checkpointed_iteration.txt") (no validation before training)"
    EXTRA_OVERRIDES+=(trainer.val_before_train=false)
  elif [[ "$stage" != "${STAGE_LIST[0]}" ]]; then
    log "stage $stage: starting from the model the selection of the previous stage scored (no validation before training)"
    EXTRA_OVERRIDES+=(trainer.val_before_train=false)
  else
    log "stage $stage: starting"
  fi
  # Retention while training; the EXIT trap stops it if the job ends first.
  "${PRUNE[@]}" "$ckpt_dir" --keep-last "$KEEP_LAST_CHECKPOINTS" --keep-best "$keep_best" --every "$PRUNE_EVERY_S" \
    >>"$LOG_DIR/prune_$stage.log" 2>&1 &
  local pruner=$! status=0
  HELPER_PIDS+=("$pruner")
  [[ -z "$model" ]] || EXTRA_OVERRIDES+=("actor_rollout_ref.model.path=$model")
  EXTRA_OVERRIDES+=("${TRAINING_OVERRIDES[@]}")
  [[ -z "$SOLVED_BEFORE" ]] || EXTRA_OVERRIDES+=("nouscoder.online_filter.earlier_stage_solved=$SOLVED_BEFORE")
  arm_stop_request "$stage"
  run_trainer "$stage" "$ckpt_dir" "$stage" "$LOG_DIR/$stage.log" "$@" || status=$?
  kill -TERM "$pruner" 2>/dev/null || true
  wait "$pruner" 2>/dev/null || true
  [[ "$status" != 0 ]] || JOB_MADE_PROGRESS=1
  if [[ "$status" == 0 && -s "$STOP_REQUEST.saved" ]]; then
    log "stage $stage: saved global_step_$(cat "$STOP_REQUEST.saved") and stopped, $(time_left_s)s before the job's time limit"
    requeue_job "stage $stage stopped for the time limit"
  fi
  STOP_REQUEST='' STOP_DEADLINE_S=''
  [[ "$status" != 124 ]] || die "stage $stage: stopped by the progress watchdog (above; diagnostics in $LOG_DIR/stall_$stage/); a queued retry or the same command resubmitted resumes from the latest checkpoint. Log: $LOG_DIR/$stage.log"
  [[ "$status" == 0 ]] || die "stage $stage: trainer failed (exit $status); resubmit the same command to resume from the latest checkpoint. Log: $LOG_DIR/$stage.log"
  "${PRUNE[@]}" "$ckpt_dir" --keep-last "$KEEP_LAST_CHECKPOINTS" --keep-best "$keep_best" >>"$LOG_DIR/prune_$stage.log" 2>&1 ||
    log "WARNING: stage $stage: final retention pass failed, see $LOG_DIR/prune_$stage.log"
  touch "$stage_dir/TRAINED"
  log "stage $stage: training finished"
}

# MicroCoder's diversity-determined temperature (section 2.4): the first model sampled on the head node's GPUs at each
# candidate temperature, the lowest whose within-group diversity reaches the threshold becomes every training stage's
# actor_rollout_ref.rollout.temperature. Once per run: a resubmission reads RUN_DIR/pick_temperature/report.json.
pick_temperature() {
  local out=$RUN_DIR/pick_temperature picked
  mkdir -p "$out"
  if [[ ! -s "$out/report.json" ]]; then
    log "pick temperature: sampling $FIRST_MODEL on ${NODES[0]}: ${PICK[*]} ${PICK_ARGS[*]}"
    run_on_node "${NODES[0]}" "${PICK[@]}" --model "$FIRST_MODEL" --problems "$TRAIN_FILES" --out "$out/report.json.tmp" \
      "${PICK_ARGS[@]}" 2>&1 | tee -a "$LOG_DIR/pick_temperature.log" ||
      die "pick temperature failed; see $LOG_DIR/pick_temperature.log (or set PICK_TEMPERATURE=0)."
    mv "$out/report.json.tmp" "$out/report.json"
  fi
  picked=$("${HOST_PYTHON[@]}" -c 'import json, sys; t = json.load(open(sys.argv[1]))["recommended_temperature"]; print("" if t is None else t)' "$out/report.json") ||
    die "pick temperature: $out/report.json is unreadable; delete it to pick again."
  if [[ -z "$picked" ]]; then
    log "WARNING: pick temperature: no candidate reached the threshold ($out/report.json): the configs' temperature is kept"
    return 0
  fi
  TRAINING_OVERRIDES+=("actor_rollout_ref.rollout.temperature=$picked")
  log "pick temperature: every training stage samples at $picked ($out/report.json)"
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
  drop_unselected_optimizer_shards "$stage" "$stage_dir/checkpoints" "$SELECTED"
  record_solved_problems "$stage" "$stage_dir" "$SELECTED"
  printf '%s\n' "$SELECTED" >"$stage_dir/best_model.tmp"
  mv "$stage_dir/best_model.tmp" "$stage_dir/best_model"
  log "stage $stage: best model $SELECTED"
}

# The online filter's state of the selected checkpoint (its solved problems and the earlier stages'), which every
# later stage starts with (nouscoder.online_filter.earlier_stage_solved; configs/README.md "Stages hand over"):
# RUN_DIR/<stage>/solved_problems.json, absent when the stage ran without the online filter.
record_solved_problems() {
  local stage=$1 stage_dir=$2 selected=$3 state
  [[ "$selected" =~ global_step_([0-9]+) ]] || return 0
  state=$stage_dir/checkpoints/global_step_${BASH_REMATCH[1]}/nouscoder_online_filter.json
  if [[ -s "$state" ]]; then
    cp "$state" "$stage_dir/solved_problems.json.tmp" && mv "$stage_dir/solved_problems.json.tmp" "$stage_dir/solved_problems.json"
    log "stage $stage: the problems solved up to global_step_${BASH_REMATCH[1]} are left out of the later stages ($stage_dir/solved_problems.json)"
  fi
}

# Once a stage's model is chosen, nothing resumes the stage's other checkpoints: their optimizer shards (2/3 of a
# checkpoint) go, their model shards stay (they can still be merged and evaluated). The selected one stays whole.
drop_unselected_optimizer_shards() {
  local stage=$1 ckpt_dir=$2 selected=$3
  if [[ ! "$selected" =~ global_step_([0-9]+) ]]; then
    log "stage $stage: the selected model $selected names no global_step_N; optimizer shards kept"
    return 0
  fi
  "${PRUNE[@]}" "$ckpt_dir" --drop-optimizers-except "${BASH_REMATCH[1]}" \
    >>"$LOG_DIR/prune_$stage.log" 2>&1 || log "WARNING: stage $stage: dropping the optimizer shards failed, see $LOG_DIR/prune_$stage.log"
}

# The final evaluation's benchmarks as NAME=PARQUET words: EVAL_BENCHMARKS, else EVAL_DATA (named by its manifest).
eval_benchmarks() {
  local item
  if [[ -z "${EVAL_BENCHMARKS:-}" ]]; then
    printf '%s\n' "$EVAL_DATA"
    return 0
  fi
  for item in $EVAL_BENCHMARKS; do
    [[ "$item" == *=* ]] || item="$item=$EVAL_BENCHMARK_DIR/$item.parquet"
    printf '%s\n' "$item"
  done
}

# One validation-only run of EVAL_CONFIG on PARQUET in OUT (its generations dumped there), skipped when its score is
# there already.
run_eval_benchmark() {
  local model=$1 parquet=$2 out=$3 name=$4 score
  shift 4
  if [[ -s "$out/score" ]]; then
    log "evaluation $name: validated earlier ($(cat "$out/score"))"
    return 0
  fi
  log "evaluation $name of $model with $EVAL_CONFIG on all $NNODES node(s): $parquet"
  EXTRA_OVERRIDES=("actor_rollout_ref.model.path=$model" "data.val_files=$parquet" "trainer.validation_data_dir=$out/generations")
  run_trainer "$EVAL_CONFIG" "$out" "$name" "$LOG_DIR/${name/final_eval/eval}.log" "$@" ||
    die "evaluation $name failed; resubmit to retry it (training is kept). Log: $LOG_DIR/${name/final_eval/eval}.log"
  score=$("${RESCORE_CMD[@]}" score "$out") ||
    die "evaluation $name: no validation score in $out/metrics.jsonl; see $LOG_DIR/${name/final_eval/eval}.log."
  printf '%s\n' "$score" >"$out/score"
  log "evaluation $name finished: $score (generations in $out/generations)"
}

# verl's generation dumps -> the pass@k report of the single-node path (recipe.nouscoder.eval.verl_dump, eval_lcb):
# RUN_DIR/final_eval/report/{results.json, report.md, plots}, every sample graded again by the reward's grader here.
write_eval_report() {
  local model=$1 report=$2
  shift 2
  local -a dumps=() data=() names=() contests=()
  local item
  while read -r item; do
    data+=("$item")
    [[ "$item" == *=* ]] && names+=("${item%%=*}") || names+=(final_eval)
  done < <(eval_benchmarks)
  for item in "${names[@]}"; do
    if [[ "$item" == final_eval ]]; then dumps+=("$RUN_DIR/final_eval/generations"); else dumps+=("$RUN_DIR/final_eval/$item/generations"); fi
  done
  local contest_file=${EVAL_CODEFORCES_CONTESTS:-$EVAL_BENCHMARK_DIR/codeforces_contests.json}
  [[ ! -s "$contest_file" ]] || contests=(--codeforces-contests "$contest_file")
  mkdir -p "$report"
  log "evaluation report: verl's dumps -> $report/completions.jsonl -> pass@k report (recipe.nouscoder.eval.eval_lcb)"
  "${HOST_PYTHON[@]}" -m recipe.nouscoder.eval.verl_dump --generations "${dumps[@]}" --data "${data[@]#*=}" \
    --out "$report/completions.jsonl" --config-name "$EVAL_CONFIG" "actor_rollout_ref.model.path=$model" "$@" \
    >>"$LOG_DIR/eval_report.log" 2>&1 || die "evaluation report: converting verl's dump failed; see $LOG_DIR/eval_report.log."
  "${HOST_PYTHON[@]}" -m recipe.nouscoder.eval.eval_lcb --completions "$report/completions.jsonl" \
    --completions-settings "$report/completions.settings.json" --data "${data[@]}" --out "$report" "${contests[@]}" \
    >>"$LOG_DIR/eval_report.log" 2>&1 || die "evaluation report: eval_lcb failed; see $LOG_DIR/eval_report.log."
  log "evaluation report: $report/report.md, $report/results.json"
}

run_final_eval() {
  local model=$1 out=$RUN_DIR/final_eval item name
  shift
  if [[ "$RUN_EVAL" != 1 ]]; then
    log "evaluation: skipped (RUN_EVAL=$RUN_EVAL)"
    return 0
  fi
  if [[ -f "$out/DONE" ]]; then
    log "evaluation: finished earlier, report in $out/report ($(cat "$out/DONE"))"
    return 0
  fi
  while read -r item; do
    if [[ "$item" == *=* ]]; then
      name=${item%%=*}
      run_eval_benchmark "$model" "${item#*=}" "$out/$name" "final_eval_$name" "$@"
    else
      run_eval_benchmark "$model" "$item" "$out" final_eval "$@"
    fi
  done < <(eval_benchmarks)
  write_eval_report "$model" "$out/report" "$@"
  local -a scores=()
  for item in "$out/score" "$out"/*/score; do
    [[ ! -s "$item" ]] || scores+=("$(cat "$item")")
  done
  (IFS=';' && printf '%s\n' "${scores[*]}") >"$out/DONE"
  log "evaluation finished: $(cat "$out/DONE") (report: $out/report/report.md)"
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
  if [[ ( ("$RUN_EVAL" == 1 && -z "${EVAL_BENCHMARKS:-}") || ${#RESCORE_CONFIG[@]} -gt 0) && ! -e "$EVAL_DATA" ]]; then
    die "EVAL_DATA=$EVAL_DATA does not exist: build the LiveCodeBench test split (data_prep), set EVAL_DATA, or set RUN_EVAL=0 RESCORE=."
  fi
  local benchmark
  if [[ "$RUN_EVAL" == 1 && -n "${EVAL_BENCHMARKS:-}" ]]; then
    while read -r benchmark; do
      [[ -e "${benchmark#*=}" ]] ||
        die "EVAL_BENCHMARKS: ${benchmark#*=} does not exist: build it (python -m data_prep.build_benchmarks --out $EVAL_BENCHMARK_DIR), set EVAL_BENCHMARK_DIR, or name it NAME=PARQUET."
    done < <(eval_benchmarks)
  fi
  mkdir -p "$LOG_DIR"
  log "run $RUN_NAME in $RUN_DIR: stages $STAGES; job ${SLURM_JOB_ID:-local}; logs in $LOG_DIR; bash $BASH_VERSION"
  LAUNCHER_OVERRIDES=()
  if [[ -n "${WANDB_API_KEY:-}" ]]; then
    LAUNCHER_OVERRIDES+=("trainer.logger=[console,file,wandb]")
    export WANDB_DIR=${WANDB_DIR:-$RUN_DIR/wandb}
    mkdir -p "$WANDB_DIR"
  fi
  [[ -z "${WANDB_PROJECT:-}" ]] || LAUNCHER_OVERRIDES+=("trainer.project_name=$WANDB_PROJECT")
  export BOM_MANIFEST=$LOG_DIR/bill_of_materials.json SITE_MANIFEST=$LOG_DIR/site_check.json
  resolve_nodes
  resolve_gpus_per_node
  resolve_time_limit
  run_preflight "$@"
  export SITE_BACKEND=${SITE[backend]:-gloo} SITE_CUPY=${SITE[cupy]:-0}
  [[ -z "$model" ]] || FIRST_MODEL=$model
  offline_filter_overrides
  export_training_env
  detect_head_network
  log "nodes (${#NODES[@]}): ${NODES[*]}; $GPUS_PER_NODE GPU(s) per node; head ${NODES[0]} at $HEAD_IP on $HEAD_IFACE"
  check_nodes "$LOG_DIR"
  if [[ "${CHECK_ONLY:-0}" == 1 ]]; then
    log "CHECK_ONLY=1: every check passed on ${NODES[*]}; stopping before Ray"
    return 0
  fi
  arm_stop_trap
  [[ "${PICK_TEMPERATURE:-0}" != 1 ]] || pick_temperature
  start_ray_cluster "$LOG_DIR"
  [[ "$OFFLINE_FILTER" != build ]] || build_offline_filter "$@"
  SOLVED_BEFORE=''
  for stage in $STAGES; do
    run_stage "$stage" "$model" "$@"
    model=$(cat "$RUN_DIR/$stage/best_model")
    [[ ! -s "$RUN_DIR/$stage/solved_problems.json" ]] || SOLVED_BEFORE=$RUN_DIR/$stage/solved_problems.json
  done
  run_final_eval "$model" "$@"
  log "run $RUN_NAME complete: final model $model"
  [[ "${WANDB_MODE:-}" != offline || -z "${WANDB_API_KEY:-}" ]] || log "wandb ran offline: $(wandb_sync_hint)"
}

main "$@"

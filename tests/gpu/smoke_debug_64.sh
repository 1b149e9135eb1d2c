#!/usr/bin/env bash
# GPU smoke test: two training steps of the debug_64 config with a tiny model on ONE GPU node, then checkpoint
# selection and merge. Needs: CUDA GPUs, vLLM and flash-attn (pip install -e '.[gpu]'), and the model weights
# (a local directory, or a hub id when the node can download). Never run by CI; takes a few minutes.
#
# Usage: bash tests/gpu/smoke_debug_64.sh [extra hydra overrides...]
# Knobs (environment variables; defaults in brackets):
#   MODEL    tiny chat model, hub id or local path [Qwen/Qwen2.5-0.5B-Instruct]
#   NGPUS    GPUs of this node to use [all that nvidia-smi lists]
#   OUT      scratch directory [./smoke_debug_64]
#
# What it checks: the composed debug_64 config (DAPO loss, grpo_plus, TIS, nouscoder_sync trainer) runs two steps
# end to end through verl (vLLM rollout, reward_fns grading, FSDP update), writes metrics.jsonl and a checkpoint in
# RUN_DIR, and select_checkpoint merges that checkpoint into a Hugging Face model directory.
set -euo pipefail

PYTHON=${PYTHON:-python}
MODEL=${MODEL:-Qwen/Qwen2.5-0.5B-Instruct}
if [[ -z "${NGPUS:-}" ]]; then
  if ! command -v nvidia-smi >/dev/null; then
    echo "smoke_debug_64: no GPU here (nvidia-smi is not installed); this test needs CUDA GPUs and vLLM." >&2
    echo "  On a CPU-only machine the same loop runs as: python -m recipe.nouscoder.main --config-name debug_cpu" >&2
    exit 1
  fi
  NGPUS=$(nvidia-smi --list-gpus 2>/dev/null | wc -l)
fi
OUT=$(mkdir -p "${OUT:-smoke_debug_64}" && cd "${OUT:-smoke_debug_64}" && pwd)
RUN_DIR=$OUT/checkpoints

if [[ "$NGPUS" -lt 1 ]]; then
  echo "smoke_debug_64: no GPU found (nvidia-smi lists none); this test needs CUDA GPUs and vLLM." >&2
  echo "  On a CPU-only machine the same loop runs as: python -m recipe.nouscoder.main --config-name debug_cpu" >&2
  exit 1
fi
"$PYTHON" -c "import vllm" || { echo "smoke_debug_64: vLLM is not installed (pip install -e '.[gpu]')" >&2; exit 1; }

# Tiny data: the bundled sample problems in the verl parquet layout (train + LiveCodeBench-style test split).
"$PYTHON" -m data_prep.build_deepcoder_mix --from sample --out "$OUT/data"

"$PYTHON" -m recipe.nouscoder.main --config-name debug_64 \
  actor_rollout_ref.model.path="$MODEL" \
  data.train_files="$OUT/data/train.parquet" \
  data.val_files="$OUT/data/test.parquet" \
  data.max_prompt_length=2048 \
  data.max_response_length=1024 \
  data.train_batch_size=8 \
  actor_rollout_ref.actor.ppo_mini_batch_size=2 \
  actor_rollout_ref.rollout.n=4 \
  actor_rollout_ref.rollout.val_kwargs.n=1 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.4 \
  actor_rollout_ref.rollout.max_num_seqs=32 \
  actor_rollout_ref.actor.ulysses_sequence_parallel_size=1 \
  actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192 \
  actor_rollout_ref.actor.fsdp_config.optimizer_offload=false \
  trainer.n_gpus_per_node="$NGPUS" \
  trainer.total_training_steps=2 \
  trainer.save_freq=2 \
  trainer.test_freq=2 \
  trainer.val_before_train=false \
  trainer.default_local_dir="$RUN_DIR" \
  reward.num_workers=2 \
  "$@"

test -s "$RUN_DIR/metrics.jsonl" || { echo "smoke_debug_64: no $RUN_DIR/metrics.jsonl" >&2; exit 1; }
test "$(cat "$RUN_DIR/latest_checkpointed_iteration.txt")" = 2 || { echo "smoke_debug_64: no step-2 checkpoint" >&2; exit 1; }
MERGED=$("$PYTHON" -m recipe.nouscoder.selection.select_checkpoint "$RUN_DIR" --metric '^val-core/.*/acc/mean@1$' | tail -n1)
test -s "$MERGED/config.json" || { echo "smoke_debug_64: merge produced no model in $MERGED" >&2; exit 1; }
echo "smoke_debug_64: OK (2 steps, checkpoint merged to $MERGED)"

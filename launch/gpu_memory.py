"""Per-GPU memory of each role of a stage config, from the model's architecture and the GPU's capacity.

The arithmetic of configs/README.md "Memory arithmetic" (Qwen3-14B on H100s is its worked case), for any model
(`model_spec.py`) and GPU (`gpu_spec.py`); P parameters, h hidden, N layers, I MLP width, V vocabulary:

- trainer states: 16 B per parameter (fp32 weights 4 + gradients 4 + Adam's two moments 8) over the GPUs of one
  FSDP shard group (`fsdp_size`, else every trainer GPU); `param_offload` moves the 8 B of weights and gradients,
  `optimizer_offload` the 8 B of Adam, to the host;
- training pass: states + activations of `ppo_max_token_len_per_gpu` tokens, per token (gradient checkpointing) the
  layer inputs N h x 2 B, one layer recomputed (3 I + 5 h) x 2 B and the logits with their gradient V x (2 + 4) B;
  + two gathered bf16 layers and the embedding / LM head (FSDP prefetch) + SLACK_BYTES (NCCL, allocator);
- log-prob pass: states + bf16 logits of `log_prob_max_token_len_per_gpu` tokens + the entropy's fp32 softmax (over
  chunks of ENTROPY_CHUNK tokens when `entropy_from_logits_with_chunking`) + the gathered layers + slack;
- the separate-async trainer's rank 0 also holds the NCCL weight-sync engine's send and receive buckets (verl's
  `checkpoint_engine.update_weights_bucket_megabytes`, allocated through cupy) for the whole run with verl's `nccl`
  backend, which never gives cupy's pool back; with `nouscoder_nccl` (the configs' backend,
  recipe/nouscoder/training/nccl_release.py) only during the sync, between the passes, so not in them;
- rollout GPU: vLLM's `gpu_memory_utilization` share (weights / TP, VLLM_OVERHEAD_BYTES of activations and CUDA
  graphs, the rest KV cache) + the weight sync's buckets (standalone pool) + NCCL communicators and the CUDA context;
  a colocated GPU holds the trainer states beside vLLM's share while it generates;
- KV cache of a replica: TP x (utilisation x capacity - weights / TP - overhead) / KV bytes per token, which must
  hold at least one sequence of `max_model_len` tokens (vLLM refuses to start otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_spec import GPUSpec
from model_spec import BF16_BYTES, ModelSpec
from omegaconf import DictConfig

STATE_BYTES_PER_PARAM = 16
OFFLOADED_BYTES = {"param_offload": 8, "optimizer_offload": 8}
SLACK_BYTES = 5e9  # NCCL buffers and allocator fragmentation on a trainer GPU (assumption)
VLLM_OVERHEAD_BYTES = 4e9  # vLLM's activations and CUDA graphs at max_num_batched_tokens 16,384 (assumption)
CONTEXT_BYTES = 0.5e9  # a CUDA context per process
NCCL_COMMUNICATOR_BYTES = 0.5e9
ENTROPY_CHUNK = 2048  # verl's chunk of entropy_from_logits_with_chunking
HEADROOM = 0.95  # an estimate above this share of the GPU's memory fails (the estimate is not exact)


@dataclass(frozen=True)
class RoleMemory:
    """One role's peak bytes on one GPU, with its parts (for the report)."""

    role: str
    parts: dict[str, float]
    capacity: float

    @property
    def total(self) -> float:
        return sum(self.parts.values())

    @property
    def fits(self) -> bool:
        return self.total <= HEADROOM * self.capacity

    def describe(self) -> str:
        parts = " + ".join(f"{name} {value / 1e9:.1f}" for name, value in self.parts.items())
        return f"{self.role}: ~{self.total / 1e9:.0f} GB of {self.capacity / 1e9:.0f} ({parts})"


def trainer_gpus(config: DictConfig) -> int:
    return int(config.trainer.nnodes) * int(config.trainer.n_gpus_per_node)


def shard_group(config: DictConfig) -> int:
    """GPUs that shard one copy of the training state: fsdp_size (HYBRID_SHARD) or every trainer GPU."""
    gpus = trainer_gpus(config)
    fsdp_size = int(config.actor_rollout_ref.actor.fsdp_config.get("fsdp_size", -1))
    return fsdp_size if 0 < fsdp_size < gpus else gpus


def state_bytes(config: DictConfig, model: ModelSpec) -> float:
    fsdp = config.actor_rollout_ref.actor.fsdp_config
    per_param = STATE_BYTES_PER_PARAM - sum(size for key, size in OFFLOADED_BYTES.items() if fsdp.get(key))
    return per_param * model.params / shard_group(config)


def activation_bytes_per_token(model: ModelSpec) -> float:
    layer_inputs = model.layers * model.hidden * BF16_BYTES
    recomputed_layer = (3 * model.intermediate + 5 * model.hidden) * BF16_BYTES
    return layer_inputs + recomputed_layer + model.vocab * (2 + 4)


def gathered_bytes(model: ModelSpec) -> float:
    return (2 * model.layer_params + model.embedding_params) * BF16_BYTES


RELEASING_BACKEND = "nouscoder_nccl"  # recipe/nouscoder/training/nccl_release.py BACKEND: buckets freed after each sync


def sync_bucket_bytes(config: DictConfig) -> float:
    """The NCCL weight-sync engine's send + receive buckets (none for verl's in-process `naive` hand-over)."""
    engine = config.actor_rollout_ref.rollout.checkpoint_engine
    return 0.0 if engine.backend == "naive" else 2 * int(engine.update_weights_bucket_megabytes) * 2**20


def is_separate_async(config: DictConfig) -> bool:
    return str(config.trainer.v1.trainer_mode).endswith("separate_async")


def trainer_memory(config: DictConfig, model: ModelSpec, gpu: GPUSpec) -> list[RoleMemory]:
    """The trainer's training pass and log-prob pass (rank 0 of a separate-async trainer: with the sync buckets)."""
    actor, rollout = config.actor_rollout_ref.actor, config.actor_rollout_ref.rollout
    common = {"states": state_bytes(config, model), "gathered layers": gathered_bytes(model), "slack": SLACK_BYTES}
    if is_separate_async(config) and config.actor_rollout_ref.rollout.checkpoint_engine.backend != RELEASING_BACKEND:
        common["weight-sync buckets (rank 0)"] = sync_bucket_bytes(config)
    tokens = int(actor.ppo_max_token_len_per_gpu)
    log_prob_tokens = int(rollout.log_prob_max_token_len_per_gpu)
    chunked = bool(actor.fsdp_config.get("entropy_from_logits_with_chunking", False))
    entropy_tokens = min(ENTROPY_CHUNK, log_prob_tokens) if chunked else log_prob_tokens
    return [
        RoleMemory(
            "trainer, training pass",
            {**common, "activations": tokens * activation_bytes_per_token(model)},
            gpu.memory_bytes,
        ),
        RoleMemory(
            "trainer, log-prob pass",
            {
                **common,
                "logits": log_prob_tokens * model.vocab * BF16_BYTES,
                "entropy softmax": entropy_tokens * model.vocab * 4,
            },
            gpu.memory_bytes,
        ),
    ]


def kv_tokens_per_replica(model: ModelSpec, gpu: GPUSpec, tensor_parallel: int, utilisation: float) -> float:
    free = utilisation * gpu.memory_bytes - model.weight_bytes / tensor_parallel - VLLM_OVERHEAD_BYTES
    return tensor_parallel * free / model.kv_bytes_per_token


def rollout_memory(config: DictConfig, model: ModelSpec, gpu: GPUSpec) -> RoleMemory:
    """A vLLM GPU while it generates: a standalone pool's, or a colocated GPU with the trainer's states beside."""
    rollout = config.actor_rollout_ref.rollout
    share = float(rollout.gpu_memory_utilization) * gpu.memory_bytes
    tensor_parallel = int(rollout.tensor_model_parallel_size)
    parts = {
        "vLLM weights": model.weight_bytes / tensor_parallel,
        "vLLM activations": VLLM_OVERHEAD_BYTES,
        "KV cache": max(0.0, share - model.weight_bytes / tensor_parallel - VLLM_OVERHEAD_BYTES),
        "CUDA context": CONTEXT_BYTES,
    }
    if is_separate_async(config):
        role = "rollout (standalone)"
        parts |= {"weight-sync buckets": sync_bucket_bytes(config), "NCCL communicators": NCCL_COMMUNICATOR_BYTES}
    else:
        role = "colocated, generating"
        parts["trainer states"] = state_bytes(config, model)
    return RoleMemory(role, parts, gpu.memory_bytes)


def memory_problems(config: DictConfig, model: ModelSpec, gpu: GPUSpec, name: str) -> list[str]:
    """What does not fit, each with the knobs that make it fit (empty when everything does)."""
    rollout = config.actor_rollout_ref.rollout
    problems = []
    roles = [rollout_memory(config, model, gpu)]
    if not config.trainer.get("val_only", False):
        roles = trainer_memory(config, model, gpu) + roles
    for role in roles:
        if role.fits:
            continue
        if role.role.startswith("trainer"):
            knobs = (
                "actor_rollout_ref.actor.fsdp_config.fsdp_size (shard over more GPUs), "
                "actor_rollout_ref.actor.fsdp_config.optimizer_offload=true, or a smaller "
                "actor_rollout_ref.actor.ppo_max_token_len_per_gpu / rollout.log_prob_max_token_len_per_gpu"
            )
        elif role.role.startswith("colocated"):
            knobs = "actor_rollout_ref.rollout.gpu_memory_utilization, or more GPUs (states shard over all of them)"
        else:
            knobs = "actor_rollout_ref.rollout.gpu_memory_utilization (~0.85 at most beside the sync buckets)"
        problems.append(f"{name}: {role.describe()} is over {HEADROOM:.0%} of the GPU's memory; lower it with {knobs}")
    tensor_parallel = int(rollout.tensor_model_parallel_size)
    kv_tokens = kv_tokens_per_replica(model, gpu, tensor_parallel, float(rollout.gpu_memory_utilization))
    if kv_tokens < int(rollout.max_model_len):
        problems.append(
            f"{name}: a vLLM replica of {tensor_parallel} GPU(s) has KV cache for ~{max(kv_tokens, 0):,.0f} tokens, "
            f"less than one sequence of actor_rollout_ref.rollout.max_model_len={int(rollout.max_model_len):,} "
            f"({model.name}: {model.weight_bytes / 1e9:.1f} GB of weights, {model.kv_bytes_per_token / 1024:.0f} KiB "
            "of KV per token): raise actor_rollout_ref.rollout.tensor_model_parallel_size or "
            "actor_rollout_ref.rollout.gpu_memory_utilization"
        )
    return problems

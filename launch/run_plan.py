"""The run plan of the NousCoder chain: how many steps each stage trains, how long a step takes, what it all costs.

One knob, the budget in GPU-hours of the whole chain (default: NousCoder's 4 days x 48 GPUs = 4,608), and the
assumptions below, each stated with its source or marked as a choice (configs/README.md, "Run plan", prints the
same numbers: `python launch/run_plan.py --table`). From the composed stage configs (batch, group size, response
budget, pools, tensor parallelism, vLLM memory, in-run validation n) it derives, per training stage:

- step time = max(trainer compute, rollout generation) + weight sync (PipelineRL overlaps the two);
- trainer compute = sequences x 5 forward passes (forward, recomputed forward, backward = 2, old log-probs) of
  2 P L + 2 layers L^2 d FLOPs, at MFU of the trainer GPUs' peak;
- rollout generation = generated tokens / (replicas x decode tokens/s), decode memory-bound: each step of a replica
  reads its weight shard and the KV cache in use; concurrency = min(max_num_seqs, KV capacity / mean length);
- `save_freq` = the most steps in MAX_LOST_S (a kill loses at most ~1 hour of steps);
- `test_freq` = the smallest multiple of save_freq that keeps in-run validation under VALIDATION_SHARE of the time;
- steps = what the stage's share of the budget holds, after the fixed costs (offline filter stage 0, the re-scoring
  of the 32k candidates at 40k, the final evaluation at 80k), saves and validations.

    python launch/run_plan.py --table                     # the plan for the default budget on 48 GPUs
    python launch/run_plan.py --budget-gpu-hours 3000 --table
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from omegaconf import DictConfig

from recipe.nouscoder.configs import compose_experiment

# --- Qwen3-14B (its config.json): 40 layers, 40 query heads of 128 (attention width 5,120), 8 KV heads of 128.
PARAMS = 14.8e9
LAYERS = 40
ATTENTION_WIDTH = 40 * 128
KV_BYTES_PER_TOKEN = 2 * LAYERS * 8 * 128 * 2  # K and V, 8 KV heads x 128, bf16: 160 KiB
WEIGHT_BYTES = PARAMS * 2  # bf16, as vLLM holds them
CHECKPOINT_BYTES_PER_PARAM = 12  # verl's FSDP checkpoint: fp32 weights 4 B + Adam's two fp32 moments 8 B
# --- H100 SXM 80 GB (NVIDIA datasheet): 989 TFLOP/s dense bf16, 3.35 TB/s HBM3.
PEAK_FLOPS = 989e12
GPU_MEMORY_BYTES = 80e9
HBM_BYTES_PER_S = 3.0e12  # ~90% of the 3.35 TB/s peak is what a decode step's streaming reads reach (assumption)
# --- assumptions (choices; configs/README.md "Run plan" says why each)
MFU = 0.35  # trainer model-FLOPs utilisation, recomputation counted, long sequences with Ulysses sp=4
FORWARD_PASSES = 5  # training forward + recomputed forward (gradient checkpointing) + backward (2) + old log-probs
VLLM_OVERHEAD_BYTES = 4e9  # activations and CUDA graphs of vLLM at max_num_batched_tokens 16,384, per GPU
MEAN_RESPONSE_FRACTION = 0.5  # mean response = half the budget: the blog's lengths "quickly saturate" the window
MEAN_PROMPT_TOKENS = 700  # LiveCodeBench-template prompts of the mix (budget 2,048)
DROPPED_GROUP_FRACTION = 0.3  # groups dynamic sampling drops and regenerates, after the offline filter
WEIGHT_SYNC_S = 30.0  # one NCCL broadcast of 29.5 GB bf16 (~1-2 s over IB) plus vLLM's pause, load and resume
CHECKPOINT_WRITE_BYTES_PER_S = 5e9  # 16 ranks writing their shards to the shared filesystem
MODEL_LOAD_S = 600.0  # a validation-only run: Ray actors, model load, vLLM start-up
MAX_LOST_S = 3600.0  # a kill (node failure, time limit, watchdog) loses at most this much training
VALIDATION_SHARE = 0.08  # in-run validation may take at most this share of a stage's time
# --- the data (NousCoder blog "Dataset", "Additional Training Tricks")
TRAIN_PROBLEMS = 24_000
LCB_V6_PROBLEMS = 454
# --- the budget: NousCoder trained "using 48 B200s over the course of four days"
DEFAULT_BUDGET_GPU_HOURS = 48 * 4 * 24
# The 32k stage's share of the training budget (choice: the blog gives no split; the 32k stage trains first and
# longest, the 40k stage continues from its best checkpoint).
STAGE_SHARES = (0.6, 0.4)
# The offline filter's generation budget (choice): a problem is dropped only if all G rollouts pass within it;
# one whose rollouts need more stays in training (conservative), and stage 0 costs half of a 32k pass.
OFFLINE_FILTER_RESPONSE_TOKENS = 16_384


@dataclass(frozen=True)
class Generation:
    """A vLLM pool: `replicas` of `tensor_parallel` GPUs each at `memory_utilization`, capped at `max_num_seqs`."""

    replicas: int
    tensor_parallel: int
    memory_utilization: float
    max_num_seqs: int

    @property
    def kv_tokens_per_replica(self) -> float:
        free = self.memory_utilization * GPU_MEMORY_BYTES - WEIGHT_BYTES / self.tensor_parallel - VLLM_OVERHEAD_BYTES
        return self.tensor_parallel * free / KV_BYTES_PER_TOKEN

    def concurrency(self, mean_tokens: float) -> float:
        return min(self.max_num_seqs, self.kv_tokens_per_replica / mean_tokens)

    def decode_step_s(self, mean_tokens: float) -> float:
        """One decode step of a replica: each GPU reads its weight shard and its part of the KV cache in use."""
        kv_bytes = self.concurrency(mean_tokens) * mean_tokens * KV_BYTES_PER_TOKEN / self.tensor_parallel
        return (WEIGHT_BYTES / self.tensor_parallel + kv_bytes) / HBM_BYTES_PER_S

    def tokens_per_s_per_replica(self, mean_tokens: float) -> float:
        return self.concurrency(mean_tokens) / self.decode_step_s(mean_tokens)

    def generation_s(self, sequences: float, response_budget: int, batches: int = 1) -> float:
        """Time to generate `sequences` responses of mean length, plus one tail per batch: the batch's longest
        response decoded alone on its replica (a step then reads the weight shard only)."""
        mean_response = MEAN_RESPONSE_FRACTION * response_budget
        rate = self.replicas * self.tokens_per_s_per_replica(MEAN_PROMPT_TOKENS + mean_response)
        tail = response_budget * WEIGHT_BYTES / self.tensor_parallel / HBM_BYTES_PER_S
        return sequences * mean_response / rate + batches * tail


def generation_pool(config: DictConfig, gpus: int) -> Generation:
    rollout = config.actor_rollout_ref.rollout
    return Generation(
        replicas=max(1, gpus // int(rollout.tensor_model_parallel_size)),  # (a smaller pool cannot hold one replica)
        tensor_parallel=int(rollout.tensor_model_parallel_size),
        memory_utilization=float(rollout.gpu_memory_utilization),
        max_num_seqs=int(rollout.max_num_seqs),
    )


def replicas(config: DictConfig) -> int:
    """How many full copies of the sharded training state the trainer's ranks hold, and save: with FSDP groups of
    `fsdp_size` GPUs among N (HYBRID_SHARD), N / fsdp_size; with full sharding, 1."""
    gpus = int(config.trainer.nnodes) * int(config.trainer.n_gpus_per_node)
    fsdp_size = int(config.actor_rollout_ref.actor.fsdp_config.get("fsdp_size", -1))
    return gpus // fsdp_size if 0 < fsdp_size < gpus else 1


def forward_flops(tokens: float) -> float:
    """FLOPs of one forward pass over a sequence: dense 2 P L plus causal attention 2 layers L^2 d."""
    return 2 * PARAMS * tokens + 2 * LAYERS * tokens**2 * ATTENTION_WIDTH


@dataclass(frozen=True)
class StageCost:
    """Per-step cost of one training stage and the cadence derived from it."""

    name: str
    sequences: int
    tokens_per_step: float
    trainer_s: float
    decode_tokens_per_s: float
    rollout_s: float
    step_s: float
    save_s: float
    validation_s: float
    save_freq: int
    test_freq: int

    def wall_s(self, steps: int, validate_first: bool) -> float:
        """`steps` steps with their saves and validations (verl also saves and validates at the last step)."""
        saves = math.ceil(steps / self.save_freq)
        validations = math.ceil(steps / self.test_freq) + int(validate_first)
        return steps * self.step_s + saves * self.save_s + validations * self.validation_s


def stage_cost(name: str, config: DictConfig) -> StageCost:
    """The step time and cadence of a separate-async training stage (trainer pool + standalone rollout pool)."""
    rollout = config.actor_rollout_ref.rollout
    trainer_gpus = int(config.trainer.nnodes) * int(config.trainer.n_gpus_per_node)
    pool = generation_pool(config, int(rollout.nnodes) * int(rollout.n_gpus_per_node))
    budget = int(config.data.max_response_length)
    sequences = int(config.data.train_batch_size) * int(rollout.n)
    mean_tokens = MEAN_PROMPT_TOKENS + MEAN_RESPONSE_FRACTION * budget
    trainer_s = sequences * FORWARD_PASSES * forward_flops(mean_tokens) / (trainer_gpus * PEAK_FLOPS * MFU)
    generated = sequences / (1 - DROPPED_GROUP_FRACTION)
    rollout_s = pool.generation_s(generated, budget)
    step_s = max(trainer_s, rollout_s) + WEIGHT_SYNC_S
    save_s = PARAMS * CHECKPOINT_BYTES_PER_PARAM * replicas(config) / CHECKPOINT_WRITE_BYTES_PER_S
    validation_s = pool.generation_s(LCB_V6_PROBLEMS * int(rollout.val_kwargs.n), budget)
    save_freq = max(1, int(MAX_LOST_S // step_s))
    saves_per_validation = math.ceil(validation_s / (VALIDATION_SHARE * step_s * save_freq))
    return StageCost(
        name=name,
        sequences=sequences,
        tokens_per_step=sequences * mean_tokens,
        trainer_s=trainer_s,
        decode_tokens_per_s=pool.tokens_per_s_per_replica(mean_tokens),
        rollout_s=rollout_s,
        step_s=step_s,
        save_s=save_s,
        validation_s=validation_s,
        save_freq=save_freq,
        test_freq=save_freq * saves_per_validation,
    )


def evaluation_s(config: DictConfig, gpus: int, problems: int) -> float:
    """A validation-only run on `gpus` GPUs: model load, then `problems` x val_kwargs.n generations, in batches of
    data.val_batch_size prompts (verl's default: all at once)."""
    budget = int(config.data.max_response_length)
    batches = math.ceil(problems / (config.data.get("val_batch_size") or problems))
    samples = int(config.actor_rollout_ref.rollout.val_kwargs.n)
    return MODEL_LOAD_S + generation_pool(config, gpus).generation_s(problems * samples, budget, batches)


@dataclass(frozen=True)
class Plan:
    """Steps per training stage, and the wall-clock seconds of every part of the chain, on `gpus` GPUs."""

    budget_gpu_hours: float
    gpus: int
    stages: tuple[StageCost, ...]
    steps: tuple[int, ...]
    fixed_s: dict[str, float]

    def stage_wall_s(self, index: int) -> float:
        return self.stages[index].wall_s(self.steps[index], validate_first=index == 0)

    @property
    def total_gpu_hours(self) -> float:
        walls = [self.stage_wall_s(i) for i in range(len(self.stages))] + list(self.fixed_s.values())
        return sum(walls) * self.gpus / 3600


def plan(
    stages: dict[str, DictConfig],
    rescore: DictConfig,
    final_eval: DictConfig,
    offline_filter: DictConfig | None,
    budget_gpu_hours: float = DEFAULT_BUDGET_GPU_HOURS,
    rescore_candidates: int = 3,
    train_problems: int = TRAIN_PROBLEMS,
) -> Plan:
    """The chain's plan: fixed costs first, then each training stage's share of what is left, in whole steps."""
    costs = tuple(stage_cost(name, config) for name, config in stages.items())
    gpus = int(rescore.trainer.nnodes) * int(rescore.trainer.n_gpus_per_node)
    fixed = {
        "re-scoring": rescore_candidates * evaluation_s(rescore, gpus, LCB_V6_PROBLEMS),
        "final evaluation": evaluation_s(final_eval, gpus, LCB_V6_PROBLEMS),
    }
    if offline_filter is not None:
        fixed["offline filter"] = evaluation_s(offline_filter, gpus, train_problems)
    training_s = budget_gpu_hours * 3600 / gpus - sum(fixed.values())
    if training_s <= 0:
        raise ValueError(
            f"a budget of {budget_gpu_hours:.0f} GPU-hours on {gpus} GPUs does not cover the fixed costs "
            f"({', '.join(f'{k} {v * gpus / 3600:.0f}' for k, v in fixed.items())} GPU-hours)"
        )
    shares = STAGE_SHARES if len(costs) == len(STAGE_SHARES) else (1 / len(costs),) * len(costs)
    steps = []
    for index, (cost, share) in enumerate(zip(costs, shares, strict=True)):
        count = int(share * training_s // cost.step_s)  # an upper bound: steps alone, without saves or validations
        while count > 0 and cost.wall_s(count, validate_first=index == 0) > share * training_s:
            count -= 1  # the most steps whose saves and validations (the last ones too) fit the share
        steps.append(count)
    return Plan(budget_gpu_hours, gpus, costs, tuple(steps), fixed)


def table(result: Plan) -> str:
    """The plan as the Markdown table of configs/README.md "Run plan"."""
    lines = [
        "| part | steps | tokens / step | trainer s / step | decode tok/s per replica | step (min) | "
        "save_freq / test_freq | wall (h) | GPU-days |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for index, cost in enumerate(result.stages):
        wall = result.stage_wall_s(index)
        lines.append(
            f"| `{cost.name}` | {result.steps[index]} | {cost.tokens_per_step / 1e6:.1f}M | {cost.trainer_s:.0f} | "
            f"{cost.decode_tokens_per_s:,.0f} | {cost.step_s / 60:.1f} | {cost.save_freq} / {cost.test_freq} | "
            f"{wall / 3600:.1f} | {wall * result.gpus / 86400:.1f} |"
        )
    for name, seconds in result.fixed_s.items():
        lines.append(f"| {name} | | | | | | | {seconds / 3600:.1f} | {seconds * result.gpus / 86400:.1f} |")
    total = result.total_gpu_hours
    lines.append(f"| **total** | | | | | | | **{total / result.gpus:.1f}** | **{total / 24:.1f}** |")
    return "\n".join(lines)


def default_chain(budget_gpu_hours: float = DEFAULT_BUDGET_GPU_HOURS, overrides: list[str] | None = None) -> Plan:
    """The plan of `launch/run_dapo_32k_to_40k.sh` as configured (6 nodes x 8 GPUs)."""
    extra = list(overrides or [])
    return plan(
        {name: compose_experiment(name, extra) for name in ("dapo_32k", "dapo_40k")},
        rescore=compose_experiment("eval_lcb_40k", extra),
        final_eval=compose_experiment("eval_lcb_80k", extra),
        offline_filter=compose_experiment("offline_filter", extra),
        budget_gpu_hours=budget_gpu_hours,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python launch/run_plan.py", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--budget-gpu-hours",
        type=float,
        default=DEFAULT_BUDGET_GPU_HOURS,
        help="GPU-hours of the whole chain (default: %(default).0f, NousCoder's 4 days x 48 GPUs)",
    )
    parser.add_argument("--table", action="store_true", help="print the Markdown table of configs/README.md")
    args = parser.parse_args(argv)
    result = default_chain(args.budget_gpu_hours)
    if args.table:
        print(table(result))
    for cost, steps in zip(result.stages, result.steps, strict=True):
        print(
            f"{cost.name}: trainer.total_training_steps={steps} trainer.save_freq={cost.save_freq} "
            f"trainer.test_freq={cost.test_freq}"
        )


if __name__ == "__main__":
    main()

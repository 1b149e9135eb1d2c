"""The run plan of a chain: steps per stage, step time, memory per GPU role, checkpoints and disk, fixed costs.

For the user's allocation (nodes x GPUs per node, a GPU kind: `gpu_spec.py`), the user's model (its config.json:
`model_spec.py`), a budget in GPU-hours (default NousCoder's 4 days x 48 GPUs = 4,608) and the composed stage configs
(batch, group size, response budget, pools, tensor parallelism, vLLM memory, in-run validation n), with P parameters,
N layers, attention width A (heads x head dim) and the `Assumptions` below (each stated with its source or marked
as a choice in configs/README.md "Run plan", whose worked case is Qwen3-14B on 6 x 8 H100s):

- trainer compute = sequences x FORWARD_PASSES x (2 P L + 2 N L^2 A) FLOPs / (trainer GPUs x peak x MFU), at the
  mean sequence length L = prompt + MEAN_RESPONSE_FRACTION x response budget;
- generation = generated tokens / (replicas x decode tokens/s) + one tail per batch (the longest response decoded
  alone); a decode step of a replica reads its weight shard and the KV in use at HBM_EFFICIENCY x peak bandwidth;
  concurrency = min(max_num_seqs, KV capacity / L) (`gpu_memory.kv_tokens_per_replica`); dynamic sampling
  regenerates DROPPED_GROUP_FRACTION of the groups when `algorithm.filter_groups.enable`;
- step time: separate-async (PipelineRL overlaps them) max(trainer, generation) + weight sync; synchronous
  colocated: generation + trainer + weight sync;
- `save_freq` = the most steps in MAX_LOST_S; `test_freq` = the smallest multiple of save_freq that keeps in-run
  validation under VALIDATION_SHARE of the time, lowered when a re-scored stage would validate fewer checkpoints than
  it re-scores;
- steps = what each stage's share of the budget holds after the fixed costs (stage 0, the re-scoring, the final
  evaluation: validation-only runs on every GPU), saves and validations.

`--measured` re-plans from a rehearsal report or a real run's metrics.jsonl (`rehearsal_report.py`): each assumption
is scaled by measured / predicted at the measured run's own shape (see `calibrate`), then the plan is recomputed.

    python launch/run_plan.py --table                                   # NousCoder DAPO on 6 x 8 H100s, Qwen3-14B
    python launch/run_plan.py --nodes 2 --model-config /models/Qwen3-8B/config.json --budget-gpu-hours 768 \\
        --config-overrides 'dapo_32k=context=16k' ...                   # another cluster and model
    python launch/run_plan.py --measured rehearsal/report.json          # from measurements
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from chain import Chain, ChainError, add_chain_arguments, chain_from_args, compose_chain
from disk_plan import CHECKPOINT_BYTES_PER_PARAM, disk_lines, replicas
from gpu_memory import is_separate_async, kv_tokens_per_replica, rollout_memory, trainer_gpus, trainer_memory
from gpu_spec import GPUSpec, add_gpu_arguments, gpu_from_args
from model_spec import ModelSpec, UnknownModel, add_model_arguments, model_from_args, resolve_model
from omegaconf import DictConfig
from rehearsal_report import Measurements, ReportError, read_measurements

# --- the data (NousCoder blog "Dataset"; LiveCodeBench v6 08/2024-05/2025)
TRAIN_PROBLEMS = 24_000
LCB_V6_PROBLEMS = 454
# --- the budget: NousCoder trained "using 48 B200s over the course of four days"
DEFAULT_BUDGET_GPU_HOURS = 48 * 4 * 24
# The first stage's share of the training budget when there are two (choice: no seed gives a split; the first stage
# trains first and longest, the second continues from its best checkpoint); one stage: all of it.
STAGE_SHARES = (0.6, 0.4)
FIXED_SHARE_WARNING = 0.25  # fixed costs above this share of the budget are reported (stage 0, re-scoring, eval)
MAX_NUM_SEQS_RANGE = (0.5, 1.25)  # max_num_seqs / the KV cache's room for growing sequences, without a warning


@dataclass(frozen=True)
class Assumptions:
    """What the plan assumes beyond the configs, the model and the GPU's datasheet (configs/README.md "Run plan")."""

    mfu: float = 0.35  # trainer model-FLOPs utilisation, recomputation counted, long sequences with Ulysses
    forward_passes: int = 5  # forward + recomputed forward + backward (2) + the old log-probs
    hbm_efficiency: float = 0.9  # share of the peak HBM bandwidth a decode step's streaming reads reach
    mean_response_fraction: float = 0.5  # mean response = half the budget (NousCoder: lengths "quickly saturate")
    mean_prompt_tokens: float = 700  # LiveCodeBench-template prompts of the mix (budget 2,048)
    dropped_group_fraction: float = 0.3  # groups dynamic sampling drops and regenerates, after the offline filter
    weight_sync_s: float = 30.0  # one weight push: NCCL broadcast (~1-2 s over IB) + vLLM's pause, load and resume
    checkpoint_write_bytes_per_s: float = 5e9  # the trainer's ranks writing shards to the shared filesystem
    model_load_s: float = 600.0  # a validation-only run: Ray actors, model load, vLLM start-up
    max_lost_s: float = 3600.0  # a kill (node failure, time limit, watchdog) loses at most this much training
    validation_share: float = 0.08  # in-run validation may take at most this share of a stage's time
    source: str = "stated assumptions"


@dataclass(frozen=True)
class Basis:
    """What a plan rests on: the model, the GPU and the assumptions."""

    model: ModelSpec
    gpu: GPUSpec
    assumptions: Assumptions = field(default_factory=Assumptions)

    def describe(self) -> str:
        return f"{self.model.describe()}; {self.gpu.describe()}; {self.assumptions.source}"


@dataclass(frozen=True)
class Generation:
    """A vLLM pool: `replicas` of `tensor_parallel` GPUs each at `memory_utilization`, capped at `max_num_seqs`."""

    basis: Basis
    replicas: int
    tensor_parallel: int
    memory_utilization: float
    max_num_seqs: int

    @property
    def kv_tokens_per_replica(self) -> float:
        return kv_tokens_per_replica(self.basis.model, self.basis.gpu, self.tensor_parallel, self.memory_utilization)

    @property
    def read_bytes_per_s(self) -> float:
        return self.basis.assumptions.hbm_efficiency * self.basis.gpu.hbm_bytes_per_s

    def concurrency(self, mean_tokens: float) -> float:
        return max(1.0, min(self.max_num_seqs, self.kv_tokens_per_replica / mean_tokens))

    def decode_step_s(self, mean_tokens: float) -> float:
        """One decode step of a replica: each GPU reads its weight shard and its part of the KV cache in use."""
        model = self.basis.model
        kv_bytes = self.concurrency(mean_tokens) * mean_tokens * model.kv_bytes_per_token / self.tensor_parallel
        return (model.weight_bytes / self.tensor_parallel + kv_bytes) / self.read_bytes_per_s

    def tokens_per_s_per_replica(self, mean_tokens: float) -> float:
        return self.concurrency(mean_tokens) / self.decode_step_s(mean_tokens)

    def generation_s(
        self, sequences: float, response_budget: int, batches: int = 1, mean_response: float | None = None
    ) -> float:
        """Time to generate `sequences` responses of mean length, plus one tail per batch: the batch's longest
        response decoded alone on its replica (a step then reads the weight shard only)."""
        assumptions = self.basis.assumptions
        mean = assumptions.mean_response_fraction * response_budget if mean_response is None else mean_response
        rate = self.replicas * self.tokens_per_s_per_replica(assumptions.mean_prompt_tokens + mean)
        tail = response_budget * self.basis.model.weight_bytes / self.tensor_parallel / self.read_bytes_per_s
        return sequences * mean / rate + batches * tail


def generation_pool(config: DictConfig, gpus: int, basis: Basis) -> Generation:
    rollout = config.actor_rollout_ref.rollout
    return Generation(
        basis=basis,
        replicas=max(1, gpus // int(rollout.tensor_model_parallel_size)),  # (a smaller pool cannot hold one replica)
        tensor_parallel=int(rollout.tensor_model_parallel_size),
        memory_utilization=float(rollout.gpu_memory_utilization),
        max_num_seqs=int(rollout.max_num_seqs),
    )


def rollout_gpus(config: DictConfig) -> int:
    """The GPUs that generate: the standalone pool (separate-async) or every trainer GPU (colocated)."""
    rollout = config.actor_rollout_ref.rollout
    return int(rollout.nnodes) * int(rollout.n_gpus_per_node) if is_separate_async(config) else trainer_gpus(config)


def forward_flops(model: ModelSpec, tokens: float) -> float:
    """FLOPs of one forward pass over a sequence: dense 2 P L plus causal attention 2 N L^2 A."""
    return 2 * model.params * tokens + 2 * model.layers * tokens**2 * model.attention_width


@dataclass(frozen=True)
class StageCost:
    """Per-step cost of one training stage and the cadence derived from it."""

    name: str
    separate_async: bool
    sequences: int
    mean_tokens: float
    trainer_s: float
    decode_tokens_per_s: float
    rollout_s: float
    step_s: float
    save_s: float
    validation_s: float
    save_freq: int
    test_freq: int

    @property
    def tokens_per_step(self) -> float:
        return self.sequences * self.mean_tokens

    def validations(self, steps: int) -> int:
        """Validated steps: every multiple of test_freq, and the last step (verl validates it too)."""
        return math.ceil(steps / self.test_freq) if steps else 0

    def wall_s(self, steps: int, validate_first: bool) -> float:
        """`steps` steps with their saves and validations (verl also saves and validates at the last step)."""
        saves = math.ceil(steps / self.save_freq)
        return (
            steps * self.step_s + saves * self.save_s + (self.validations(steps) + validate_first) * self.validation_s
        )


def stage_cost(name: str, config: DictConfig, basis: Basis) -> StageCost:
    """The step time and cadence of a training stage, separate-async or synchronous colocated."""
    model, assumptions = basis.model, basis.assumptions
    separate = is_separate_async(config)
    pool = generation_pool(config, rollout_gpus(config), basis)
    budget = int(config.data.max_response_length)
    sequences = int(config.data.train_batch_size) * int(config.actor_rollout_ref.rollout.n)
    mean_tokens = assumptions.mean_prompt_tokens + assumptions.mean_response_fraction * budget
    compute = basis.gpu.peak_flops * assumptions.mfu * trainer_gpus(config)
    trainer_s = sequences * assumptions.forward_passes * forward_flops(model, mean_tokens) / compute
    dropped = assumptions.dropped_group_fraction if config.algorithm.filter_groups.get("enable") else 0.0
    rollout_s = pool.generation_s(sequences / (1 - dropped), budget)
    if separate:
        step_s = max(trainer_s, rollout_s) + assumptions.weight_sync_s
    else:
        step_s = trainer_s + rollout_s + assumptions.weight_sync_s
    save_s = model.params * CHECKPOINT_BYTES_PER_PARAM * replicas(config) / assumptions.checkpoint_write_bytes_per_s
    validation_s = pool.generation_s(LCB_V6_PROBLEMS * int(config.actor_rollout_ref.rollout.val_kwargs.n), budget)
    save_freq = max(1, int(assumptions.max_lost_s // step_s))
    saves_per_validation = math.ceil(validation_s / (assumptions.validation_share * step_s * save_freq))
    return StageCost(
        name=name,
        separate_async=separate,
        sequences=sequences,
        mean_tokens=mean_tokens,
        trainer_s=trainer_s,
        decode_tokens_per_s=pool.tokens_per_s_per_replica(mean_tokens),
        rollout_s=rollout_s,
        step_s=step_s,
        save_s=save_s,
        validation_s=validation_s,
        save_freq=save_freq,
        test_freq=save_freq * saves_per_validation,
    )


def evaluation_s(config: DictConfig, gpus: int, problems: int, basis: Basis) -> float:
    """A validation-only run on `gpus` GPUs: model load, then `problems` x val_kwargs.n generations, in batches of
    data.val_batch_size prompts (verl's default: all at once)."""
    budget = int(config.data.max_response_length)
    batches = math.ceil(problems / (config.data.get("val_batch_size") or problems))
    samples = int(config.actor_rollout_ref.rollout.val_kwargs.n)
    pool = generation_pool(config, gpus, basis)
    return basis.assumptions.model_load_s + pool.generation_s(problems * samples, budget, batches)


@dataclass(frozen=True)
class Plan:
    """Steps per training stage, and the wall-clock seconds of every part of the chain, on `gpus` GPUs."""

    budget_gpu_hours: float
    gpus: int
    basis: Basis
    stages: tuple[StageCost, ...]
    steps: tuple[int, ...]
    fixed_s: dict[str, float]
    warnings: tuple[str, ...] = ()

    def stage_wall_s(self, index: int) -> float:
        return self.stages[index].wall_s(self.steps[index], validate_first=index == 0)

    @property
    def total_gpu_hours(self) -> float:
        walls = [self.stage_wall_s(i) for i in range(len(self.stages))] + list(self.fixed_s.values())
        return sum(walls) * self.gpus / 3600

    def overrides(self) -> dict[str, list[str]]:
        """Each stage's planned length and cadence, as the launcher appends them."""
        return {
            cost.name: [
                f"trainer.total_training_steps={steps}",
                f"trainer.save_freq={cost.save_freq}",
                f"trainer.test_freq={cost.test_freq}",
            ]
            for cost, steps in zip(self.stages, self.steps, strict=True)
        }


def fit_steps(cost: StageCost, share_s: float, first: bool, min_validations: int) -> tuple[StageCost, int]:
    """The most steps whose saves and validations (the last ones too) fit `share_s`; a stage that must validate
    `min_validations` checkpoints (the re-scored ones) gets a test_freq that allows it where save_freq does."""
    count = int(share_s // cost.step_s)  # an upper bound: steps alone, without saves or validations
    while count > 0 and cost.wall_s(count, first) > share_s:
        count -= 1
    if count and cost.validations(count) < min_validations:
        test_freq = max(cost.save_freq, count // min_validations // cost.save_freq * cost.save_freq)
        if test_freq < cost.test_freq:
            return fit_steps(replace(cost, test_freq=test_freq), share_s, first, 0)
    return cost, count


def fixed_costs(
    basis: Basis,
    gpus: int,
    rescore: DictConfig | None,
    final_eval: DictConfig | None,
    offline_filter: DictConfig | None,
    candidates: int,
    train_problems: int,
) -> dict[str, float]:
    """Seconds of the validation-only runs on every GPU: stage 0, the re-scored candidates, the final evaluation."""
    fixed = {}
    if offline_filter is not None:
        fixed["offline filter"] = evaluation_s(offline_filter, gpus, train_problems, basis)
    if rescore is not None and candidates:
        fixed["re-scoring"] = candidates * evaluation_s(rescore, gpus, LCB_V6_PROBLEMS, basis)
    if final_eval is not None:
        fixed["final evaluation"] = evaluation_s(final_eval, gpus, LCB_V6_PROBLEMS, basis)
    return fixed


def plan(
    stages: dict[str, DictConfig],
    basis: Basis,
    gpus: int,
    budget_gpu_hours: float = DEFAULT_BUDGET_GPU_HOURS,
    rescore: DictConfig | None = None,
    final_eval: DictConfig | None = None,
    offline_filter: DictConfig | None = None,
    rescored: dict[str, int] | None = None,
    train_problems: int = TRAIN_PROBLEMS,
) -> Plan:
    """The chain's plan: fixed costs first, then each training stage's share of what is left, in whole steps.
    `rescored` = {stage: candidates re-scored} (each validated in-run first)."""
    rescored = rescored or {}
    costs = [stage_cost(name, config, basis) for name, config in stages.items()]
    fixed = fixed_costs(basis, gpus, rescore, final_eval, offline_filter, sum(rescored.values()), train_problems)
    training_s = budget_gpu_hours * 3600 / gpus - sum(fixed.values())
    if training_s <= 0:
        raise ValueError(
            f"a budget of {budget_gpu_hours:.0f} GPU-hours on {gpus} GPUs does not cover the fixed costs "
            f"({', '.join(f'{k} {v * gpus / 3600:.0f}' for k, v in fixed.items())} GPU-hours)"
        )
    shares = STAGE_SHARES if len(costs) == len(STAGE_SHARES) else (1 / len(costs),) * len(costs)
    planned, steps = [], []
    for index, (cost, share) in enumerate(zip(costs, shares, strict=True)):
        fitted, count = fit_steps(cost, share * training_s, index == 0, rescored.get(cost.name, 0))
        planned.append(fitted)
        steps.append(count)
    warnings = []
    fixed_share = sum(fixed.values()) * gpus / 3600 / budget_gpu_hours
    if fixed_share > FIXED_SHARE_WARNING:
        warnings.append(
            f"the fixed costs ({', '.join(f'{k} {v / 3600:.1f} h' for k, v in fixed.items())}) take {fixed_share:.0%} "
            f"of the budget (over {FIXED_SHARE_WARNING:.0%}): raise BUDGET_GPU_HOURS, or drop stage 0 "
            "(OFFLINE_FILTER=none or a filter built once) / lower RESCORE_TOP_K"
        )
    for cost, count in zip(planned, steps, strict=True):
        if count == 0:
            warnings.append(f"{cost.name}: its share of the budget holds no step of ~{cost.step_s / 60:.0f} min")
        elif cost.validations(count) < rescored.get(cost.name, 0):
            warnings.append(
                f"{cost.name}: {count} steps validate {cost.validations(count)} checkpoint(s) at save_freq "
                f"{cost.save_freq}, fewer than RESCORE_TOP_K={rescored[cost.name]}"
            )
    return Plan(budget_gpu_hours, gpus, basis, tuple(planned), tuple(steps), fixed, tuple(warnings))


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


def memory_table(fitted: dict[str, DictConfig], names: list[str], basis: Basis) -> str:
    """Per-GPU peak memory of each role of each config (gpu_memory.py), GB."""
    lines = ["| config | role | GB per GPU | of | parts (GB) |", "|---|---|---|---|---|"]
    for name in names:
        config = fitted[name]
        roles = [rollout_memory(config, basis.model, basis.gpu)]
        if not config.trainer.get("val_only", False):
            roles = trainer_memory(config, basis.model, basis.gpu) + roles
        for role in roles:
            parts = ", ".join(f"{part} {value / 1e9:.1f}" for part, value in role.parts.items())
            flag = "" if role.fits else " **over**"
            lines.append(
                f"| `{name}` | {role.role} | {role.total / 1e9:.1f}{flag} | {role.capacity / 1e9:.0f} | {parts} |"
            )
    return "\n".join(lines)


def calibrate(basis: Basis, measured: Measurements) -> Basis:
    """The assumptions scaled by measured / predicted at the measured run's own shape (configs/README.md "A plan
    from measurements"):

        MFU'          = MFU x predicted trainer s / measured (log-probs + update) s
        HBM eff.'     = HBM eff. x measured tokens/s per rollout GPU / predicted, at the measured mean lengths
        weight sync'  = measured sync s x target weight bytes / measured weight bytes

    so that the planner's own scaling in model size P, response length L and GPU counts carries the measured
    efficiency to the target run. Prompt and response means stay the budget-based assumptions (a rehearsal's short
    responses say nothing of a 32k stage's)."""
    missing = [
        name
        for name, value in (
            ("log-prob + update time", measured.trainer_s),
            ("tokens/s per rollout GPU", measured.tokens_per_s_per_rollout_gpu),
            ("weight-sync time", measured.weight_sync_s),
            ("weight-sync bytes", measured.weight_sync_bytes),
        )
        if value <= 0
    ]
    if missing:
        raise ValueError(f"{measured.source}: no measured {', '.join(missing)}: nothing to calibrate with")
    at = Basis(measured.model, basis.gpu if measured.gpu is None else measured.gpu, basis.assumptions)
    flops = at.gpu.peak_flops * at.assumptions.mfu * measured.trainer_gpus
    tokens = measured.mean_prompt_tokens + measured.mean_response_tokens
    predicted_trainer = measured.sequences * at.assumptions.forward_passes * forward_flops(at.model, tokens) / flops
    pool = Generation(
        at,
        measured.rollout_gpus // measured.tensor_parallel,
        measured.tensor_parallel,
        measured.memory_utilization,
        measured.max_num_seqs,
    )
    predicted_rate = pool.tokens_per_s_per_replica(tokens) / measured.tensor_parallel
    assumptions = replace(
        basis.assumptions,
        mfu=basis.assumptions.mfu * predicted_trainer / measured.trainer_s,
        hbm_efficiency=basis.assumptions.hbm_efficiency * measured.tokens_per_s_per_rollout_gpu / predicted_rate,
        weight_sync_s=measured.weight_sync_s * basis.model.weight_bytes / measured.weight_sync_bytes,
        source=f"calibrated from {measured.source}",
    )
    return replace(basis, assumptions=assumptions)


def default_chain(budget_gpu_hours: float = DEFAULT_BUDGET_GPU_HOURS, overrides: list[str] | None = None) -> Plan:
    """The plan of `launch/run_dapo_32k_to_40k.sh` as configured: Qwen3-14B on 6 nodes x 8 H100s."""
    chain = Chain(
        stages=["dapo_32k", "dapo_40k"],
        rescore={"dapo_32k": "eval_lcb_40k"},
        eval_config="eval_lcb_80k",
        offline_filter_config="offline_filter",
        overrides=list(overrides or []),
    )
    from gpu_spec import GPUS

    _, fitted = compose_chain(chain, 6, 8)
    basis = Basis(resolve_model("Qwen/Qwen3-14B"), GPUS["h100"])
    return plan_chain(chain, fitted, basis, 48, budget_gpu_hours, rescore_top_k=3)


def configured_plan(chain: Chain, fitted: dict[str, DictConfig], basis: Basis, gpus: int, train_problems: int) -> Plan:
    """The chain as configured: each stage's own total_training_steps, save_freq and test_freq, and what it costs."""
    costs, steps = [], []
    for name in chain.stages:
        trainer = fitted[name].trainer
        count = int(trainer.get("total_training_steps") or 0)
        if not count:
            raise ValueError(f"{name} has no trainer.total_training_steps: plan it for a budget (--budget-gpu-hours)")
        cost = stage_cost(name, fitted[name], basis)
        costs.append(replace(cost, save_freq=int(trainer.save_freq), test_freq=int(trainer.test_freq)))
        steps.append(count)
    rescore, final_eval, offline_filter = chain_parts(chain, fitted)
    fixed = fixed_costs(basis, gpus, rescore, final_eval, offline_filter, 0, train_problems)
    result = Plan(0.0, gpus, basis, tuple(costs), tuple(steps), fixed)
    return replace(result, budget_gpu_hours=result.total_gpu_hours)


def ideal_max_num_seqs(config: DictConfig, basis: Basis) -> float:
    """Sequences a replica's KV cache holds while they grow: each holds on average half its final length, so about
    twice the count of full-length sequences (configs/README.md "Memory arithmetic")."""
    rollout, assumptions = config.actor_rollout_ref.rollout, basis.assumptions
    budget = int(config.data.max_response_length)
    mean_tokens = assumptions.mean_prompt_tokens + assumptions.mean_response_fraction * budget
    kv = kv_tokens_per_replica(
        basis.model, basis.gpu, int(rollout.tensor_model_parallel_size), float(rollout.gpu_memory_utilization)
    )
    return 2 * kv / mean_tokens


def max_num_seqs_warning(config: DictConfig, name: str, basis: Basis) -> str | None:
    """A `max_num_seqs` outside [MAX_NUM_SEQS_RANGE] x the KV cache's capacity: vLLM preempts and recomputes
    sequences (above), or leaves KV cache and decode throughput unused (below)."""
    configured = int(config.actor_rollout_ref.rollout.max_num_seqs)
    ideal = ideal_max_num_seqs(config, basis)
    low, high = MAX_NUM_SEQS_RANGE
    if low * ideal <= configured <= high * ideal:
        return None
    effect = "vLLM preempts and recomputes sequences" if configured > ideal else "KV cache and throughput go unused"
    suggested = max(8, int(ideal) // 8 * 8)
    return (
        f"{name}: actor_rollout_ref.rollout.max_num_seqs={configured} against KV room for ~{ideal:.0f} growing "
        f"sequences ({basis.model.name}, tensor parallel {int(config.actor_rollout_ref.rollout.tensor_model_parallel_size)}"
        f", {int(config.data.max_response_length):,}-token responses): {effect}; suggested "
        f"actor_rollout_ref.rollout.max_num_seqs={suggested}"
    )


def plan_chain(
    chain: Chain,
    fitted: dict[str, DictConfig],
    basis: Basis,
    gpus: int,
    budget_gpu_hours: float,
    rescore_top_k: int,
    train_problems: int = TRAIN_PROBLEMS,
) -> Plan:
    rescore, final_eval, offline_filter = chain_parts(chain, fitted)
    return plan(
        {stage: fitted[stage] for stage in chain.stages},
        basis,
        gpus,
        budget_gpu_hours,
        rescore=rescore,
        final_eval=final_eval,
        offline_filter=offline_filter,
        rescored={stage: rescore_top_k for stage in chain.rescore},
        train_problems=train_problems,
    )


def chain_parts(
    chain: Chain, fitted: dict[str, DictConfig]
) -> tuple[DictConfig | None, DictConfig | None, DictConfig | None]:
    """The re-scoring, final evaluation and stage 0 configs of the chain (None where it has none)."""
    rescore = fitted[next(iter(chain.rescore.values()))] if chain.rescore else None
    final_eval = fitted[chain.eval_config] if chain.eval_config else None
    return rescore, final_eval, fitted[chain.offline_filter_config] if chain.offline_filter_config else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python launch/run_plan.py", description=__doc__.splitlines()[0])
    add_chain_arguments(parser, defaults=True)
    add_gpu_arguments(parser)
    add_model_arguments(parser)
    parser.add_argument(
        "--budget-gpu-hours",
        type=float,
        default=DEFAULT_BUDGET_GPU_HOURS,
        help="GPU-hours of the whole chain (default: %(default).0f, NousCoder's 4 days x 48 GPUs)",
    )
    parser.add_argument(
        "--configured",
        action="store_true",
        help="cost the stages' configured lengths and cadence instead of planning them for a budget",
    )
    parser.add_argument("--train-problems", type=int, default=TRAIN_PROBLEMS, help="problems stage 0 generates for")
    parser.add_argument("--keep-last", type=int, default=2, help="KEEP_LAST_CHECKPOINTS, for the disk figure")
    parser.add_argument(
        "--measured",
        type=Path,
        default=None,
        help="re-plan from measurements: a rehearsal report (JSON) or a run's metrics.jsonl (rehearsal_report.py)",
    )
    parser.add_argument(
        "--measured-config",
        default=None,
        help="for a metrics.jsonl: the config its run ran (default: RUN_DIR/hydra/*/.hydra/config.yaml beside it)",
    )
    parser.add_argument("--table", action="store_true", help="print the Markdown tables (plan, memory per role)")
    args = parser.parse_args(argv)
    try:
        chain = chain_from_args(args)
        _, fitted = compose_chain(chain, args.nodes, args.gpus_per_node)
        basis = Basis(model_from_args(args, fitted[chain.stages[0]]), gpu_from_args(args))
        if args.measured:
            measured = read_measurements(args.measured, args.measured_config, basis.gpu)
            print(measured.describe())
            basis = calibrate(basis, measured)
        gpus = args.nodes * args.gpus_per_node
        if args.configured:
            result = configured_plan(chain, fitted, basis, gpus, args.train_problems)
        else:
            result = plan_chain(
                chain, fitted, basis, gpus, args.budget_gpu_hours, args.rescore_top_k, args.train_problems
            )
    except (ChainError, UnknownModel, ReportError, ValueError) as stop:
        sys.exit(f"run_plan: error: {stop}")
    budget = "the configured lengths" if args.configured else f"{args.budget_gpu_hours:,.0f} GPU-hours"
    print(f"plan for {budget} on {args.nodes} x {args.gpus_per_node} GPUs: {basis.describe()}")
    if basis.assumptions.source != Assumptions.source:
        print(
            "  "
            + ", ".join(f"{k} {getattr(basis.assumptions, k):.3g}" for k in ("mfu", "hbm_efficiency", "weight_sync_s"))
        )
    if args.table:
        print(table(result))
        print()
        print(memory_table(fitted, chain.names, basis))
        print()
    print("\n".join(disk_lines(chain, fitted, basis.model.params, args.keep_last, args.rescore_top_k)))
    warnings = [w for name in chain.names if (w := max_num_seqs_warning(fitted[name], name, basis))]
    for warning in [*warnings, *result.warnings]:
        print(f"WARNING: {warning}")
    for name, overrides in result.overrides().items():
        print(f"{name}: {' '.join(overrides)}")


if __name__ == "__main__":
    main()

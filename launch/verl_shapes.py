"""The divisibility and size rules verl 0.9.1 asserts (or pads for) that a stage config's shape must meet.

Each rule names the line of verl that enforces it (configs/README.md "Shapes verl accepts" lists them). Sequences
per update U = sample_batch x n, with sample_batch = data.train_batch_size / parameter_sync_step (verl
`trainer/ppo/v1/trainer_base.py:539`; 1 step for the sync trainer); the mini-batch in sequences M =
ppo_mini_batch_size x n (`trainer_base.py:1830`); the trainer's data-parallel size D = trainer GPUs / Ulysses size
(`workers/engine/fsdp/transformer_impl.py:652`).

    python launch/verl_shapes.py --rules          # the rules and the lines of verl that enforce them
    python launch/verl_shapes.py --table          # the table of every training experiment at its own allocation
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass

from model_spec import ModelSpec
from omegaconf import DictConfig, OmegaConf

from recipe.nouscoder.configs import compose_experiment, experiment_names

VERL = "verl 0.9.1"


@dataclass(frozen=True)
class Shape:
    """The numbers the rules read from a composed stage config."""

    name: str
    separate_async: bool
    val_only: bool
    trainer_gpus: int
    gpus_per_node: int
    rollout_gpus: int
    ulysses: int
    fsdp_size: int
    train_batch: int
    group: int
    mini_batch: int
    sync_steps: int
    longest: int
    train_tokens_per_gpu: int
    log_prob_tokens_per_gpu: int
    tensor_parallel: int
    max_model_len: int
    dynamic_bsz: bool
    max_positions_override: int | None

    @classmethod
    def of(cls, config: DictConfig, name: str) -> Shape:
        actor, rollout, trainer = config.actor_rollout_ref.actor, config.actor_rollout_ref.rollout, config.trainer
        separate = str(trainer.v1.trainer_mode).endswith("separate_async")
        overridden = config.actor_rollout_ref.model.get("override_config", {}).get("max_position_embeddings")
        return cls(
            name=name,
            separate_async=separate,
            val_only=bool(trainer.get("val_only", False)),
            trainer_gpus=int(trainer.nnodes) * int(trainer.n_gpus_per_node),
            gpus_per_node=int(rollout.n_gpus_per_node if separate else trainer.n_gpus_per_node),
            rollout_gpus=int(rollout.nnodes) * int(rollout.n_gpus_per_node) if separate else 0,
            ulysses=int(actor.ulysses_sequence_parallel_size),
            fsdp_size=int(actor.fsdp_config.get("fsdp_size", -1)),
            train_batch=int(config.data.train_batch_size),
            group=int(rollout.n),
            mini_batch=int(actor.ppo_mini_batch_size),
            sync_steps=int(trainer.v1.separate_async.parameter_sync_step) if separate else 1,
            longest=int(config.data.max_prompt_length) + int(config.data.max_response_length),
            train_tokens_per_gpu=int(actor.ppo_max_token_len_per_gpu),
            log_prob_tokens_per_gpu=int(rollout.log_prob_max_token_len_per_gpu),
            tensor_parallel=int(rollout.tensor_model_parallel_size),
            max_model_len=int(rollout.max_model_len),
            dynamic_bsz=bool(actor.use_dynamic_bsz),
            max_positions_override=int(overridden) if overridden else None,
        )

    @property
    def data_parallel(self) -> int:
        return self.trainer_gpus // self.ulysses

    @property
    def mini_sequences(self) -> int:
        return self.mini_batch * self.group

    @property
    def update_sequences(self) -> int:
        return self.train_batch // self.sync_steps * self.group

    @property
    def padding(self) -> int:
        """Synthetic sequences verl's batch balancing appends to each update batch (trainer_base.py:1603, 1621)."""
        multiple = math.lcm(self.data_parallel, self.mini_sequences)
        return -self.update_sequences % multiple

    def allocation(self) -> str:
        if self.separate_async:
            return f"{self.trainer_gpus} train + {self.rollout_gpus} rollout"
        return f"{self.trainer_gpus} colocated"


SIZES = (
    "data.train_batch_size",
    "data.max_prompt_length",
    "data.max_response_length",
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "actor_rollout_ref.actor.ulysses_sequence_parallel_size",
    "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.val_kwargs.n",
    "actor_rollout_ref.rollout.tensor_model_parallel_size",
    "actor_rollout_ref.rollout.max_num_seqs",
    "trainer.v1.separate_async.parameter_sync_step",
)
"""Counts and lengths every rule below divides by or multiplies with: each must be a positive integer."""


def non_positive_sizes(config: DictConfig, name: str) -> list[str]:
    """Each of SIZES that the config sets to something other than a positive integer, as a line naming it (a size
    the config does not have, as parameter_sync_step outside the separate-async trainer, is not checked)."""
    problems = []
    for key in SIZES:
        value = OmegaConf.select(config, key, default=None)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            problems.append(f"{name}: {key}={value} must be a positive integer")
    return problems


@dataclass(frozen=True)
class Rule:
    """One of verl's rules: what it requires and where verl enforces it."""

    name: str
    source: str
    check: Callable[[Shape, ModelSpec | None], str | None]
    training_only: bool = True


def ulysses_fits(shape: Shape, model: ModelSpec | None, size: int) -> bool:
    heads_ok = model is None or (model.heads % size == 0 and (model.kv_heads % size == 0 or size % model.kv_heads == 0))
    return heads_ok and shape.trainer_gpus % size == 0 and shape.train_tokens_per_gpu * size >= shape.longest


def fitting_ulysses(shape: Shape, model: ModelSpec | None) -> list[int]:
    return [
        size
        for size in range(1, shape.trainer_gpus + 1)
        if ulysses_fits(shape, model, size) and shape.mini_sequences % (shape.trainer_gpus // size) == 0
    ]


def fitting_nodes(shape: Shape) -> list[int]:
    """Node counts of a colocated config (launcher: trainer.nnodes = the job's) at which M divides by D."""
    per_node = shape.gpus_per_node
    return [
        nodes
        for nodes in range(1, 17)
        if (nodes * per_node) % shape.ulysses == 0 and shape.mini_sequences % (nodes * per_node // shape.ulysses) == 0
    ]


def mini_batch_by_data_parallel(shape: Shape, model: ModelSpec | None) -> str | None:
    if shape.trainer_gpus % shape.ulysses or shape.mini_sequences % shape.data_parallel == 0:
        return None  # (a Ulysses size that does not divide the GPUs has no data-parallel size: ulysses_gpus names it)
    fixes = [f"actor_rollout_ref.actor.ulysses_sequence_parallel_size={size}" for size in fitting_ulysses(shape, model)]
    if not shape.separate_async:
        now = shape.trainer_gpus // shape.gpus_per_node
        nodes = sorted(fitting_nodes(shape), key=lambda n: (abs(n - now), n))[:3]
        fixes += [f"sbatch --nodes={n}" for n in nodes]
    return (
        f"the mini-batch of {shape.mini_batch} x {shape.group} = {shape.mini_sequences:,} sequences does not divide by "
        f"the {shape.data_parallel} data-parallel ranks ({shape.trainer_gpus} trainer GPUs / Ulysses {shape.ulysses}): "
        f"remainder {shape.mini_sequences % shape.data_parallel}. "
        + (f"Fits: {' or '.join(fixes)}" if fixes else "No Ulysses size or node count fits: change the batch sizes")
    )


def balance_padding(shape: Shape, _model: ModelSpec | None) -> str | None:
    if shape.trainer_gpus % shape.ulysses or not shape.padding or shape.mini_sequences % shape.data_parallel:
        return None  # (a mini-batch that does not divide pads too: the rule above names it)
    return (
        f"each update of {shape.update_sequences:,} sequences is padded with {shape.padding:,} synthetic ones to a "
        f"multiple of lcm({shape.data_parallel} ranks, {shape.mini_sequences:,}-sequence mini-batch): "
        "make data.train_batch_size a multiple of actor_rollout_ref.actor.ppo_mini_batch_size and the mini-batch "
        "a multiple of the data-parallel size"
    )


def batch_by_sync_steps(shape: Shape, _model: ModelSpec | None) -> str | None:
    if shape.train_batch % shape.sync_steps == 0:
        return None
    return (
        f"data.train_batch_size={shape.train_batch} does not divide by "
        f"trainer.v1.separate_async.parameter_sync_step={shape.sync_steps}"
    )


def separate_async_batch(shape: Shape, _model: ModelSpec | None) -> str | None:
    if not shape.separate_async or shape.train_batch == shape.sync_steps * shape.mini_batch:
        return None
    return (
        f"data.train_batch_size={shape.train_batch} must equal parameter_sync_step={shape.sync_steps} x "
        f"actor_rollout_ref.actor.ppo_mini_batch_size={shape.mini_batch}: set "
        f"actor_rollout_ref.actor.ppo_mini_batch_size={shape.train_batch // shape.sync_steps}"
    )


def ulysses_heads(shape: Shape, model: ModelSpec | None) -> str | None:
    size = shape.ulysses
    if model is None or (model.heads % size == 0 and (model.kv_heads % size == 0 or size % model.kv_heads == 0)):
        return None
    return (
        f"Ulysses size {size} does not divide {model.name}'s {model.heads} query heads (or its {model.kv_heads} KV "
        f"heads either way): set actor_rollout_ref.actor.ulysses_sequence_parallel_size to one of "
        f"{[s for s in (1, 2, 4, 8) if ulysses_fits(shape, model, s)]}"
    )


def ulysses_gpus(shape: Shape, _model: ModelSpec | None) -> str | None:
    if shape.trainer_gpus % shape.ulysses == 0:
        return None
    return f"Ulysses size {shape.ulysses} does not divide the {shape.trainer_gpus} trainer GPUs (a dp x sp mesh)"


def fsdp_groups(shape: Shape, _model: ModelSpec | None) -> str | None:
    if not 0 < shape.fsdp_size < shape.trainer_gpus or shape.trainer_gpus % shape.fsdp_size == 0:
        return None
    return (
        f"actor_rollout_ref.actor.fsdp_config.fsdp_size={shape.fsdp_size} does not divide the {shape.trainer_gpus} "
        "trainer GPUs: a divisor (8 on 8-GPU nodes), or -1 to shard over all"
    )


def token_budget(shape: Shape, _model: ModelSpec | None) -> str | None:
    problems = [
        f"{key}={tokens} x Ulysses {shape.ulysses} = {tokens * shape.ulysses:,} < {shape.longest:,} tokens"
        for key, tokens in (
            ("actor_rollout_ref.actor.ppo_max_token_len_per_gpu", shape.train_tokens_per_gpu),
            ("actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu", shape.log_prob_tokens_per_gpu),
        )
        if shape.dynamic_bsz and tokens * shape.ulysses < shape.longest
    ]
    if not problems:
        return None
    return (
        "a micro-batch cannot hold the longest sequence (prompt + response budget): "
        + "; ".join(problems)
        + ": raise the token budget or the Ulysses size"
    )


def colocated_tensor_parallel(shape: Shape, _model: ModelSpec | None) -> str | None:
    if shape.separate_async or shape.trainer_gpus % shape.tensor_parallel == 0:
        return None
    return (
        f"actor_rollout_ref.rollout.tensor_model_parallel_size={shape.tensor_parallel} does not divide the "
        f"{shape.trainer_gpus} colocated GPUs"
    )


def standalone_tensor_parallel(shape: Shape, _model: ModelSpec | None) -> str | None:
    if not shape.separate_async:
        return None
    tp, per_node = shape.tensor_parallel, shape.gpus_per_node
    if tp > per_node and tp % per_node:
        return f"a replica of tensor_model_parallel_size={tp} GPUs spans nodes of {per_node}: it must be a multiple"
    if shape.rollout_gpus % tp:
        return (
            f"{shape.rollout_gpus % tp} of the {shape.rollout_gpus} rollout GPUs stay idle "
            f"({shape.rollout_gpus // tp} replicas of tensor_model_parallel_size={tp})"
        )
    return None


def vllm_tensor_parallel_heads(shape: Shape, model: ModelSpec | None) -> str | None:
    if model is None or model.heads % shape.tensor_parallel == 0:
        return None
    return f"tensor_model_parallel_size={shape.tensor_parallel} does not divide {model.name}'s {model.heads} heads"


def model_length(shape: Shape, model: ModelSpec | None) -> str | None:
    problems = []
    if shape.max_model_len < shape.longest:
        problems.append(
            f"actor_rollout_ref.rollout.max_model_len={shape.max_model_len:,} < prompt + response budget "
            f"{shape.longest:,}: responses are cut at {shape.max_model_len:,} minus the prompt; set it to {shape.longest}"
        )
    positions = shape.max_positions_override or (model.max_positions if model else None)
    if positions and shape.max_model_len > positions:
        problems.append(
            f"max_model_len={shape.max_model_len:,} > the model's {positions:,} positions (YaRN extends them)"
        )
    return "; ".join(problems) or None


def fixed_batch_by_gpus(shape: Shape, _model: ModelSpec | None) -> str | None:
    total = shape.train_batch * shape.group
    if shape.dynamic_bsz or total % shape.trainer_gpus == 0:
        return None
    return f"without dynamic batch sizes, {total} sequences per batch must divide by the {shape.trainer_gpus} GPUs"


RULES = (
    Rule("mini-batch sequences by data-parallel size", "workers/engine_workers.py:267", mini_batch_by_data_parallel),
    Rule(
        "balance padding to lcm(data-parallel, mini-batch)",
        "trainer/ppo/v1/trainer_base.py:1603,1621; trainer/ppo/padding_utils.py:165",
        balance_padding,
    ),
    Rule("train batch by parameter_sync_step", "trainer/ppo/v1/trainer_base.py:535", batch_by_sync_steps),
    Rule(
        "separate-async: train batch = parameter_sync_step x mini-batch",
        "trainer/ppo/v1/trainer_separate_async.py:59",
        separate_async_batch,
    ),
    Rule("Ulysses size by attention heads", "models/transformers/monkey_patch.py:343,346", ulysses_heads),
    Rule("Ulysses size by trainer GPUs", "workers/engine/fsdp/transformer_impl.py:248,652", ulysses_gpus),
    Rule("FSDP group size by trainer GPUs", "workers/engine/fsdp/utils.py:51", fsdp_groups),
    Rule(
        "micro-batch token budget x Ulysses >= longest sequence",
        "workers/engine/utils.py:111; utils/seqlen_balancing.py:384",
        token_budget,
    ),
    Rule("fixed batch sizes: batch by GPUs", "utils/config.py:124", fixed_batch_by_gpus),
    Rule(
        "colocated rollout TP by GPUs",
        "workers/engine_workers.py:659",
        colocated_tensor_parallel,
        training_only=False,
    ),
    Rule(
        "standalone rollout TP by pool and node",
        "workers/rollout/llm_server.py:460; workers/rollout/replica.py:114",
        standalone_tensor_parallel,
        training_only=False,
    ),
    Rule(
        "rollout TP by attention heads",
        "vLLM's own check (tensor parallelism splits the heads)",
        vllm_tensor_parallel_heads,
        training_only=False,
    ),
    Rule(
        "max_model_len between prompt + response and the model's positions",
        "workers/rollout/vllm_rollout/vllm_async_server.py:593,1107",
        model_length,
        training_only=False,
    ),
)


@dataclass(frozen=True)
class Violation:
    rule: Rule
    message: str

    def describe(self, name: str) -> str:
        where = f"{VERL} {self.rule.source}" if ":" in self.rule.source else self.rule.source
        return f"{name}: {self.message} ({where}, {self.rule.name})"


def violations(config: DictConfig, name: str, model: ModelSpec | None) -> list[Violation]:
    """Every rule the config breaks (a validation-only config: the rollout's rules only)."""
    shape = Shape.of(config, name)
    found = []
    for rule in RULES:
        if rule.training_only and shape.val_only:
            continue
        message = rule.check(shape, model)
        if message:
            found.append(Violation(rule, message))
    return found


def table_row(config: DictConfig, name: str) -> str:
    shape = Shape.of(config, name)
    return (
        f"| `{name}` | {shape.allocation()} | {shape.ulysses} | {shape.data_parallel} | "
        f"{shape.mini_batch} x {shape.group} = {shape.mini_sequences:,} | {shape.mini_sequences % shape.data_parallel} "
        f"| {shape.padding:,} |"
    )


TABLE_HEADER = (
    "| config | GPUs | Ulysses | data-parallel D | mini-batch M (sequences) | M mod D | padding per update |\n"
    "|---|---|---|---|---|---|---|"
)


def training_experiments() -> list[str]:
    """Experiments that train (not validation-only), composed with what they require."""
    return [name for name in experiment_names() if not compose_experiment(name).trainer.get("val_only", False)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python launch/verl_shapes.py", description=__doc__.splitlines()[0])
    parser.add_argument("--table", action="store_true", help="print the divisibility table of every training config")
    parser.add_argument("--rules", action="store_true", help="print the rules and the lines of verl enforcing them")
    args = parser.parse_args(argv)
    if args.rules or not args.table:
        print(f"| rule | where {VERL} enforces it |\n|---|---|")
        for rule in RULES:
            print(f"| {rule.name} | {rule.source} |")
    if args.table:
        print(TABLE_HEADER)
        for name in training_experiments():
            print(table_row(compose_experiment(name), name))


if __name__ == "__main__":
    main()

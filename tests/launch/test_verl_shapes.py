"""launch/verl_shapes.py: every experiment config, composed with what it requires, passes verl 0.9.1's shape rules
at its own allocation; each rule fires on a shape that breaks it; each rule's cited line of verl holds its check.

The remainders of the DeepCoder and MicroCoder configs at 6 x 8 GPUs are written out from their batch sizes
(DeepCoder: 64 prompts x 16 samples = 1,024 sequences per mini-batch, 48 GPUs / Ulysses 4 = 12 ranks; MicroCoder:
16 x 8 = 128 sequences, 48 ranks), not read from the module.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import verl
from chain import compose
from model_spec import resolve_model
from omegaconf import OmegaConf
from verl_shapes import RULES, TABLE_HEADER, Shape, table_row, violations

from recipe.nouscoder.configs import experiment_names

REPO = Path(__file__).resolve().parents[2]
VERL_ROOT = Path(verl.__file__).parent
# What each cited line of verl 0.9.1 must hold (read from verl's source for this test).
EVIDENCE = {
    "workers/engine_workers.py:267": "assert mini_batch_size % self.engine.get_data_parallel_size() == 0",
    "trainer/ppo/v1/trainer_base.py:1603": "required_multiple = math.lcm(required_multiple, actor_global_mini_batch_size)",
    "trainer/ppo/v1/trainer_base.py:1621": "upsample_batch_to_divisible_size(batch, batch_multiple",
    "trainer/ppo/padding_utils.py:165": "remainder = len(batch) % batch_multiple",
    "trainer/ppo/v1/trainer_base.py:535": "assert train_batch_size % self.parameter_sync_step == 0",
    "trainer/ppo/v1/trainer_separate_async.py:59": "assert train_batch_size == parameter_sync_step * ppo_mini_batch_size",
    "models/transformers/monkey_patch.py:343": "assert num_attention_heads % ulysses_sp_size == 0",
    "models/transformers/monkey_patch.py:346": "num_key_value_heads % ulysses_sp_size == 0 or ulysses_sp_size % num_key_value_heads",
    "workers/engine/fsdp/transformer_impl.py:248": "mesh_shape=(dp_size, self.ulysses_sequence_parallel_size)",
    "workers/engine/fsdp/transformer_impl.py:652": "get_world_size() // self.ulysses_sequence_parallel_size",
    "workers/engine/fsdp/utils.py:51": "mesh_shape=(world_size // fsdp_size, fsdp_size)",
    "workers/engine/utils.py:111": "max_token_len = max_token_len_per_gpu * sp_size",
    "utils/seqlen_balancing.py:384": "assert max_token_len >= max_seq_len",
    "utils/config.py:124": "assert real_train_batch_size % minimal_bsz == 0",
    "workers/engine_workers.py:659": "assert self.world_size % infer_world_size == 0",
    "workers/rollout/llm_server.py:460": "num_replicas = world_size // rollout_world_size",
    "workers/rollout/replica.py:114": "assert self.world_size % self.gpus_per_replica_node == 0",
    "workers/rollout/vllm_rollout/vllm_async_server.py:593": "max_possible_tokens = self.config.max_model_len - len(prompt_ids)",
    "workers/rollout/vllm_rollout/vllm_async_server.py:1107": "if self.config.max_model_len > max_position_embeddings",
}
# What a config needs that has no default (`${required:...}`), as a user passes it; and the model of a config whose
# model is required (its chain's model).
REQUIRED = {"microcoder_4k": ["data.train_files=train.parquet"]}
CHAIN_MODEL = {
    "eval_lcb_v5_64k": "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
    "eval_microcoder_8k": "Qwen/Qwen3-4B-Instruct-2507",
    "deepcoder_32k": "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
}


def model_of(name: str, config):
    if str(config.trainer.get("device", "cuda")) == "cpu":
        return None  # the CPU mode's tiny model is built at run time
    path = OmegaConf.select(config, "actor_rollout_ref.model.path", throw_on_resolution_failure=False)
    return resolve_model(str(path) if path else CHAIN_MODEL.get(name, "Qwen/Qwen3-14B"))


def cited_lines() -> list[str]:
    cited = []
    for rule in RULES:
        for part in rule.source.split("; "):
            if ":" not in part:
                continue  # vLLM's own rule
            path, lines = part.split(":")
            cited += [f"{path}:{line}" for line in lines.split(",")]
    return cited


@pytest.mark.parametrize("where", cited_lines())
def test_each_cited_line_of_verl_holds_the_check(where):
    path, line = where.split(":")
    text = (VERL_ROOT / path).read_text().splitlines()[int(line) - 1]
    assert EVIDENCE[where] in text, f"verl {where} is now: {text.strip()}"


@pytest.mark.parametrize("name", experiment_names())
def test_every_experiment_config_has_a_shape_verl_accepts(name):
    config = compose(name, REQUIRED.get(name, []))
    assert [v.describe(name) for v in violations(config, name, model_of(name, config))] == []


def test_deepcoder_and_microcoder_at_48_gpus_break_the_mini_batch_rule_with_the_stated_remainders():
    for name, overrides, remainder in (
        ("deepcoder_16k", ["trainer.nnodes=6"], 1024 % 12),
        ("deepcoder_32k", ["trainer.nnodes=6"], 1024 % 12),
        ("microcoder_4k", ["trainer.nnodes=6", *REQUIRED["microcoder_4k"]], 128 % 48),
    ):
        config = compose(name, overrides)
        found = violations(config, name, model_of(name, config))
        assert [v.rule.name for v in found] == ["mini-batch sequences by data-parallel size"], name
        assert f"remainder {remainder}." in found[0].message and "Fits: " in found[0].message
        assert Shape.of(config, name).mini_sequences % Shape.of(config, name).data_parallel == remainder
    deepcoder = violations(compose("deepcoder_16k", ["trainer.nnodes=6"]), "deepcoder_16k", None)[0].message
    assert "sbatch --nodes=4" in deepcoder  # 32 GPUs / Ulysses 4 = 8 ranks divide 1,024


BROKEN = [
    ("debug_64", ["data.train_batch_size=36"], "balance padding to lcm(data-parallel, mini-batch)"),
    ("dapo_32k", ["data.train_batch_size=130"], "train batch by parameter_sync_step"),
    (
        "dapo_32k",
        ["actor_rollout_ref.actor.ppo_mini_batch_size=16"],
        "separate-async: train batch = parameter_sync_step x mini-batch",
    ),
    ("dapo_32k", ["actor_rollout_ref.actor.ulysses_sequence_parallel_size=16"], "Ulysses size by attention heads"),
    ("debug_64", ["trainer.n_gpus_per_node=6"], "Ulysses size by trainer GPUs"),
    ("dapo_32k", ["trainer.n_gpus_per_node=6"], "FSDP group size by trainer GPUs"),
    (
        "dapo_32k",
        ["actor_rollout_ref.actor.ppo_max_token_len_per_gpu=4096"],
        "micro-batch token budget x Ulysses >= longest sequence",
    ),
    (
        "microcoder_4k",
        [
            "trainer.n_gpus_per_node=5",
            "actor_rollout_ref.actor.use_dynamic_bsz=false",
            "data.train_batch_size=66",
            "actor_rollout_ref.actor.ppo_mini_batch_size=66",
        ],
        "fixed batch sizes: batch by GPUs",
    ),
    ("debug_64", ["actor_rollout_ref.rollout.tensor_model_parallel_size=3"], "colocated rollout TP by GPUs"),
    ("dapo_32k", ["actor_rollout_ref.rollout.tensor_model_parallel_size=3"], "standalone rollout TP by pool and node"),
    ("dapo_32k", ["actor_rollout_ref.rollout.tensor_model_parallel_size=16"], "rollout TP by attention heads"),
    (
        "dapo_32k",
        ["actor_rollout_ref.rollout.max_model_len=30000"],
        "max_model_len between prompt + response and the model's positions",
    ),
]


@pytest.mark.parametrize(("name", "overrides", "rule"), BROKEN, ids=[rule for _, _, rule in BROKEN])
def test_each_rule_fires_on_a_shape_that_breaks_it(name, overrides, rule):
    config = compose(name, [*REQUIRED.get(name, []), *overrides])
    assert rule in {v.rule.name for v in violations(config, name, model_of(name, config))}
    assert {r.name for r in RULES} >= {rule}


def test_a_ulysses_group_larger_than_the_trainer_gpus_is_named_not_a_crash():
    """One trainer GPU holds no Ulysses group of 4: no data-parallel size exists, the rules that divide by it stay
    quiet and the Ulysses rule names the misfit."""
    one_gpu = ["trainer.nnodes=1", "trainer.n_gpus_per_node=1"]
    one_gpu += ["actor_rollout_ref.rollout.nnodes=1", "actor_rollout_ref.rollout.n_gpus_per_node=1"]
    config = compose("dapo_32k", one_gpu)
    found = violations(config, "dapo_32k", resolve_model("Qwen/Qwen3-14B"))
    assert "Ulysses size by trainer GPUs" in {v.rule.name for v in found}
    assert "data-parallel" not in " ".join(v.rule.name for v in found)


def test_a_validation_only_config_is_held_to_the_rollout_rules_only():
    config = compose("eval_lcb_80k", ["actor_rollout_ref.actor.ulysses_sequence_parallel_size=3"])
    assert violations(config, "eval_lcb_80k", resolve_model("Qwen/Qwen3-14B")) == []


def test_the_readme_lists_every_rule_and_the_table_of_every_training_config():
    readme = (REPO / "configs" / "README.md").read_text()
    for rule in RULES:
        assert f"{rule.name} | {rule.source}" in readme, rule.name
    assert TABLE_HEADER in readme
    for name in ("dapo_32k", "deepcoder_16k", "deepcoder_32k", "microcoder_4k", "debug_64"):
        config = compose(name, REQUIRED.get(name, []))
        assert table_row(config, name) in readme, name
    assert re.search(r"\| `deepcoder_16k` \| 48 colocated \| 4 \| 12 \| 64 x 16 = 1,024 \| 4 \| 2,048 \|", readme)

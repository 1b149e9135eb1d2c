"""Every experiment config composes on CPU, carries the numbers of its seed table, and passes verl's validation.

The expected values are written out here from the seed texts (section cited per table), not read from the configs.

verl's `validate_config` needs no device: it reads the world size from the config (`trainer.nnodes` x
`trainer.n_gpus_per_node`; the standalone rollout pool from `actor_rollout_ref.rollout.nnodes`). Beyond it, the
sections verl's workers convert are converted (`omega_conf_to_dataclass`), and the selected V1 trainer class is
constructed: its `__init__` holds verl's trainer-mode checks (`PPOTrainerSeparateAsync`: train_batch_size =
parameter_sync_step x ppo_mini_batch_size, a standalone rollout pool, a non-naive weight transfer); GPUs are needed
only from `init()` on. Left out: the model config (`HFModelConfig` loads the tokenizer from the hub) and `reward`
(verl 0.9.1 never converts it, and its `RewardManagerConfig.__post_init__` calls a `super().__post_init__` that
`BaseConfig` lacks).
"""

import json
import re
from functools import cache

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationResolutionError
from verl.trainer.ppo.core_algos import get_adv_estimator_fn, get_policy_loss_fn
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.trainer.ppo.v1 import get_trainer_cls
from verl.utils.config import omega_conf_to_dataclass, validate_config
from verl.workers.config import FSDPActorConfig, RolloutConfig

import recipe.nouscoder.training.trainer  # noqa: F401  registers nouscoder_sync / nouscoder_separate_async
from recipe.nouscoder.configs import config_dir
from recipe.nouscoder.run.required_values import check_required_values
from reward_fns.ray_pool.config import pool_keys
from reward_fns.score import compute_score
from verl_ext.estimator_options import GrpoPlusOptions, MicrocoderOptions

TRAINING_CONFIGS = [
    "dapo_32k",
    "dapo_40k",
    "gspo_32k",
    "gspo_40k",
    "gspo_plus_32k",
    "gspo_plus_40k",
    "deepcoder_16k",
    "deepcoder_32k",
    "microcoder_4k",
    "debug_64",
]
EVAL_CONFIGS = ["eval_lcb_40k", "eval_lcb_80k", "eval_lcb_v5_64k", "eval_microcoder_8k"]
ALL_CONFIGS = [*TRAINING_CONFIGS, *EVAL_CONFIGS, "offline_filter"]
# The values each config requires (`${required:...}`), as a user passes them.
REQUIRED_OVERRIDES = {
    **{name: ["actor_rollout_ref.model.path=/models/best"] for name in EVAL_CONFIGS},
    "microcoder_4k": ["data.train_files=data/deepcoder_mix/train.parquet"],
    "offline_filter": [
        "actor_rollout_ref.model.path=Qwen/Qwen3-14B",
        "data.val_files=data/deepcoder_mix/train.parquet",
    ],
}

# NousCoder blog, Table 3 "Hyperparameters" (+ "Introduction": Qwen3-14B; "Iterative Context Extension":
# overlong filtering, 32k then Qwen3-14B's 40,960 context).
NOUSCODER_TABLE_3 = {
    "actor_rollout_ref.model.path": "Qwen/Qwen3-14B",
    "actor_rollout_ref.actor.optim.lr": 1e-6,
    "actor_rollout_ref.actor.use_kl_loss": False,
    "algorithm.use_kl_in_reward": False,
    "actor_rollout_ref.actor.entropy_coeff": 0,
    "actor_rollout_ref.rollout.n": 8,
    "actor_rollout_ref.rollout.temperature": 1.0,
    "actor_rollout_ref.rollout.val_kwargs.temperature": 0.6,
    "actor_rollout_ref.rollout.top_p": 1.0,
    "actor_rollout_ref.rollout.val_kwargs.top_p": 0.95,
    "algorithm.adv_estimator": "grpo_plus",
    "algorithm.grpo_plus.overlong_filter": True,
    "algorithm.rollout_correction.bypass_mode": False,
    "actor_rollout_ref.rollout.calculate_log_probs": True,
}
NOUSCODER_BATCH_SEQUENCES = 1024  # B (Table 3)
PPO_OFF_POLICY_K = 4  # Table 3
PIPELINE_RL_K = 3  # Table 3
QWEN3_14B_CONTEXT = 40_960  # NousCoder "Iterative Context Extension": "maximum Qwen3-14B context window of 40k"

# NousCoder "GRPO Algorithm and Variants" + Table 3 clip ratios; TIS level from "Asynchronous RL Training".
NOUSCODER_OBJECTIVES = {
    "dapo": {"loss_mode": "dapo", "clip": (0.2, 0.28), "agg": "token-mean", "tis": "token"},
    "gspo": {"loss_mode": "gspo_seq", "clip": (3e-4, 4e-4), "agg": "seq-mean-token-mean", "tis": "sequence"},
    "gspo_plus": {"loss_mode": "gspo_plus", "clip": (3e-4, 4e-4), "agg": "token-mean", "tis": "sequence"},
}

# DeepCoder model card "Training Recipe" (GRPO+, iterative context lengthening 16K -> 32K).
DEEPCODER_CARD = {
    "actor_rollout_ref.model.path": "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
    "actor_rollout_ref.actor.use_kl_loss": False,
    "algorithm.use_kl_in_reward": False,
    "actor_rollout_ref.actor.entropy_coeff": 0,
    "algorithm.grpo_plus.overlong_filter": True,
    "actor_rollout_ref.actor.clip_ratio_high": 0.28,
    "algorithm.filter_groups.enable": False,  # offline difficulty filtering instead of dynamic sampling
    # Batch sizes: outside the seed card (rllm's public DeepCoder script), see configs/README.md.
    "data.train_batch_size": 64,
    "actor_rollout_ref.rollout.n": 16,
}

# MicroCoder paper: section 5 (defaults), section 6 (4K training), sections 2.2, 2.3, 2.5 (algorithm).
MICROCODER_PAPER = {
    "actor_rollout_ref.model.path": "Qwen/Qwen3-4B-Instruct-2507",
    "data.max_response_length": 4096,
    "actor_rollout_ref.rollout.temperature": 1.2,
    "data.train_batch_size": 64,
    "actor_rollout_ref.actor.optim.lr": 1e-6,
    "actor_rollout_ref.rollout.n": 8,
    "actor_rollout_ref.rollout.val_kwargs.n": 4,
    "algorithm.adv_estimator": "microcoder_grpo",
    "algorithm.microcoder_grpo.mask_probability": 0.3,
    "algorithm.microcoder_grpo.repetition_window": 128,
    "algorithm.microcoder_grpo.mask_when": "incorrect",
    "actor_rollout_ref.actor.use_kl_loss": False,
    "algorithm.use_kl_in_reward": False,
}


@cache
def _composed_yaml(name: str, with_required: bool = True) -> str:
    overrides = REQUIRED_OVERRIDES.get(name, []) if with_required else []
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        return OmegaConf.to_yaml(compose(config_name=name, overrides=overrides))


def composed(name: str) -> DictConfig:
    """The resolved config `python -m recipe.nouscoder.main --config-name NAME` would run (required values given)."""
    config = OmegaConf.create(_composed_yaml(name))
    OmegaConf.resolve(config)
    return config


def _assert_table(config: DictConfig, table: dict) -> None:
    for key, expected in table.items():
        actual = OmegaConf.select(config, key, throw_on_missing=True)
        if isinstance(expected, float):
            assert actual == pytest.approx(expected), key
        else:
            assert actual == expected, key


def _total_gpus(config: DictConfig) -> int:
    trainer_gpus = config.trainer.nnodes * config.trainer.n_gpus_per_node
    rollout = config.actor_rollout_ref.rollout
    return trainer_gpus + rollout.nnodes * rollout.n_gpus_per_node


@pytest.mark.parametrize("objective", ["dapo", "gspo", "gspo_plus"])
@pytest.mark.parametrize("context", ["32k", "40k"])
def test_nouscoder_configs_match_table_3(objective: str, context: str) -> None:
    config = composed(f"{objective}_{context}")
    _assert_table(config, NOUSCODER_TABLE_3)
    spec = NOUSCODER_OBJECTIVES[objective]
    actor = config.actor_rollout_ref.actor
    assert actor.policy_loss.loss_mode == spec["loss_mode"]
    assert (actor.clip_ratio_low, actor.clip_ratio_high) == pytest.approx(spec["clip"])
    assert actor.loss_agg_mode == spec["agg"]
    assert config.algorithm.rollout_correction.rollout_is == spec["tis"]
    assert config.algorithm.rollout_correction.rollout_is_threshold == 2.0  # the documented cap C
    assert config.trainer.experiment_name == f"{objective}_{context}"


@pytest.mark.parametrize("name", ["dapo_32k", "gspo_40k", "gspo_plus_40k"])
def test_nouscoder_derived_batch_and_async_values(name: str) -> None:
    """B = 1024 sequences; PPO-off-policy-4 -> 4 optimizer steps of B/4 = 256 sequences; PipelineRL-3."""
    config = composed(name)
    group_size = config.actor_rollout_ref.rollout.n
    assert config.data.train_batch_size * group_size == NOUSCODER_BATCH_SEQUENCES
    separate_async = config.trainer.v1.separate_async
    assert separate_async.parameter_sync_step == PPO_OFF_POLICY_K
    assert config.actor_rollout_ref.actor.ppo_mini_batch_size * group_size == NOUSCODER_BATCH_SEQUENCES // 4
    assert config.actor_rollout_ref.actor.ppo_epochs == 1
    # At most k x B prompts submitted but not yet trained on: the warm-up window plus the step's own batch.
    assert separate_async.num_warmup_batches + 1 == PIPELINE_RL_K
    assert config.trainer.v1.sampler.max_off_policy_threshold == PIPELINE_RL_K
    assert config.trainer.v1.sampler.max_off_policy_strategy == "wait"  # PipelineRL never drops rollouts
    assert config.trainer.v1.trainer_mode == "nouscoder_separate_async"
    # The recipe trainer runs as verl's separate_async, and verl reads trainer.v1.<that mode>.parameter_sync_step.
    trainer_cls = get_trainer_cls(config.trainer.v1.trainer_mode)
    assert trainer_cls.base_trainer_mode == "separate_async"
    assert trainer_cls(config=config).parameter_sync_step == PPO_OFF_POLICY_K


@pytest.mark.parametrize("objective", ["dapo", "gspo", "gspo_plus"])
def test_context_stage_response_lengths(objective: str) -> None:
    """32k = 32,768 response tokens; 40k = Qwen3-14B's 40,960 minus the 2,048-token prompt budget = 38,912."""
    stage_32k, stage_40k = composed(f"{objective}_32k"), composed(f"{objective}_40k")
    assert stage_32k.data.max_response_length == 32_768
    assert stage_40k.data.max_prompt_length == 2_048
    assert stage_40k.data.max_response_length == 38_912
    assert stage_40k.data.max_prompt_length + stage_40k.data.max_response_length == QWEN3_14B_CONTEXT
    assert stage_32k.data.max_prompt_length + stage_32k.data.max_response_length <= QWEN3_14B_CONTEXT
    for config in (stage_32k, stage_40k):
        assert config.algorithm.grpo_plus.max_response_length == config.data.max_response_length
        assert config.actor_rollout_ref.rollout.response_length == config.data.max_response_length
        # one micro-batch of a Ulysses group must hold the longest sequence
        actor = config.actor_rollout_ref.actor
        longest = config.data.max_prompt_length + config.data.max_response_length
        assert actor.ppo_max_token_len_per_gpu * actor.ulysses_sequence_parallel_size >= longest


@pytest.mark.parametrize(("name", "response_length"), [("deepcoder_16k", 16_384), ("deepcoder_32k", 32_768)])
def test_deepcoder_configs_match_card(name: str, response_length: int) -> None:
    config = composed(name)
    _assert_table(config, DEEPCODER_CARD)
    assert config.data.max_response_length == response_length
    assert config.actor_rollout_ref.actor.clip_ratio_high > config.actor_rollout_ref.actor.clip_ratio_low
    assert config.trainer.v1.trainer_mode == "nouscoder_sync"


def test_microcoder_config_matches_paper() -> None:
    config = composed("microcoder_4k")
    _assert_table(config, MICROCODER_PAPER)
    assert config.algorithm.microcoder_grpo.max_response_length == 4096
    assert config.actor_rollout_ref.actor.clip_ratio_high > config.actor_rollout_ref.actor.clip_ratio_low
    assert config.trainer.v1.trainer_mode == "nouscoder_sync"


def test_debug_64_is_dapo_32k_on_one_node() -> None:
    """NousCoder "Additional Training Tricks": same hyperparameters, 64 problems, one node."""
    debug, reference = composed("debug_64"), composed("dapo_32k")
    for key in [*NOUSCODER_TABLE_3, "actor_rollout_ref.actor.policy_loss.loss_mode", "data.max_response_length"]:
        assert OmegaConf.select(debug, key) == OmegaConf.select(reference, key), key
    assert _total_gpus(debug) == 8 and debug.trainer.nnodes == 1
    assert debug.data.train_files.endswith("debug_64/train.parquet")
    assert debug.data.train_batch_size // debug.actor_rollout_ref.actor.ppo_mini_batch_size == PPO_OFF_POLICY_K
    assert debug.nouscoder.online_filter.enable is False


@pytest.mark.parametrize("name", ALL_CONFIGS)
def test_required_values_fail_loudly_when_missing(name: str) -> None:
    """A value the user must give raises, naming the key, instead of silently keeping a base value."""
    config = OmegaConf.create(_composed_yaml(name, with_required=False))
    required = [override.partition("=")[0] for override in REQUIRED_OVERRIDES.get(name, [])]
    for key in required:
        with pytest.raises(InterpolationResolutionError, match=rf"{re.escape(key)} is required and was not given"):
            OmegaConf.select(config, key)
        with pytest.raises(InterpolationResolutionError, match="is required"):
            check_required_values(config)
    if not required:
        check_required_values(config)  # nothing else is required


def test_eval_model_is_not_the_base_model() -> None:
    """The bug this guards: `model.path: ???` merged over the base kept Qwen/Qwen3-14B and evaluated it."""
    assert composed("eval_lcb_80k").actor_rollout_ref.model.path == "/models/best"


@pytest.mark.parametrize("name", TRAINING_CONFIGS)
def test_training_rewards_use_the_tolerant_comparison(name: str) -> None:
    """MicroCoder-Evaluator's comparison for training (section 4); exact LiveCodeBench rule for evaluation."""
    assert composed(name).reward.custom_reward_function.reward_kwargs.compare_mode == "tolerant"


def test_the_comparison_setting_reaches_the_grader() -> None:
    """`print(a / b)` against an expected 0.333333333: +1 with the training reward's settings, -1 with evaluation's."""
    problem = {"tests": [{"input": "1 3\n", "output": "0.333333333\n", "testtype": "stdin"}]}
    solution = "```python\na, b = map(int, input().split())\nprint(a / b)\n```"
    for name, expected in (("dapo_32k", 1.0), ("microcoder_4k", 1.0), ("eval_lcb_80k", -1.0)):
        reward_kwargs = dict(composed(name).reward.custom_reward_function.reward_kwargs)
        grader_kwargs = {key: value for key, value in reward_kwargs.items() if key not in pool_keys(reward_kwargs)}
        assert compute_score("livecodebench", solution, json.dumps(problem), **grader_kwargs)["score"] == expected, name


@pytest.mark.parametrize(
    ("name", "samples"), [("eval_lcb_40k", 8), ("eval_lcb_80k", 8), ("eval_lcb_v5_64k", 8), ("eval_microcoder_8k", 4)]
)
def test_evaluations_use_the_lcb_rule_and_one_stated_n(name: str, samples: int) -> None:
    config = composed(name)
    assert config.reward.custom_reward_function.reward_kwargs.compare_mode == "lcb"
    assert config.actor_rollout_ref.rollout.val_kwargs.n == samples
    assert (config.trainer.val_only, config.trainer.v1.trainer_mode) == (True, "sync")
    assert config.trainer.nnodes * config.trainer.n_gpus_per_node == 48  # every GPU of the allocation


def test_offline_filter_samples_as_training_and_grades_as_training() -> None:
    """Stage 0 (NousCoder "Additional Training Tricks"): G = 8 rollouts per problem with the training temperature and
    top-p (Table 3: 1.0 / 1.0) and the training reward's comparison, validation only on every GPU."""
    config, training = composed("offline_filter"), composed("dapo_32k")
    val = config.actor_rollout_ref.rollout.val_kwargs
    assert (val.n, val.temperature, val.top_p) == (training.actor_rollout_ref.rollout.n, 1.0, 1.0)
    assert config.reward.custom_reward_function.reward_kwargs.compare_mode == "tolerant"
    assert (config.trainer.val_only, config.trainer.v1.trainer_mode) == (True, "sync")
    assert config.trainer.nnodes * config.trainer.n_gpus_per_node == 48
    assert config.data.val_files == "data/deepcoder_mix/train.parquet"
    assert config.nouscoder.validation.require_every_problem is False  # overlong training prompts are dropped anyway
    assert config.actor_rollout_ref.rollout.max_model_len == config.data.max_prompt_length + 16_384


def test_eval_lcb_40k_rescored_at_qwen3_context() -> None:
    """NousCoder: the 32k checkpoint that starts the 40k stage is chosen by its LiveCodeBench score at 40k."""
    config = composed("eval_lcb_40k")
    assert config.data.max_prompt_length + config.data.max_response_length == QWEN3_14B_CONTEXT
    assert config.actor_rollout_ref.rollout.max_model_len == QWEN3_14B_CONTEXT
    assert "rope_scaling" not in config.actor_rollout_ref.model.override_config


def test_dapo_clip_ratios_are_set_in_one_place() -> None:
    """Only the objective files (and the DeepCoder / MicroCoder experiments, which have no objective file) do."""
    setters = sorted(
        str(path.relative_to(config_dir()))
        for path in config_dir().rglob("*.yaml")
        if "clip_ratio_high" in path.read_text()
    )
    assert setters == [
        "_deepcoder.yaml",
        "microcoder_4k.yaml",
        "objective/dapo.yaml",
        "objective/gspo.yaml",
        "objective/gspo_plus.yaml",
    ]


def test_eval_lcb_v5_64k_is_deepcoder_s_evaluation() -> None:
    """DeepCoder-14B's card: LiveCodeBench v5 (8/1/24-2/1/25) at 64K; rLLM's eval_model.sh: response_length 65536,
    temperature 0.6, top-p 0.95; no YaRN (DeepSeek-R1-Distill-Qwen-14B has 131,072 positions)."""
    config = composed("eval_lcb_v5_64k")
    assert config.data.max_response_length == 65_536 and config.data.val_files == "data/benchmarks/lcb_v5.parquet"
    assert config.actor_rollout_ref.rollout.max_model_len == config.data.max_prompt_length + 65_536
    assert "rope_scaling" not in config.actor_rollout_ref.model.override_config
    val = config.actor_rollout_ref.rollout.val_kwargs
    assert (val.temperature, val.top_p) == (0.6, 0.95)


def test_eval_lcb_80k_uses_yarn_factor_2() -> None:
    """YaRN factor 2 over 40,960 positions -> 81,920 tokens; Table 3 evaluation sampling."""
    config = composed("eval_lcb_80k")
    rope = config.actor_rollout_ref.model.override_config.rope_scaling
    assert (rope.rope_type, rope.factor, rope.original_max_position_embeddings) == ("yarn", 2.0, QWEN3_14B_CONTEXT)
    assert rope.factor * rope.original_max_position_embeddings == 81_920
    assert config.actor_rollout_ref.rollout.engine_kwargs.vllm.hf_overrides.rope_scaling == rope
    assert config.actor_rollout_ref.rollout.max_model_len == 81_920
    assert config.data.max_prompt_length + config.data.max_response_length == 81_920
    assert config.trainer.val_only is True
    assert config.actor_rollout_ref.rollout.val_kwargs.temperature == 0.6
    assert config.actor_rollout_ref.rollout.val_kwargs.top_p == 0.95


@pytest.mark.parametrize("name", TRAINING_CONFIGS)
def test_training_configs_use_the_cluster_shape(name: str) -> None:
    config = composed(name)
    # vLLM reserves KV cache for max_model_len; it must be the prompt + response budget, not the model's maximum
    assert (
        config.actor_rollout_ref.rollout.max_model_len
        == config.data.max_prompt_length + config.data.max_response_length
    )
    expected_gpus = 8 if name == "debug_64" else 48  # 6 nodes x 8 GPUs (NousCoder blog); debug_64: one node
    assert _total_gpus(config) == expected_gpus
    assert "file" in config.trainer.logger  # select_checkpoint reads the file logger
    assert config.nouscoder.metrics.enable is True  # R2's extensions node landed under `nouscoder`


def test_every_config_composes_without_missing_values() -> None:
    for name in ALL_CONFIGS:
        missing = OmegaConf.missing_keys(composed(name))
        # verl leaves the reward-model rollout name unset (??? in its own config); nothing of ours may be missing
        assert {key for key in missing if not key.startswith("reward.reward_model")} == set(), name


PLUGIN_OPTION_PARSERS = {"grpo_plus": GrpoPlusOptions, "microcoder_grpo": MicrocoderOptions}


@pytest.mark.parametrize("name", ALL_CONFIGS)
def test_config_passes_verl_validation(name: str) -> None:
    config = composed(name)
    assert not need_reference_policy(config) and not need_critic(config)  # KL 0, GRPO: actor only
    validate_config(config, use_reference_policy=False, use_critic=False)

    actor = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    assert isinstance(actor, FSDPActorConfig)
    # the loss reads the TIS cap C from here (verl_ext/README.md); verl keeps it as a plain mapping
    assert (
        actor.policy_loss.rollout_correction["rollout_is_threshold"]
        == config.algorithm.rollout_correction.rollout_is_threshold
    )
    assert isinstance(omega_conf_to_dataclass(config.actor_rollout_ref.rollout), RolloutConfig)
    # AlgoConfig rejects unknown keys; verl's V1 trainer passes `algorithm` to estimators as a DictConfig and
    # never converts it, so the plugin's own node is checked by the plugin's parser instead.
    estimator = config.algorithm.adv_estimator
    plugin_nodes = set(PLUGIN_OPTION_PARSERS)
    algorithm = OmegaConf.masked_copy(config.algorithm, [k for k in config.algorithm if k not in plugin_nodes])
    omega_conf_to_dataclass(algorithm)
    PLUGIN_OPTION_PARSERS[estimator].from_config(config.algorithm)

    get_adv_estimator_fn(estimator)  # registered by verl_ext on `import verl`
    get_policy_loss_fn(config.actor_rollout_ref.actor.policy_loss.loss_mode)
    # The trainer's constructor runs verl's mode checks (separate_async: train_batch_size = parameter_sync_step x
    # ppo_mini_batch_size, a standalone rollout pool, a non-naive weight transfer) and builds the replay buffer;
    # GPUs are first needed by `init()`, which is not called here.
    trainer = get_trainer_cls(config.trainer.v1.trainer_mode)(config=config)
    expected_sync_steps = PPO_OFF_POLICY_K if trainer.trainer_mode == "separate_async" else 1
    assert trainer.parameter_sync_step == expected_sync_steps


@pytest.mark.parametrize("name", ["dapo_32k", "dapo_40k", "gspo_32k", "gspo_40k", "gspo_plus_32k", "gspo_plus_40k"])
def test_separate_async_constraints_hold_for_48_gpus(name: str) -> None:
    config = composed(name)
    rollout = config.actor_rollout_ref.rollout
    separate_async = config.trainer.v1.separate_async
    assert (
        config.data.train_batch_size
        == separate_async.parameter_sync_step * config.actor_rollout_ref.actor.ppo_mini_batch_size
    )
    assert rollout.nnodes > 0 and rollout.n_gpus_per_node > 0
    assert rollout.checkpoint_engine.backend != "naive"
    assert config.trainer.nnodes * config.trainer.n_gpus_per_node + rollout.nnodes * rollout.n_gpus_per_node == 48
    # vLLM replicas tile the rollout pool; Ulysses groups tile the trainer's data-parallel ranks
    assert (rollout.nnodes * rollout.n_gpus_per_node) % rollout.tensor_model_parallel_size == 0
    trainer_gpus = config.trainer.nnodes * config.trainer.n_gpus_per_node
    assert trainer_gpus % config.actor_rollout_ref.actor.ulysses_sequence_parallel_size == 0


@pytest.mark.parametrize("name", ["dapo_32k", "debug_cpu", "eval_lcb_80k"])
def test_hydra_keeps_its_run_record_under_the_run_directory(name: str) -> None:
    """hydra's own output (composed config, overrides, log) goes to RUN_DIR/hydra/<time>/, not ./outputs/."""
    overrides = [*REQUIRED_OVERRIDES.get(name, []), "trainer.default_local_dir=/runs/x"]
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        config = compose(config_name=name, overrides=overrides, return_hydra_config=True)
        run_dir = str(config.hydra.run.dir)
    assert re.fullmatch(r"/runs/x/hydra/\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d", run_dir), run_dir

"""YaRN rope scaling of a config whose context is longer than the model's positions, derived from the model.

A config whose `rollout.max_model_len` L exceeds the model's `max_position_embeddings` needs YaRN: factor
L / native and `original_max_position_embeddings` = native, the positions the model was trained on
(`model_spec.documented_native_context`: for Qwen3, 32,768, as its model cards give YaRN), with the model's own
`rope_theta` (transformers 5 replaces the rope parameters whole, so it is restated), given both to verl's model
config (`actor_rollout_ref.model.override_config`) and to vLLM, which reads config.json itself
(`actor_rollout_ref.rollout.engine_kwargs.vllm.hf_overrides`). A config within the model's positions needs none,
and any rope scaling it carries (written for another model) is removed.

Qwen3-14B at 81,920 tokens (eval_lcb_80k): factor 81,920 / 32,768 = 2.5 (Qwen's documented base; a factor of 2 over
the 40,960 positions of config.json would stretch positions the model never saw at that spacing).
"""

from __future__ import annotations

from model_spec import ModelSpec
from omegaconf import DictConfig, OmegaConf

MODEL_OVERRIDES = "actor_rollout_ref.model.override_config"
VLLM_OVERRIDES = "actor_rollout_ref.rollout.engine_kwargs.vllm.hf_overrides"


def wanted_overrides(config: DictConfig, model: ModelSpec) -> dict[str, object]:
    """The positions and rope settings `config` needs for `model` (empty: none)."""
    length = int(config.actor_rollout_ref.rollout.max_model_len)
    if length <= model.max_positions:
        return {}
    return {
        "max_position_embeddings": length,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": length / model.native_context,
            "original_max_position_embeddings": model.native_context,
            "rope_theta": model.rope_theta,
        },
    }


def current_overrides(config: DictConfig, key: str) -> dict:
    node = OmegaConf.select(config, key)
    return OmegaConf.to_container(node) if node is not None else {}  # type: ignore[return-value]


def yarn_overrides(config: DictConfig, model: ModelSpec) -> list[str]:
    """Hydra overrides that give `config` the rope settings `model` needs; [] when it has them already."""
    wanted = wanted_overrides(config, model)
    overrides = []
    for key in (MODEL_OVERRIDES, VLLM_OVERRIDES):
        current = current_overrides(config, key)
        relevant = {name: current.get(name) for name in ("max_position_embeddings", "rope_scaling") if name in current}
        if relevant == wanted:
            continue
        if not wanted:
            overrides += [f"~{key}.{name}" for name in relevant]
            continue
        scaling = wanted["rope_scaling"]
        assert isinstance(scaling, dict)
        overrides.append(f"++{key}.max_position_embeddings={wanted['max_position_embeddings']}")
        overrides += [f"++{key}.rope_scaling.{name}={value}" for name, value in scaling.items()]
    return overrides


def describe(config: DictConfig, model: ModelSpec) -> str:
    wanted = wanted_overrides(config, model)
    length = int(config.actor_rollout_ref.rollout.max_model_len)
    if not wanted:
        return f"{length:,} tokens within {model.name}'s {model.max_positions:,} positions: no rope scaling"
    scaling = wanted["rope_scaling"]
    assert isinstance(scaling, dict)
    return (
        f"{length:,} tokens: YaRN factor {scaling['factor']:g} over {model.name}'s {model.native_context:,} native "
        f"positions (rope_theta {model.rope_theta:g})"
    )

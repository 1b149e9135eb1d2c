"""The multi-turn configs: dapo_32k_multi_turn is dapo_32k plus the loop; the debug_cpu overlay scripts the turns."""

from __future__ import annotations

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import validate_config

from recipe.nouscoder.main import EXTERNAL_MODULES_ENV, config_dir, load_in_ray_processes
from recipe.nouscoder.multi_turn import AGENT_LOOP_MODULE, AGENT_NAME, uses_multi_turn
from recipe.nouscoder.multi_turn.options import MultiTurnOptions


def composed(name: str, *overrides: str):
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        config = compose(config_name=name, overrides=list(overrides))
    OmegaConf.resolve(config)
    return config


def flat(config, prefix: str = "") -> dict:
    items = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            items.update(flat(value, path + "."))
        else:
            items[path] = value
    return items


def test_dapo_32k_multi_turn_is_dapo_32k_with_the_loop_and_public_test_data():
    single = flat(OmegaConf.to_container(composed("dapo_32k")))
    multi_config = composed("dapo_32k_multi_turn")
    multi = flat(OmegaConf.to_container(multi_config))
    changed = {key for key in single.keys() | multi.keys() if single.get(key) != multi.get(key)}
    assert {key for key in changed if not key.startswith("nouscoder.multi_turn.")} == {
        "actor_rollout_ref.rollout.agent.default_agent_loop",
        "data.train_files",
        "data.val_files",
        "trainer.experiment_name",
        "trainer.default_local_dir",
        "actor_rollout_ref.rollout.trace.experiment_name",
    }
    assert uses_multi_turn(multi_config) and multi["actor_rollout_ref.rollout.agent.default_agent_loop"] == AGENT_NAME
    options = MultiTurnOptions.from_config(multi_config)
    assert options.max_turns == 3 and options.token_budget(multi_config.data.max_response_length) == 32768
    validate_config(
        multi_config, use_reference_policy=need_reference_policy(multi_config), use_critic=need_critic(multi_config)
    )


def test_debug_cpu_overlay_scripts_two_turns_on_the_sample_with_public_tests():
    config = composed("debug_cpu", "+multi_turn=debug_cpu")
    assert uses_multi_turn(config) and not uses_multi_turn(composed("debug_cpu"))
    assert MultiTurnOptions.from_config(config).max_turns == 2
    assert list(config.nouscoder.cpu.sample_data_args) == ["--public-tests", "1"]
    assert list(config.nouscoder.cpu.known_answers.by_turn) == ["failing", "passing"]
    assert config.data.train_files.endswith("sample_data_public1/train.parquet")


def test_main_loads_the_loop_in_every_ray_process(monkeypatch):
    monkeypatch.setenv(EXTERNAL_MODULES_ENV, "some.plugin")
    config = composed("dapo_32k_multi_turn")
    load_in_ray_processes(config, AGENT_LOOP_MODULE)
    load_in_ray_processes(config, AGENT_LOOP_MODULE)
    env_vars = config.ray_kwargs.ray_init.runtime_env.env_vars
    assert env_vars[EXTERNAL_MODULES_ENV] == f"some.plugin,{AGENT_LOOP_MODULE}"

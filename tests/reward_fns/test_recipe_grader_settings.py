"""The recipe's configs grade with the NousCoder limits and strict isolation, through verl's own reward loader.

On a node whose sandbox is incomplete, the reward function verl loads from a composed config refuses to grade
(the run stops) instead of running model code half-isolated.
"""

import json
import os
import subprocess
import sys

import pytest
from hydra import compose, initialize_config_dir
from verl.trainer.ppo.reward import get_custom_reward_fn

from reward_fns.sandbox.isolation import DISABLE_ENV
from reward_fns.score import grader_config
from reward_fns.types import GraderConfig

CONFIGS = sorted(path[:-5] for path in os.listdir(os.path.join(os.path.dirname(__file__), "../../configs"))
                 if path.endswith(".yaml") and not path.startswith("_") and path != "nouscoder_base.yaml")
PRODUCTION = GraderConfig(time_limit_s=15.0, memory_limit_mb=4096, compare_mode="lcb", isolation="strict")
GROUND_TRUTH = json.dumps({"tests": [{"input": "2 3\n", "output": "5\n", "testtype": "stdin"}]})
RESPONSE = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"


def composed(name: str):
    from recipe.nouscoder.main import config_dir, prepare_config

    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        config = compose(config_name=name, overrides=["actor_rollout_ref.model.path=/models/any"])
    prepare_config(config)
    return config


@pytest.mark.parametrize("name", CONFIGS)
def test_config_shows_and_uses_the_production_grader_settings(name):
    config = composed(name)
    assert grader_config(config.reward.custom_reward_function.reward_kwargs, environ={}) == PRODUCTION
    reward = get_custom_reward_fn(config)  # verl's loader: the file path, the name, the reward_kwargs
    scored = reward(data_source="livecodebench", solution_str=RESPONSE, ground_truth=GROUND_TRUTH)
    assert scored["verdict"] == "accepted" and scored["score"] == 1.0


REFUSING_NODE = f"""
import sys
sys.path.insert(0, {os.path.dirname(__file__)!r})
from test_recipe_grader_settings import GROUND_TRUTH, RESPONSE, composed
from verl.trainer.ppo.reward import get_custom_reward_fn
reward = get_custom_reward_fn(composed("dapo_32k"))
try:
    reward(data_source="livecodebench", solution_str=RESPONSE, ground_truth=GROUND_TRUTH)
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_on_a_node_without_namespaces_the_configured_reward_refuses_to_grade():
    completed = subprocess.run([sys.executable, "-c", REFUSING_NODE], capture_output=True, text=True, check=True,
                               env={**os.environ, DISABLE_ENV: "namespaces"}, timeout=300)
    assert completed.stdout.startswith("IsolationUnavailableError isolation='strict'"), completed.stdout
    assert "network_namespace" in completed.stdout

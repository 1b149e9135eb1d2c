"""The recipe's configs grade with the NousCoder limits and strict isolation, through verl's own reward loader.

Both reward paths read the one ``reward.custom_reward_function.reward_kwargs``: the default Ray pool
(``pkg://reward_fns.async_score``, ``pool_*`` keys for the pool, the rest for the grader) and the documented
switch to grading in verl's reward-loop workers (``pkg://reward_fns.verl_reward``). On a node whose sandbox is
incomplete both refuse to grade (the run stops) instead of running model code half-isolated.
"""

import dataclasses
import os
import subprocess
import sys

import pytest
from hydra import compose, initialize_config_dir
from verl.trainer.ppo.reward import get_custom_reward_fn

from reward_fns.ray_pool.config import pool_keys
from reward_fns.sandbox.isolation import DISABLE_ENV
from reward_fns.score import grader_config
from reward_fns.types import GraderConfig

CONFIG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "configs")
CONFIGS = sorted(
    name[:-5]
    for name in os.listdir(CONFIG_DIR)
    if name.endswith(".yaml") and not name.startswith("_") and name != "nouscoder_base.yaml"
)
PRODUCTION = GraderConfig(time_limit_s=15.0, memory_limit_mb=4096, isolation="strict")
"""The NousCoder limits with strict isolation; the compare mode is each config's own (tolerant for training, lcb for
LiveCodeBench evaluation), and shown in it."""
GROUND_TRUTH = '{"tests": [{"input": "2 3\\n", "output": "5\\n", "testtype": "stdin"}]}'
RESPONSE = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
SYNC_PATH = "reward.custom_reward_function.path=pkg://reward_fns.verl_reward"


def composed(name: str, *overrides: str):
    with initialize_config_dir(config_dir=os.path.abspath(CONFIG_DIR), version_base=None):
        return compose(config_name=name, overrides=list(overrides))


@pytest.mark.parametrize("name", CONFIGS)
def test_config_shows_the_production_grader_settings(name):
    settings = composed(name).reward.custom_reward_function.reward_kwargs
    grader = {key: value for key, value in settings.items() if key not in pool_keys(settings)}
    assert {"time_limit_s", "memory_limit_mb", "compare_mode", "isolation"} <= set(grader), sorted(grader)
    assert grader_config(grader, environ={}) == dataclasses.replace(PRODUCTION, compare_mode=grader["compare_mode"])


def test_the_documented_switch_to_grading_in_verls_workers_uses_the_same_settings():
    reward = get_custom_reward_fn(composed("dapo_32k", SYNC_PATH))  # verl's loader: path, name, reward_kwargs
    scored = reward(data_source="livecodebench", solution_str=RESPONSE, ground_truth=GROUND_TRUTH)
    assert scored["verdict"] == "accepted" and scored["score"] == 1.0


REFUSING_NODE = f"""
import asyncio, sys
import ray
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
from test_recipe_grader_settings import GROUND_TRUTH, RESPONSE, SYNC_PATH, composed
from verl.trainer.ppo.reward import get_custom_reward_fn
sync = get_custom_reward_fn(composed("dapo_32k", SYNC_PATH))
try:
    sync(data_source="livecodebench", solution_str=RESPONSE, ground_truth=GROUND_TRUTH)
except Exception as exc:
    print("verl_reward:", type(exc).__name__, exc)
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)  # workers inherit the disabled namespaces
pool = get_custom_reward_fn(composed("dapo_32k", "+reward.custom_reward_function.reward_kwargs.pool_workers=1",
                                     "reward.custom_reward_function.reward_kwargs.pool_reserved_cpus_per_node=0"))
try:
    print("async_score: graded", asyncio.run(pool(data_source="livecodebench", solution_str=RESPONSE,
                                                 ground_truth=GROUND_TRUTH)))
except Exception as exc:
    print("async_score:", type(exc).__name__, exc)
ray.shutdown()
"""


@pytest.mark.integration
def test_on_a_node_without_namespaces_both_reward_paths_refuse_to_grade():
    completed = subprocess.run(
        [sys.executable, "-c", REFUSING_NODE],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, DISABLE_ENV: "namespaces"},
        timeout=300,
    )
    lines = completed.stdout.splitlines()
    assert lines[0].startswith("verl_reward: IsolationUnavailableError isolation='strict'"), completed.stdout
    pool_line = next(line for line in lines if line.startswith("async_score:"))  # the first completion stops it
    assert pool_line.startswith("async_score: RayTaskError(RuntimeError)"), completed.stdout
    assert "sandbox workers refuse to start" in completed.stdout and "IsolationUnavailableError" in completed.stdout

"""verl 0.9.1's own reward loop (RewardLoopManager -> RewardLoopWorker actors -> naive manager) scores bundled-sample
completions through ``pkg://reward_fns.async_score`` on a local 2-CPU Ray cluster, also while a grading worker is
killed by its pid mid-batch.

The tokenizer is a byte-level one built here (one token per UTF-8 byte), saved to a temporary folder: nothing is
downloaded.
"""

import hashlib
import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import ray
import torch
import verl
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from verl import DataProto
from verl.experimental.reward_loop.reward_loop import RewardLoopManager
from verl.trainer.ppo.reward import load_reward_manager

import reward_fns.async_score
from data_prep.sample import load_problems, load_solutions
from reward_fns.ray_pool import grading_step_metrics

# verl's reward loop and a local Ray cluster.
pytestmark = pytest.mark.integration

POOL_NAME = "verl_reward_loop_pool"
SAMPLE_VERDICTS = ("accepted", "wrong_answer", "runtime_error", "no_code", "compile_error")
SLOW_ACCEPTED = "```python\nimport time\ntime.sleep(2.5)\nprint(int(input()) * 2)\n```"
DOUBLING = json.dumps({"tests": [{"input": "21\n", "output": "42\n", "testtype": "stdin"}]})
DOUBLING_KEY = hashlib.sha256(DOUBLING.encode("utf-8")).hexdigest()
"""The pool names a problem by the sha256 of its ground-truth text: only the slow rows grade this one."""
SLOW_ROWS = (14, 15)


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> str:
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {"<pad>": 0, "<eos>": 1} | {char: index + 2 for index, char in enumerate(alphabet)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    folder = str(tmp_path_factory.mktemp("byte_tokenizer"))
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<eos>", pad_token="<pad>").save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def reward_loop(tokenizer_dir):
    """verl's RewardLoopManager with two RewardLoopWorker actors, configured with the one documented line."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    config = OmegaConf.create(
        {
            "actor_rollout_ref": {"model": {"path": tokenizer_dir, "tokenizer_path": tokenizer_dir}},
            "reward": {
                "num_workers": 2,
                "custom_reward_function": {
                    "path": "pkg://reward_fns.async_score",  # the line that turns the pool on
                    "name": "compute_score",
                    "reward_kwargs": {"time_limit_s": 4.0, "pool_name": POOL_NAME},
                },
                "reward_manager": {"source": "register", "name": "naive", "module": {"path": None, "name": "unused"}},
                "reward_model": {"enable": False, "enable_resource_pool": False},
            },
        }
    )
    try:
        yield RewardLoopManager(config)
        if POOL_NAME in ray.util.list_named_actors():  # created by the first reward computed, by whichever test
            ray.get(ray.get_actor(POOL_NAME).shutdown.remote())
    finally:
        ray.shutdown()  # always: the next test module starts its own Ray session


@pytest.fixture(scope="module")
def batch(tokenizer_dir) -> tuple[DataProto, list[str]]:
    """Bundled-sample completions (plus two slow accepted ones) as a verl batch, and their expected verdicts."""
    problems = {problem.problem_id: json.dumps(problem.ground_truth) for problem in load_problems(include_large=False)}
    solutions = [solution for solution in load_solutions() if solution.expected_verdict in SAMPLE_VERDICTS][:14]
    rows = [(solution.completion, problems[solution.problem_id], solution.expected_verdict) for solution in solutions]
    rows += [(SLOW_ACCEPTED, DOUBLING, "accepted")] * 2
    tokenizer = PreTrainedTokenizerFast.from_pretrained(tokenizer_dir)
    encoded = [tokenizer.encode(completion, add_special_tokens=False) for completion, _, _ in rows]
    prompt_length, response_length = 3, max(len(ids) for ids in encoded)
    responses = torch.zeros(len(rows), response_length, dtype=torch.long)
    attention_mask = torch.zeros(len(rows), prompt_length + response_length, dtype=torch.long)
    attention_mask[:, :prompt_length] = 1
    for row, ids in enumerate(encoded):
        responses[row, : len(ids)] = torch.tensor(ids)
        attention_mask[row, prompt_length : prompt_length + len(ids)] = 1
    data = DataProto.from_single_dict(
        {
            "prompts": torch.full((len(rows), prompt_length), 2, dtype=torch.long),
            "responses": responses,
            "attention_mask": attention_mask,
            "data_source": np.array(["nous_sample"] * len(rows), dtype=object),
            "reward_model": np.array([{"style": "rule", "ground_truth": truth} for _, truth, _ in rows], dtype=object),
            "extra_info": np.array([{"problem_id": f"row{index}"} for index in range(len(rows))], dtype=object),
        }
    )
    return data, [expected for _, _, expected in rows]


def test_one_config_line_makes_verls_default_manager_await_the_pool_function():
    with initialize_config_dir(
        config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer", "config"), version_base=None
    ):
        config = compose(
            config_name="ppo_trainer", overrides=["reward.custom_reward_function.path=pkg://reward_fns.async_score"]
        )
    manager = load_reward_manager(config, tokenizer=None)
    assert type(manager).__name__ == "NaiveRewardManager"
    assert manager.is_async_reward_score  # awaited on the reward loop's event loop, not run in its thread pool
    assert manager.compute_score.args[0] is reward_fns.async_score.compute_score


def sequence_rewards(output: DataProto) -> list[float]:
    return output.batch["rm_scores"].sum(dim=-1).tolist()


def test_verl_reward_loop_scores_the_sample_through_the_pool(reward_loop, batch):
    data, expected = batch
    output = reward_loop.compute_rm_score(data)
    assert output.non_tensor_batch["verdict"].tolist() == expected
    assert sequence_rewards(output) == [1.0 if verdict == "accepted" else -1.0 for verdict in expected]
    keys = output.meta_info["reward_extra_keys"]
    assert {"tests_executed", "latency_s", "queue_depth", "regraded", "worker_restarts"} <= set(keys)
    metrics = grading_step_metrics({key: output.non_tensor_batch[key] for key in keys})
    assert metrics["grading/verdict/accepted"] == expected.count("accepted")
    assert metrics["grading/internal_errors"] == 0


def calls_in_flight() -> list[dict]:
    """The pool's calls in flight (none before the first reward of the module creates the pool)."""
    if POOL_NAME not in ray.util.list_named_actors():
        return []
    return ray.get(ray.get_actor(POOL_NAME).busy_workers.remote())


def kill_a_worker_grading(problem_key: str, batch_done: threading.Event) -> int:
    """SIGKILL the worker whose call on ``problem_key`` has run 0.3 s (its program sleeps 2.5 s: the kill lands
    mid-grade, even if polling is slow on a loaded machine); its pid."""
    while not batch_done.is_set():
        for call in calls_in_flight():
            if call["problem_key"] == problem_key and call["pid"] is not None and call["running_s"] > 0.3:
                os.kill(call["pid"], signal.SIGKILL)
                return call["pid"]
        time.sleep(0.02)
    raise AssertionError(f"no grading worker was busy on problem {problem_key[:12]} while the batch was graded")


def test_killing_a_grading_worker_mid_batch_loses_no_reward(reward_loop, batch):
    data, expected = batch
    with ThreadPoolExecutor(max_workers=1) as pool:  # .result() re-raises whatever failed in the killer
        batch_done = threading.Event()
        killer = pool.submit(kill_a_worker_grading, DOUBLING_KEY, batch_done)
        try:
            output = reward_loop.compute_rm_score(data)
        finally:
            batch_done.set()
        killed_pid = killer.result()
    assert killed_pid > 0
    assert output.non_tensor_batch["verdict"].tolist() == expected
    assert sequence_rewards(output) == [1.0 if verdict == "accepted" else -1.0 for verdict in expected]
    regraded_rows = [row for row, regraded in enumerate(output.non_tensor_batch["regraded"].tolist()) if regraded]
    assert len(regraded_rows) == 1 and regraded_rows[0] in SLOW_ROWS  # exactly the killed completion
    keys = output.meta_info["reward_extra_keys"]
    metrics = grading_step_metrics({key: output.non_tensor_batch[key] for key in keys})
    assert metrics["grading/regraded"] == 1
    assert metrics["grading/worker_restarts"] >= 1
    assert metrics["grading/internal_errors"] == 0

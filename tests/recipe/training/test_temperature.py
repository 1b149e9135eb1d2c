"""Staged temperature: step boundaries, and the temperature reaching the sampling params verl's agent-loop
worker hands to the rollout server, driven through verl's real AgentLoopWorkerTQ.generate_sequences."""

import asyncio
import json
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, register
from verl.trainer.ppo.v1 import agent_loop_tq
from verl.utils import tensordict_utils as tu

from recipe.nouscoder.selection.pick_temperature import (
    TemperatureResult,
    main,
    measure_temperature,
    recommend_temperature,
    vllm_generator,
)
from recipe.nouscoder.training.temperature import (
    TEMPERATURE_FIELD,
    StagedTemperatureAgentLoopManager,
    StagedTemperatureAgentLoopWorker,
    TemperatureSchedule,
    TemperatureStage,
    attach_temperature,
)

STAGES = [
    {"start_step": 1, "temperature": 0.6},
    {"start_step": 3, "temperature": 1.0},
    {"start_step": 10, "temperature": 1.3},
]


def test_schedule_is_staged_at_step_boundaries():
    schedule = TemperatureSchedule.from_config(STAGES, default_temperature=9.9)
    expected = {1: 0.6, 2: 0.6, 3: 1.0, 9: 1.0, 10: 1.3, 500: 1.3}
    assert {step: schedule.temperature_at(step) for step in expected} == expected
    assert TemperatureSchedule.from_config([], default_temperature=0.8).temperature_at(77) == 0.8


@pytest.mark.parametrize(
    "stages",
    [[TemperatureStage(2, 1.0)], [TemperatureStage(1, 1.0), TemperatureStage(1, 1.2)], [TemperatureStage(1, 0.0)]],
)
def test_schedule_rejects_bad_stages(stages):
    with pytest.raises(ValueError, match="temperature"):
        TemperatureSchedule(stages)


class RecordingServer:
    """Stands in for the LLM server client: records the sampling params of every generate request."""

    def __init__(self):
        self.requests: list[dict] = []

    async def generate(self, *, request_id, prompt_ids, sampling_params, **kwargs):
        self.requests.append(dict(sampling_params))


@register("nouscoder_recording_agent")
class RecordingAgentLoop(AgentLoopBase):
    """Minimal agent loop: one generate call with the sampling params it was given."""

    def __init__(self, server_manager, **kwargs):
        self.server_manager = server_manager

    async def run(self, sampling_params, **kwargs):
        await self.server_manager.generate(request_id="r", prompt_ids=[1, 2], sampling_params=sampling_params)
        return "done"


def make_worker(server: RecordingServer) -> StagedTemperatureAgentLoopWorker:
    """The worker class as Ray would run it, with only the state generate_sequences uses (no engines)."""
    worker = object.__new__(StagedTemperatureAgentLoopWorker)
    worker.config = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {
                    "temperature": 0.6,
                    "top_p": 1.0,
                    "top_k": -1,
                    "calculate_log_probs": False,
                    "n": 2,
                    "val_kwargs": {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "n": 1},
                    "agent": {"default_agent_loop": "nouscoder_recording_agent"},
                }
            },
            "data": {},
        }
    )
    worker.background_tasks = set()
    worker.llm_client = server
    worker.tokenizer = worker.processor = worker.hf_model_type = worker.dataset_cls = None
    worker.tools = []

    async def no_postprocess(output, validate, **kwargs):
        assert TEMPERATURE_FIELD not in kwargs  # the field is consumed, not stored with the trajectory
        return None

    worker._agent_loop_postprocess = no_postprocess
    return worker


def prompt_batch(global_steps: int, validate: bool = False):
    batch = tu.get_tensordict(
        {
            "raw_prompt": np.array(
                [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]], dtype=object
            ),
            "index": np.array([0, 1]),
            "uid": np.array(["u0", "u1"], dtype=object),
            "dummy_tensor": torch.zeros(2, 1, dtype=torch.uint8),
        }
    )
    tu.assign_non_tensor_data(batch, "global_steps", global_steps)
    if validate:
        tu.assign_non_tensor_data(batch, "validate", True)
    return batch


async def run_generation(worker, batch) -> None:
    await worker.generate_sequences(batch)
    await asyncio.gather(*list(worker.background_tasks))


def test_staged_temperature_reaches_rollout_sampling_params(monkeypatch):
    async def fake_kv_put(**kwargs):
        return None

    monkeypatch.setattr(agent_loop_tq.tq, "async_kv_put", fake_kv_put)
    schedule = TemperatureSchedule.from_config(STAGES, default_temperature=0.6)
    server = RecordingServer()
    worker = make_worker(server)

    for step in (2, 3, 10):
        server.requests.clear()
        asyncio.run(run_generation(worker, attach_temperature(prompt_batch(step), schedule.temperature_at(step))))
        # 2 prompts x rollout.n=2 requests, all at the stage's temperature (config says 0.6)
        assert [request["temperature"] for request in server.requests] == [schedule.temperature_at(step)] * 4

    server.requests.clear()
    asyncio.run(run_generation(worker, prompt_batch(10, validate=True)))
    assert [request["temperature"] for request in server.requests] == [0.0, 0.0]  # val_kwargs, n=1


def test_manager_runs_the_staged_worker():
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {}, "model": {}}})
    manager = StagedTemperatureAgentLoopManager(config=config, llm_client=None)
    assert manager.agent_loop_workers_class.__ray_actor_class__ is StagedTemperatureAgentLoopWorker


# ------------------------------ pick_temperature (CPU parts; generation replaced) ------------------------------


def test_measure_and_recommend_by_hand():
    # problem 1: [1,2,3] vs [1,2,4] (bigrams: 1 - 1/3); problem 2: identical (0) -> mean 1/3, median 1/3
    result = measure_temperature([[[1, 2, 3], [1, 2, 4]], [[5, 6], [5, 6]]], temperature=0.9, ngram=2)
    assert result.mean_diversity == pytest.approx(1 / 3)
    assert result.median_diversity == pytest.approx(1 / 3)
    assert result.mean_response_tokens == 2.5
    results = [TemperatureResult(t, d, d, 10.0) for t, d in [(0.6, 0.2), (0.8, 0.55), (1.0, 0.7), (1.2, 0.9)]]
    assert recommend_temperature(results, threshold=0.5) == 0.8
    assert recommend_temperature(results, threshold=0.95) is None


def diverging_generator(conversations, temperature, samples):
    """Stand-in for vLLM: the first round((T - 0.6) / 0.2) samples of a problem are unique, the rest identical."""
    distinct = round((temperature - 0.6) / 0.2)  # 0.6 -> 0, 0.8 -> 1, 1.0 -> 2, 1.2 -> 3 distinct samples
    return [
        [
            [1000 + 100 * problem + 10 * sample + k for k in range(4)] if sample < distinct else [1, 2, 3, 4]
            for sample in range(samples)
        ]
        for problem in range(len(conversations))
    ]


def test_pick_temperature_cli_with_replaced_generator(tmp_path, capsys):
    prompts = [[{"role": "user", "content": f"problem {index}"}] for index in range(5)]
    pd.DataFrame({"prompt": prompts, "ability": ["code"] * 5}).to_parquet(tmp_path / "train.parquet")
    argv = [
        "--model",
        "base",
        "--problems",
        str(tmp_path / "train.parquet"),
        "--num-problems",
        "3",
        "--samples",
        "3",
        "--temperatures",
        "1.2,0.6,0.8,1.0",
        "--threshold",
        "0.6",
        "--ngram",
        "2",
        "--out",
        str(tmp_path / "r.json"),
    ]
    report = main(argv, generator=diverging_generator)

    # 3 samples, d distinct + (3-d) identical: pairs 3; distance 1 for every pair with a distinct sample
    by_temperature = {row["temperature"]: row["mean_diversity"] for row in report["results"]}
    assert by_temperature == pytest.approx({0.6: 0.0, 0.8: 2 / 3, 1.0: 1.0, 1.2: 1.0})
    assert report["recommended_temperature"] == 0.8
    assert report["problems"] == 3
    assert json.loads((tmp_path / "r.json").read_text())["recommended_temperature"] == 0.8
    assert "recommended temperature: 0.8" in capsys.readouterr().out


def test_pick_temperature_without_vllm_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ImportError
    with pytest.raises(SystemExit, match="pip install vllm"):
        vllm_generator("base", max_tokens=8, seed=0, tensor_parallel_size=1, gpu_memory_utilization=0.5)

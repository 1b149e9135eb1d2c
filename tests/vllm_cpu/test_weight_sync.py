"""Weight sync into vLLM on CPU, directly: verl's own ServerAdapter streams weights into verl's vLLM server through
the project's worker extension (recipe/nouscoder/cpu/vllm_weight_sync.py), and the server's log-probs then follow.

One vLLM replica is started standalone from the CPU mode's own rollout config (``debug_cpu cpu_rollout=vllm``; it
starts on dummy weights) with verl's multiprocess executor, as on GPUs (the weights cross into a vLLM worker process,
whose queues must be unlinked at shutdown), then synced twice from this process, as a trainer rank syncs it: the tiny
model's weights, then the same weights perturbed. After each sync the server samples with log-probs, and those log-probs
are compared with a forward pass of the model that was synced (fp32 on both sides: ~1e-6) and, after the second,
with the model of the first sync (which they must no longer match). The venv's version facts are checked too.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import tomllib
from pathlib import Path

import pytest
import ray
import torch
from omegaconf import OmegaConf
from transformers import AutoModelForCausalLM, AutoTokenizer
from verl.utils.config import omega_conf_to_dataclass
from verl.workers.config import HFModelConfig
from verl.workers.rollout.replica import get_rollout_replica_class
from verl.workers.rollout.vllm_rollout.vllm_rollout import ServerAdapter

from recipe.nouscoder.cpu import prepare_cpu_run
from recipe.nouscoder.training.rollout_shutdown import shut_down_vllm_engines
from tests.recipe.cpu.test_known_answers import prompt_of
from tests.recipe.multi_turn.test_configs import composed
from tests.vllm_cpu.vllm_runs import leaked_segments, shared_memory_segments

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
ALIAS = REPO / "recipe" / "nouscoder" / "cpu" / "vllm_alias" / "pyproject.toml"
SYNCED_TOLERANCE = 1e-4
"""fp32 vLLM vs fp32 transformers on the same weights: ~1e-6 measured; a missed sync is off by ~1 or more."""
PROBLEMS = ("coin_purse", "mirror_word", "tree_trail")
MULTIPROCESS_EXECUTOR = "actor_rollout_ref.rollout.engine_kwargs.vllm.distributed_executor_backend=mp"
"""verl's own executor, which the GPU configs keep: the model in a vLLM worker process of its own, behind the engine
core's shared-memory queue (the CPU mode's runs keep it in the engine core: configs/cpu_rollout/vllm.yaml)."""


def test_verl_sees_the_pinned_vllm_cpu_under_its_own_version():
    import verl.third_party.vllm as verl_vllm

    project = tomllib.loads(ALIAS.read_text())["project"]
    assert project["dependencies"] == [f"vllm-cpu=={importlib.metadata.version('vllm-cpu')}"]
    assert project["version"] == importlib.metadata.version("vllm") == verl_vllm.vllm_version
    assert project["version"] == f"{importlib.metadata.version('vllm-cpu')}+cpu"
    assert torch.__version__.endswith("+cpu")
    for unused in ("torchvision", "torchaudio", "torchcodec", "triton"):  # the Makefile's VLLM_CPU_UNUSED
        with pytest.raises(importlib.metadata.PackageNotFoundError):
            importlib.metadata.version(unused)


def perturbed(model: torch.nn.Module, scale: float, seed: int) -> torch.nn.Module:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * scale)
    return model


def max_log_prob_error(model: torch.nn.Module, prompt: list[int], output) -> float:
    """Largest difference between the server's log-probs of its sampled tokens and ``model``'s (T = 1)."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt + list(output.token_ids)])).logits[0, len(prompt) - 1 : -1]
    expected = torch.log_softmax(logits.float(), dim=-1)[torch.arange(len(output.token_ids)), list(output.token_ids)]
    return (torch.tensor(output.log_probs) - expected).abs().max().item()


@pytest.fixture(scope="module")
def rollout_setup(tiny_model_dir, tmp_path_factory):
    config = composed(
        "debug_cpu",
        "cpu_rollout=vllm",
        "cpu_layout=separate_async",
        MULTIPROCESS_EXECUTOR,
        f"trainer.default_local_dir={tmp_path_factory.mktemp('weight_sync')}",
        f"actor_rollout_ref.model.path={tiny_model_dir}",
    )
    prepare_cpu_run(config)
    ray_init = OmegaConf.to_container(config.ray_kwargs.ray_init, resolve=True)
    ray.init(
        num_cpus=ray_init["num_cpus"],
        num_gpus=ray_init["num_gpus"],
        runtime_env={"env_vars": ray_init["runtime_env"]["env_vars"]},
        include_dashboard=False,
    )
    try:
        yield omega_conf_to_dataclass(config.actor_rollout_ref.rollout), HFModelConfig(path=str(tiny_model_dir))
    finally:
        ray.shutdown()


def test_synced_weights_are_the_ones_vllm_samples_with(rollout_setup, tiny_model_dir, monkeypatch):
    rollout_config, model_config = rollout_setup
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("RAY_LOCAL_WORLD_SIZE", "1")
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    prompts = [tokenizer(prompt_of(problem))["input_ids"] for problem in PROBLEMS]
    first = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    second = perturbed(AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval(), 0.05, 0)

    async def run():
        replica = get_rollout_replica_class("vllm")(
            replica_rank=0, config=rollout_config, model_config=model_config, gpus_per_node=1
        )
        await replica.init_standalone()
        adapter = ServerAdapter(config=rollout_config, model_config=model_config, device_mesh=None, replica_rank=0)
        assert adapter.use_shm  # the CPU platform has no IPC: buckets go through shared memory

        async def sample(prompt, tag):
            params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True, "max_tokens": 32}
            return await replica.server_handle.generate.remote(
                prompt_ids=prompt, sampling_params=params, request_id=tag
            )

        results = {}
        for step, model in ((1, first), (2, second)):
            await adapter.update_weights(((n, t.detach()) for n, t in model.state_dict().items()), global_steps=step)
            results[step] = await asyncio.gather(*(sample(p, f"s{step}-{i}") for i, p in enumerate(prompts)))
        await asyncio.to_thread(shut_down_vllm_engines, "vllm", [replica])  # as the trainers do at the end
        return results

    before = shared_memory_segments()
    results = asyncio.run(run())
    assert leaked_segments(before) == set()  # vLLM's engine core and worker unlinked their queues

    def errors(step: int, model: torch.nn.Module) -> list[float]:
        return [max_log_prob_error(model, prompt, out) for prompt, out in zip(prompts, results[step], strict=True)]

    errors_by_case = {
        "first sync vs first model": errors(1, first),
        "second sync vs second model": errors(2, second),
        "second sync vs first model": errors(2, first),
    }
    print({name: [f"{value:.2e}" for value in values] for name, values in errors_by_case.items()})
    assert all(output.extra_fields["global_steps"] == step for step in (1, 2) for output in results[step])
    assert max(errors_by_case["first sync vs first model"]) < SYNCED_TOLERANCE
    assert max(errors_by_case["second sync vs second model"]) < SYNCED_TOLERANCE
    assert min(errors_by_case["second sync vs first model"]) > 100 * SYNCED_TOLERANCE

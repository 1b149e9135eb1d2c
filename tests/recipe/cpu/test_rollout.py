"""recipe.nouscoder.cpu.rollout: the hf_cpu generation server (in process, no Ray): batching, log-probs as verl
expects them, prompt log-probs as verl's vLLM server returns them, abort/resume for partial rollout, strict weight
loading."""

import asyncio

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from verl.workers.config import HFModelConfig, RolloutConfig

from recipe.nouscoder.cpu.rollout import CPUEngineOptions, CPUGenerationServer
from tests.recipe.cpu.test_known_answers import prompt_of

LOGPROB_TOLERANCE = 2e-5


def make_server(model_dir, response_length=48, **engine_kwargs) -> CPUGenerationServer:
    config = RolloutConfig(
        name="hf_cpu",
        prompt_length=512,
        response_length=response_length,
        max_num_seqs=8,
        tensor_model_parallel_size=1,
        engine_kwargs={"hf_cpu": engine_kwargs},
    )
    return CPUGenerationServer(config, HFModelConfig(path=str(model_dir)), replica_rank=0)


def prompt_ids(tokenizer, problem_id: str) -> list[int]:
    return tokenizer(prompt_of(problem_id))["input_ids"]


def reference_log_probs(model_dir, prompt: list[int], tokens: list[int], temperature: float) -> list[float]:
    """log softmax(logits / T) of each response token from one unpadded forward pass of the saved model."""
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
    with torch.no_grad():
        logits = model(torch.tensor([prompt + tokens])).logits[0, len(prompt) - 1 : -1]
    return torch.log_softmax(logits / temperature, dim=-1)[torch.arange(len(tokens)), torch.tensor(tokens)].tolist()


def test_concurrent_requests_run_as_one_batch_with_the_models_log_probs(tiny_model_dir):
    server = make_server(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    prompts = [prompt_ids(tokenizer, p) for p in ("coin_purse", "mirror_word", "tree_trail")]
    params = {"temperature": 0.7, "top_p": 1.0, "top_k": -1, "logprobs": True}

    async def run():
        return await asyncio.gather(*(server.generate(p, dict(params), f"r{i}") for i, p in enumerate(prompts)))

    outputs = asyncio.run(run())
    assert server.batches_run == 1
    for prompt, output in zip(prompts, outputs, strict=True):
        assert 1 <= len(output.token_ids) <= 48 and output.stop_reason == "completed"
        assert len(output.log_probs) == len(output.token_ids)
        expected = reference_log_probs(tiny_model_dir, prompt, output.token_ids, temperature=0.7)
        assert output.log_probs == pytest.approx(expected, abs=LOGPROB_TOLERANCE)
        if tokenizer.eos_token_id in output.token_ids:
            assert output.token_ids.index(tokenizer.eos_token_id) == len(output.token_ids) - 1


def test_top_k_and_max_tokens_are_honoured(tiny_model_dir):
    server = make_server(tiny_model_dir)
    prompt = prompt_ids(AutoTokenizer.from_pretrained(tiny_model_dir), "coin_purse")
    output = asyncio.run(
        server.generate(prompt, {"temperature": 1.0, "top_k": 5, "max_tokens": 7, "logprobs": True}, "r")
    )
    assert len(output.token_ids) <= 7
    # processed log-probs over the 5 kept tokens: each is at least log(1/5) above the full-vocabulary value
    full = reference_log_probs(tiny_model_dir, prompt, output.token_ids, temperature=1.0)
    assert all(p > f for p, f in zip(output.log_probs, full, strict=True))


def test_abort_returns_partial_tokens_and_holds_new_requests_until_resume(tiny_model_dir):
    server = make_server(tiny_model_dir, response_length=400)
    prompt = prompt_ids(AutoTokenizer.from_pretrained(tiny_model_dir), "coin_purse")
    params = {"temperature": 1.0, "ignore_eos": True, "logprobs": True}

    async def run():
        running = asyncio.create_task(server.generate(prompt, dict(params), "long"))
        await asyncio.sleep(0.3)
        aborted = await server.abort_all_requests()
        parked = asyncio.create_task(server.generate(prompt, {**params, "max_tokens": 3}, "parked"))
        partial = await running
        await asyncio.sleep(0.2)
        assert not parked.done()  # held while the weights would be synced
        await server.resume_generation()
        return aborted, partial, await parked

    aborted, partial, parked = asyncio.run(run())
    assert aborted["aborted_count"] == 1
    assert partial.stop_reason == "aborted" and 0 < len(partial.token_ids) < 400
    assert len(partial.log_probs) == len(partial.token_ids)
    assert parked.stop_reason == "completed" and len(parked.token_ids) == 3


def test_weight_loading_is_strict_and_versioned(tiny_model_dir):
    server = make_server(tiny_model_dir)
    state = {name: torch.zeros_like(tensor) for name, tensor in server.model.state_dict().items()}
    assert asyncio.run(server.load_weights(state, global_steps=4)) == 1
    assert server.get_state() == {"weight_version": 1, "global_steps": 4, "queued": 0}
    assert all(torch.count_nonzero(tensor) == 0 for tensor in server.model.state_dict().values())
    state.pop("lm_head.weight")
    with pytest.raises(ValueError, match="missing"):
        asyncio.run(server.load_weights(state))


def test_prompt_log_probs_are_the_models_in_verls_format(tiny_model_dir):
    server = make_server(tiny_model_dir)
    prompt = prompt_ids(AutoTokenizer.from_pretrained(tiny_model_dir), "coin_purse")
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32, attn_implementation="eager")
    with torch.no_grad():
        expected = torch.log_softmax(model(torch.tensor([prompt])).logits[0, :-1], dim=-1)

    async def run():
        requests = [{"prompt_logprobs": 0}, {"prompt_logprobs": 3}, {}]
        return [(await server.generate(prompt, {"max_tokens": 1, **extra}, "r")).extra_fields for extra in requests]

    own, top, plain = asyncio.run(run())
    assert len(own["prompt_logprobs"]) == len(own["prompt_ids"]) == len(prompt)  # + verl's dummy last entry
    assert [row[0] for row in own["prompt_ids"][:-1]] == prompt[1:]
    reference = expected[torch.arange(len(prompt) - 1), torch.tensor(prompt[1:])]
    assert [row[0] for row in own["prompt_logprobs"][:-1]] == pytest.approx(reference.tolist(), abs=LOGPROB_TOLERANCE)
    values, indices = expected.topk(3, dim=-1)
    assert top["prompt_ids"][:-1] == indices.tolist() and top["prompt_ids"][-1] == [0, 0, 0]
    assert torch.tensor(top["prompt_logprobs"][:-1]) == pytest.approx(values, abs=LOGPROB_TOLERANCE)
    assert "prompt_logprobs" not in plain


def test_engine_options_reject_unknown_keys_and_name_the_moved_one():
    with pytest.raises(ValueError, match="engine_kwargs.hf_cpu"):
        CPUEngineOptions.from_rollout_config(RolloutConfig(name="hf_cpu", engine_kwargs={"hf_cpu": {"thread": 2}}))
    moved = {"hf_cpu": {"known_answers": {"fraction": 0.5}}}
    with pytest.raises(ValueError, match="nouscoder.cpu.known_answers.fraction=0.5"):
        CPUEngineOptions.from_rollout_config(RolloutConfig(name="hf_cpu", engine_kwargs=moved))

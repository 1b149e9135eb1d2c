"""recipe.nouscoder.cpu.known_answer_client: known answers placed by the rollout client and scored by the engine.

The engine is the real hf_cpu server, in process, behind a client whose base ``generate`` calls it directly (verl's
clients route the same call through Ray). Its prompt log-probs are unprocessed, as vLLM's are, so the temperature
is applied by the client: the programs' log-probs must equal an independent forward pass at that temperature.
"""

import asyncio

import pytest
from transformers import AutoTokenizer
from verl.workers.rollout.llm_server import LLMServerClient

from recipe.nouscoder.cpu.known_answer_client import (
    KnownAnswersClient,
    KnownAnswersMixin,
    KnownAnswersPartialRolloutClient,
    rollout_client_class,
)
from recipe.nouscoder.extra_fields import ExtraFieldsClient
from tests.recipe.cpu.test_rollout import LOGPROB_TOLERANCE, make_server, prompt_ids, reference_log_probs
from tests.recipe.multi_turn.test_configs import composed


class _DirectClient:
    def __init__(self, config, server):
        self.config = config
        self.server = server

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        return await self.server.generate(prompt_ids, dict(sampling_params), request_id)


class _KnownAnswersDirectClient(KnownAnswersMixin, _DirectClient):
    pass


def client_for(tiny_model_dir, fraction: float):
    config = composed(
        "debug_cpu",
        f"nouscoder.cpu.known_answers.fraction={fraction}",
        f"actor_rollout_ref.model.path={tiny_model_dir}",
    )
    return _KnownAnswersDirectClient(config, make_server(tiny_model_dir, response_length=256))


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_programs_carry_the_models_log_probs_at_the_requests_temperature(tiny_model_dir, temperature):
    client = client_for(tiny_model_dir, fraction=1.0)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    prompt = prompt_ids(tokenizer, "coin_purse")
    expected = client._scoring().book.answers["coin_purse"][0]
    params = {"temperature": temperature, "top_k": -1, "top_p": 1.0, "logprobs": True}
    output = asyncio.run(client.generate("r", prompt_ids=prompt, sampling_params=params))
    assert output.extra_fields["known_answer"] == expected.kind and output.stop_reason == "completed"
    assert tokenizer.decode(output.token_ids) == expected.text + tokenizer.eos_token
    reference = reference_log_probs(tiny_model_dir, prompt, output.token_ids, temperature)
    assert output.log_probs == pytest.approx(reference, abs=LOGPROB_TOLERANCE)
    assert "prompt_logprobs" not in output.extra_fields and "prompt_ids" not in output.extra_fields
    assert output.extra_fields["weight_version"] == 0  # the scoring request's server fields travel on


def test_programs_keep_to_the_requests_budget_and_the_rest_is_sampled_and_marked(tiny_model_dir):
    client = client_for(tiny_model_dir, fraction=0.5)
    prompt = prompt_ids(AutoTokenizer.from_pretrained(tiny_model_dir), "coin_purse")
    params = {"temperature": 1.0, "logprobs": True, "max_tokens": 5}

    async def run():
        return [await client.generate(f"r{i}", prompt_ids=prompt, sampling_params=params) for i in range(4)]

    outputs = asyncio.run(run())
    assert [bool(output.extra_fields["known_answer"]) for output in outputs] == [False, True, False, True]
    assert all(len(output.token_ids) <= 5 and len(output.log_probs) == len(output.token_ids) for output in outputs)
    assert len(outputs[1].token_ids) == 5


def test_the_client_class_has_known_answers_only_when_they_are_on(tiny_model_dir):
    off = composed("debug_cpu")
    on = composed("debug_cpu", "nouscoder.cpu.known_answers.fraction=0.5")
    assert rollout_client_class(LLMServerClient, off) is LLMServerClient
    assert rollout_client_class(ExtraFieldsClient, off) is ExtraFieldsClient
    assert rollout_client_class(LLMServerClient, on) is KnownAnswersClient
    assert rollout_client_class(ExtraFieldsClient, on) is KnownAnswersPartialRolloutClient
    assert rollout_client_class(LLMServerClient, composed("dapo_32k")) is LLMServerClient  # no nouscoder.cpu node

"""recipe.nouscoder.extra_fields: the separate-async trainer's client keeps the server's extra_fields across a
partial-rollout resume (verl's FullyAsyncLLMServerClient rebuilds the output and drops them)."""

import asyncio

from omegaconf import OmegaConf
from verl.workers.rollout.llm_server import FullyAsyncLLMServerClient
from verl.workers.rollout.replica import TokenOutput

from recipe.nouscoder.extra_fields import ExtraFieldsClient


class AbortOnceServer:
    """A rollout server stand-in: the first call is aborted after 2 tokens, the second finishes with 3 more."""

    def __init__(self):
        self.calls = []
        self.generate = self

    async def remote(self, prompt_ids, sampling_params, **kwargs):
        self.calls.append(list(prompt_ids))
        if len(self.calls) == 1:
            return TokenOutput(
                token_ids=[7, 8],
                log_probs=[-1.0, -2.0],
                stop_reason="aborted",
                extra_fields={"global_steps": 1, "known_answer": ""},
            )
        return TokenOutput(
            token_ids=[9, 10, 11],
            log_probs=[-1.0] * 3,
            stop_reason="completed",
            extra_fields={"global_steps": 2, "known_answer": "reference", "weight_version": 3},
        )


def generate(client_class, monkeypatch):
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"name": "hf_cpu", "response_length": 8}}})
    client = client_class(config=config, load_balancer_handle=None)
    server = AbortOnceServer()

    async def acquire(request_id, **extra):
        return "server-0", server

    client._acquire_server = acquire
    client._release_server = lambda *args, **kwargs: None

    async def run():
        return await client.generate("request", prompt_ids=[1, 2], sampling_params={"temperature": 1.0})

    original_sleep = asyncio.sleep
    monkeypatch.setattr(asyncio, "sleep", lambda _seconds: original_sleep(0))  # verl waits 1 s before resuming
    return asyncio.run(run()), server


def test_server_fields_survive_the_resume_and_verls_own_keys_win(monkeypatch):
    output, server = generate(ExtraFieldsClient, monkeypatch)
    assert server.calls == [[1, 2], [1, 2, 7, 8]]  # resumed from the tokens it had
    assert output.token_ids == [7, 8, 9, 10, 11]
    assert output.extra_fields["known_answer"] == "reference" and output.extra_fields["weight_version"] == 3
    assert (output.extra_fields["min_global_steps"], output.extra_fields["max_global_steps"]) == (1, 2)


def test_verls_client_alone_drops_them(monkeypatch):
    output, _ = generate(FullyAsyncLLMServerClient, monkeypatch)
    assert "known_answer" not in output.extra_fields

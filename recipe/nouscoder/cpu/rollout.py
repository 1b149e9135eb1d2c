"""Rollout backend ``hf_cpu``: generation with transformers on CPU behind verl 0.9.1's rollout interfaces.

verl's V1 trainers generate through rollout *replicas* (``verl/workers/rollout/replica.py``): the agent loop sends
token ids to a server actor (``generate(prompt_ids, sampling_params, request_id, ...) -> TokenOutput``), and weights
reach the server through a ``BaseRollout`` adapter that lives in the process holding the new weights. This module
gives the three pieces for CPU, in the roles vLLM's take on GPUs:

- ``CPUGenerationServer``: one Ray actor per replica holding the model (fp32, eager attention); serves one request
  at a time with ``model.generate`` in a thread, returning the processed (temperature/top-k/top-p) log-probs of the
  sampled tokens, as ``logprobs_mode: processed_logprobs`` does in vLLM, and, when a request asks for
  ``prompt_logprobs``, the model's unprocessed log-probs of its prompt tokens in verl's format, as vLLM's server
  returns them (what the known-answers option scores its programs with, known_answer_client.py).
  ``abort_all_requests`` stops the running generation at the next token and parks new requests until
  ``resume_generation`` (partial rollout: verl's ``FullyAsyncLLMServerClient`` resumes an aborted request from the
  tokens it already has);
- ``CPUReplica``: launches the server next to the replica's first worker;
- ``CPUServerAdapter``: built by verl in the FSDP worker (colocated ``naive`` weight sync of the sync trainer) or in
  the standalone rollout's ``CheckpointEngineWorker`` (separate-async trainer); it gathers the full weights and
  loads them into the server, strictly (a missing or unexpected tensor is an error).

Options: ``actor_rollout_ref.rollout.engine_kwargs.hf_cpu`` (``CPUEngineOptions``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from dataclasses import dataclass, field, fields
from typing import Any

import ray
import torch
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from verl.utils.config import omega_conf_to_dataclass
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, TokenOutput
from verl.workers.rollout.utils import ensure_async_iterator

logger = logging.getLogger(__name__)
logger.setLevel(os.getenv("VERL_LOGGING_LEVEL", "INFO"))

ROLLOUT_NAME = "hf_cpu"
SERVER_NAME_PREFIX = "nouscoder_hf_cpu_server_"


@dataclass(frozen=True)
class CPUEngineOptions:
    """``actor_rollout_ref.rollout.engine_kwargs.hf_cpu``: options of the CPU generation server."""

    threads: int = 1
    """torch threads of the server process (the trainer ranks use the other cores)."""

    @classmethod
    def from_rollout_config(cls, rollout_config: Any) -> CPUEngineOptions:
        values = dict((rollout_config.engine_kwargs or {}).get(ROLLOUT_NAME) or {})
        if "known_answers" in values:
            raise ValueError(
                f"actor_rollout_ref.rollout.engine_kwargs.{ROLLOUT_NAME}.known_answers moved to "
                f"nouscoder.cpu.known_answers (the same for every rollout engine): pass e.g. "
                f"nouscoder.cpu.known_answers.fraction=0.5"
            )
        known = {option.name for option in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"unknown option(s) actor_rollout_ref.rollout.engine_kwargs.{ROLLOUT_NAME}.{unknown}; "
                f"known options are {sorted(known)}"
            )
        options = cls(**values)
        if int(options.threads) < 1:
            raise ValueError(f"engine_kwargs.{ROLLOUT_NAME}.threads must be >= 1, got {options.threads}")
        return options


def server_name(replica_rank: int, name_suffix: str = "") -> str:
    """Ray actor name of a replica's generation server (the adapter finds its server by it)."""
    return f"{SERVER_NAME_PREFIX}{replica_rank}{name_suffix}"


class _AbortOnEvent:
    """A ``transformers`` stopping criterion: stop every row once ``event`` is set (abort for a weight sync)."""

    def __init__(self, event: threading.Event):
        self.event = event

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs) -> torch.Tensor:
        return torch.full((input_ids.shape[0],), self.event.is_set(), dtype=torch.bool)


@dataclass(frozen=True)
class _Sampling:
    """The sampling parameters a batch shares (requests with different ones run in different batches)."""

    temperature: float
    top_p: float
    top_k: int
    repetition_penalty: float
    ignore_eos: bool

    def generation_config(self, max_new_tokens: int, eos_token_id: int, pad_token_id: int):
        from transformers import GenerationConfig

        do_sample = self.temperature > 0
        return GenerationConfig(
            max_new_tokens=max_new_tokens,
            do_sample=do_sample,
            temperature=self.temperature if do_sample else 1.0,
            top_p=self.top_p if do_sample else 1.0,
            # 0, not None: with None, transformers falls back to its default top-k of 50
            top_k=self.top_k if do_sample and self.top_k > 0 else 0,
            repetition_penalty=self.repetition_penalty,
            eos_token_id=None if self.ignore_eos else eos_token_id,
            pad_token_id=pad_token_id,
            output_scores=True,
            return_dict_in_generate=True,
        )


@dataclass
class _Request:
    prompt_ids: list[int]
    sampling: _Sampling
    max_new_tokens: int
    prompt_logprobs: int | None
    """``sampling_params["prompt_logprobs"]``: None, 0 (each prompt token's own log-prob) or k (the top k)."""
    future: asyncio.Future


@dataclass
class _Generation:
    token_ids: list[int]
    log_probs: list[float]
    aborted: bool
    prompt_logprobs: dict[str, list[list[Any]]] = field(default_factory=dict)


class CPUGenerationServer:
    """Token-in/token-out generation server on CPU (the role of verl's ``vLLMHttpServer``).

    Requests queue in arrival order; a serving task takes up to ``max_num_seqs`` of those that share sampling
    parameters and generates them as one left-padded batch, as vLLM batches concurrent requests.
    """

    def __init__(self, config: Any, model_config: Any, replica_rank: int):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.config = omega_conf_to_dataclass(config)
        self.model_config = omega_conf_to_dataclass(model_config)
        self.options = CPUEngineOptions.from_rollout_config(self.config)
        self.replica_rank = replica_rank
        torch.set_num_threads(int(self.options.threads))
        path = self.model_config.local_path
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager")
        self.model.eval()
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.eos_token_id = self.model.generation_config.eos_token_id
        self.pad_token_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        self.max_model_len = self.config.max_model_len or self.config.prompt_length + self.config.response_length
        self.max_batch = max(1, int(self.config.max_num_seqs))
        self.global_steps: int | None = None
        self.weight_version = 0
        self.batches_run = 0
        self._queue: list[_Request] = []
        self._work = asyncio.Event()
        self._engine = asyncio.Lock()
        self._admission_open = asyncio.Event()
        self._admission_open.set()
        self._abort_running = threading.Event()
        self._serving: asyncio.Task | None = None

    def ready(self) -> dict[str, Any]:
        return {"replica_rank": self.replica_rank, "pid": os.getpid(), "max_model_len": self.max_model_len}

    # ------------------------------ requests ------------------------------

    def _max_new_tokens(self, prompt_len: int, sampling_params: dict[str, Any]) -> int:
        """The same budget rule as verl's vLLM server: the request's max_tokens, else what the lengths allow."""
        room = self.max_model_len - prompt_len
        if room < 1:
            raise ValueError(
                f"prompt of {prompt_len} tokens leaves no room to generate within max_model_len={self.max_model_len}"
            )
        requested = sampling_params.get("max_tokens", sampling_params.get("max_new_tokens"))
        if requested is None:
            requested = min(
                self.config.response_length, self.config.prompt_length + self.config.response_length - prompt_len
            )
        return max(1, min(int(requested), room))

    def _sampling(self, sampling_params: dict[str, Any]) -> _Sampling:
        return _Sampling(
            temperature=float(sampling_params.get("temperature", 1.0)),
            top_p=float(sampling_params.get("top_p", 1.0)),
            top_k=int(sampling_params.get("top_k", -1)),
            repetition_penalty=float(sampling_params.get("repetition_penalty", self.config.repetition_penalty)),
            ignore_eos=bool(sampling_params.get("ignore_eos", self.config.ignore_eos)),
        )

    async def generate(
        self,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        request_id: str,
        image_data: Any = None,
        video_data: Any = None,
        **_unused: Any,
    ) -> TokenOutput:
        if image_data is not None or video_data is not None:
            raise ValueError("the hf_cpu rollout serves text prompts only")
        prompt_ids = [int(token) for token in prompt_ids]
        prompt_logprobs = sampling_params.get("prompt_logprobs")
        if prompt_logprobs is not None and int(prompt_logprobs) < 0:
            raise ValueError(f"prompt_logprobs must be None, 0 or a number of top tokens, got {prompt_logprobs}")
        request = _Request(
            prompt_ids,
            self._sampling(sampling_params),
            self._max_new_tokens(len(prompt_ids), sampling_params),
            None if prompt_logprobs is None else int(prompt_logprobs),
            asyncio.Future(),
        )
        self._queue.append(request)
        self._work.set()
        if self._serving is None or self._serving.done():
            self._serving = asyncio.create_task(self._serve())
        result: _Generation = await request.future
        extra_fields: dict[str, Any] = {
            "global_steps": self.global_steps,
            "weight_version": self.weight_version,
            **result.prompt_logprobs,
        }
        return TokenOutput(
            token_ids=result.token_ids,
            log_probs=result.log_probs if sampling_params.get("logprobs") else None,
            stop_reason="aborted" if result.aborted else "completed",
            num_preempted=0,
            extra_fields=extra_fields,
        )

    def _take_batch(self) -> list[_Request]:
        """Up to ``max_num_seqs`` queued requests sharing the first one's sampling parameters, in arrival order."""
        first = self._queue[0].sampling
        batch = [request for request in self._queue if request.sampling == first][: self.max_batch]
        taken = {id(request) for request in batch}
        self._queue = [request for request in self._queue if id(request) not in taken]
        return batch

    async def _serve(self) -> None:
        while True:
            await self._work.wait()
            await self._admission_open.wait()
            async with self._engine:
                if not self._queue or not self._admission_open.is_set():
                    if not self._queue:
                        self._work.clear()
                    continue
                batch = self._take_batch()
                try:
                    results = await asyncio.to_thread(self._run_batch, batch)
                except Exception as error:  # every waiting caller gets the error, the server keeps serving
                    logger.exception(f"hf_cpu replica {self.replica_rank}: a batch of {len(batch)} failed")
                    for request in batch:
                        request.future.set_exception(error)
                    continue
            for request, result in zip(batch, results, strict=True):
                request.future.set_result(result)

    # ------------------------------ the model ------------------------------

    def _run_batch(self, batch: list[_Request]) -> list[_Generation]:
        self.batches_run += 1
        seed = hash((self.config.seed, self.replica_rank, self.batches_run)) % (2**31)
        results = self._sample(batch, seed)
        for request, result in zip(batch, results, strict=True):
            if request.prompt_logprobs is not None:
                result.prompt_logprobs = self._prompt_logprobs(request.prompt_ids, request.prompt_logprobs)
        return results

    def _sample(self, batch: list[_Request], seed: int) -> list[_Generation]:
        """One left-padded ``generate`` call; each row cut at its first EOS or its own token budget."""
        sampling = batch[0].sampling
        longest = max(request.max_new_tokens for request in batch)
        width = max(len(request.prompt_ids) for request in batch)
        input_ids = torch.full((len(batch), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, request in enumerate(batch):
            input_ids[row, width - len(request.prompt_ids) :] = torch.tensor(request.prompt_ids)
            attention_mask[row, width - len(request.prompt_ids) :] = 1
        torch.manual_seed(seed)
        with torch.no_grad():
            output = self.model.generate(
                input_ids,
                attention_mask=attention_mask,
                generation_config=sampling.generation_config(longest, self.eos_token_id, self.pad_token_id),
                stopping_criteria=[_AbortOnEvent(self._abort_running)],
            )
        aborting = self._abort_running.is_set()
        # scores are the processed logits each token was sampled from: their log-softmax is vLLM's processed log-prob
        step_log_probs = torch.stack([torch.log_softmax(step.float(), dim=-1) for step in output.scores], dim=1)
        generations = []
        for row, request in enumerate(batch):
            tokens = output.sequences[row, width:].tolist()[: request.max_new_tokens]
            if self.eos_token_id in tokens and not sampling.ignore_eos:
                tokens = tokens[: tokens.index(self.eos_token_id) + 1]
            finished = len(tokens) == request.max_new_tokens or (bool(tokens) and tokens[-1] == self.eos_token_id)
            log_probs = step_log_probs[row, torch.arange(len(tokens)), torch.tensor(tokens, dtype=torch.long)]
            generations.append(_Generation(tokens, log_probs.tolist(), aborted=aborting and not finished))
        return generations

    def _prompt_logprobs(self, prompt_ids: list[int], top: int) -> dict[str, list[list[Any]]]:
        """vLLM's prompt log-probs as verl's vLLM server returns them (``extract_prompt_logprobs`` in
        ``verl/workers/rollout/vllm_rollout/utils.py``): for each prompt token after the first, the unprocessed
        log-prob of that token (``top`` = 0) or the ``top`` most likely tokens by rank, and a dummy last entry."""
        with torch.no_grad():
            logits = self.model(torch.tensor([prompt_ids])).logits[0, :-1].float()
        log_probs = torch.log_softmax(logits, dim=-1)
        if top == 0:
            token_ids = torch.tensor(prompt_ids[1:])[:, None]
            values = log_probs.gather(-1, token_ids)
        else:
            values, token_ids = log_probs.topk(min(top, log_probs.shape[-1]), dim=-1)
        width = max(top, 1)
        return {
            "prompt_logprobs": values.tolist() + [[0.0] * width],
            "prompt_ids": token_ids.tolist() + [[0] * width],
        }

    # ------------------------------ weights ------------------------------

    async def load_weights(self, state: dict[str, torch.Tensor], global_steps: int | None = None) -> int:
        """Load a full state dict (all tensors, names as in the HF checkpoint); returns the new weight version."""
        async with self._engine:
            result = self.model.load_state_dict(state, strict=False)
            if result.missing_keys or result.unexpected_keys:
                raise ValueError(
                    f"weight sync into the hf_cpu server does not match its model: missing {result.missing_keys[:5]}"
                    f", unexpected {result.unexpected_keys[:5]}"
                )
            self.weight_version += 1
            self.global_steps = global_steps
        return self.weight_version

    def get_state(self) -> dict[str, Any]:
        """The weight version and global step the server generates with, and its queue (for tests and logs)."""
        return {"weight_version": self.weight_version, "global_steps": self.global_steps, "queued": len(self._queue)}

    # ------------------------------ control (called by replicas, checkpoint engines, trainers) ------------------------------

    async def abort_all_requests(self, reset_prefix_cache: bool = True, reject_request: bool = False) -> dict:
        """Stop the running batch at its next token and hold queued and new requests until ``resume_generation``.

        Aborted requests return their tokens so far with stop reason ``aborted`` (verl's client resumes them).
        ``reject_request`` (fail held requests instead) is not supported: requests are always held, which the
        base ``RolloutReplica`` allows for backends that cannot reject.
        """
        self._admission_open.clear()
        running = self._engine.locked()
        self._abort_running.set()
        async with self._engine:  # the running batch has returned
            self._abort_running.clear()
        return {"aborted_count": int(running), "request_ids": []}

    async def resume_generation(self) -> None:
        self._admission_open.set()

    async def wait_for_requests_to_drain(self) -> None:
        while self._queue or self._engine.locked():
            await asyncio.sleep(0.05)

    async def wake_up(self, tags: list[str] | None = None) -> None:
        return None  # nothing is freed on CPU: the model stays in the server's memory

    async def sleep(self) -> None:
        return None

    async def clear_kv_cache(self) -> None:
        return None  # no cache is kept between requests

    async def release_kv_cache(self) -> None:
        return None

    async def resume_kv_cache(self) -> None:
        return None

    async def abort_request(self, request_id: str, reset_prefix_cache: bool = True) -> dict:
        return {"aborted": False, "request_id": request_id}

    async def start_profile(self, **kwargs: Any) -> None:
        return None

    async def stop_profile(self) -> None:
        return None


class CPUReplica(RolloutReplica):
    """One ``CPUGenerationServer`` per replica, pinned to the node of the replica's first worker."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        if self.world_size != 1:
            raise ValueError(
                f"the hf_cpu rollout runs one process per replica: set actor_rollout_ref.rollout."
                f"tensor_model_parallel_size=1 (and data/pipeline parallel 1), got world size {self.world_size}"
            )

    async def launch_servers(self) -> None:
        if self.workers:
            node_id = await self.workers[0].__ray_call__.remote(lambda worker: ray.get_runtime_context().get_node_id())
        else:
            node_id = ray.get_runtime_context().get_node_id()
        name = server_name(self.replica_rank, self.name_suffix)
        server = (
            ray.remote(CPUGenerationServer)
            .options(
                name=name,
                num_cpus=0,  # shares the replica worker's slot, as vLLM's server shares its GPUs
                max_concurrency=self.max_concurrency,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False),
            )
            .remote(config=self.config, model_config=self.model_config, replica_rank=self.replica_rank)
        )
        info = await server.ready.remote()
        logger.info(f"hf_cpu replica {self.replica_rank}: server {name} ready {info}")
        self.servers = [server]
        self._server_handle = server
        self._server_address = name


class CPUServerAdapter(BaseRollout):
    """Hands trained weights to this replica's ``CPUGenerationServer``; built by verl inside worker processes."""

    def __init__(self, config: Any, model_config: Any, device_mesh: Any, replica_rank: int = -1, **_unused: Any):
        super().__init__(config, model_config, device_mesh)
        rank = int(os.environ.get("RANK", "0"))
        world_size = (
            self.config.tensor_model_parallel_size
            * self.config.data_parallel_size
            * self.config.pipeline_model_parallel_size
        )
        self.replica_rank = rank // world_size if replica_rank == -1 else replica_rank
        self.rollout_rank = rank % world_size
        self.is_leader_rank = self.rollout_rank == 0
        self._server = None

    def _server_handle(self):
        if self._server is None:
            self._server = ray.get_actor(server_name(self.replica_rank))
        return self._server

    async def resume(self, tags: list[str]) -> None:
        return None

    async def release(self) -> None:
        return None

    @torch.no_grad()
    async def update_weights(
        self, weights: Any, wire_format: str = "named_tensors", global_steps: int | None = None, **_unused: Any
    ) -> None:
        if wire_format != "named_tensors":
            raise ValueError(f"the hf_cpu rollout takes full named tensors, not {wire_format!r}")
        start = time.perf_counter()
        state: dict[str, torch.Tensor] = {}
        # every rank walks the generator: producing a full tensor from FSDP shards is a collective
        async for name, tensor in ensure_async_iterator(weights):
            if self.is_leader_rank:
                state[name] = tensor.detach().to("cpu", copy=True)
        if self.is_leader_rank:
            version = await self._server_handle().load_weights.remote(state, global_steps)
            logger.info(
                f"hf_cpu replica {self.replica_rank}: {len(state)} tensors loaded as weight version {version} "
                f"(step {global_steps}) in {time.perf_counter() - start:.2f}s"
            )

"""Sampling with vLLM's offline engine, data parallel over the node's GPUs, cached for resumption.

Every ``(problem, sample_index)`` is one request with its own seed (``request_seed``), so a sample does not
depend on how requests are batched or sharded, and a resumed run only asks for the samples the cache lacks.
Data parallelism: one engine process per group of ``tensor_parallel_size`` GPUs (``CUDA_VISIBLE_DEVICES``
set before vLLM is imported), problems dealt round-robin to ranks, each rank appending to its own
``rank-<r>.jsonl`` in the cache directory after every chunk of requests.

YaRN (NousCoder "Iterative Context Extension": the 40k model evaluated at 81,920 tokens): vLLM reads the
model's ``config.json`` itself, so the rope scaling goes in as ``hf_overrides`` (the same override as
``configs/eval_lcb_80k.yaml``, plus the model's ``rope_theta``: see ``keep_rope_theta``), and ``max_model_len`` =
factor x the model's native positions (Qwen3: 32,768, its model card; 2.5 for 81,920).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tqdm import tqdm

from recipe.nouscoder.eval.cache import AppendOnlyJsonl, SampleKey, check_settings, read_records
from recipe.nouscoder.eval.data import EvalProblem
from recipe.nouscoder.multi_turn.options import MultiTurnOptions
from reward_fns.types import GraderConfig

RANK_FILE_PATTERN = "rank-*.jsonl"
SETTINGS_FILE = "settings.json"


@dataclass(frozen=True)
class GenerationSettings:
    """How samples are drawn (defaults: NousCoder Table 3 evaluation settings)."""

    model: str
    n: int = 16
    temperature: float = 0.6
    top_p: float = 0.95
    max_tokens: int = 40960
    """Generated tokens per sample, at most (each request is also capped by max_model_len - prompt tokens)."""
    yarn_factor: float | None = None
    original_max_position_embeddings: int = 32768
    max_model_len: int | None = None
    """None: factor x original positions with YaRN, else the model's own limit."""
    seed: int = 0
    hf_overrides: dict[str, Any] = field(default_factory=dict)
    """Extra config.json overrides, merged over the YaRN ones."""
    tensor_parallel_size: int = 1
    data_parallel_size: int | None = None
    """None: every visible GPU / tensor_parallel_size."""
    gpu_memory_utilization: float = 0.9
    chunk_size: int = 512
    """Requests per ``generate`` call of a rank; the cache is appended after each."""
    multi_turn: MultiTurnOptions | None = None
    """Multi-turn mode (``recipe.nouscoder.eval.multi_turn``): conversations with public-test feedback; ``max_tokens`` is then the
    budget of a whole conversation."""
    public_grader: GraderConfig | None = None
    """Grader settings of the public tests in multi-turn mode (the evaluation's grader)."""

    def effective_max_model_len(self) -> int | None:
        if self.max_model_len is not None:
            return self.max_model_len
        if self.yarn_factor:
            return int(self.original_max_position_embeddings * self.yarn_factor)
        return None

    def effective_hf_overrides(self) -> dict[str, Any]:
        overrides = (
            yarn_hf_overrides(self.yarn_factor, self.original_max_position_embeddings) if self.yarn_factor else {}
        )
        return {**overrides, **self.hf_overrides}

    def fingerprint(self) -> dict[str, Any]:
        """The settings that change what is sampled (a cache made with others must not be resumed)."""
        fingerprint = {
            "model": self.model,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "max_model_len": self.effective_max_model_len(),
            "hf_overrides": self.effective_hf_overrides(),
            "seed": self.seed,
        }
        if self.multi_turn is not None:
            fingerprint["multi_turn"] = asdict(self.multi_turn)
            fingerprint["public_grader"] = asdict(self.public_grader or GraderConfig())
        return fingerprint


def yarn_hf_overrides(factor: float, original_max_position_embeddings: int) -> dict[str, Any]:
    """``config.json`` overrides for YaRN rope scaling by ``factor`` over the original positions."""
    if factor <= 1.0:
        raise ValueError(f"--yarn-factor must be > 1 to extend the context (got {factor}); leave it out for none")
    return {
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": factor,
            "original_max_position_embeddings": original_max_position_embeddings,
        },
        "max_position_embeddings": int(original_max_position_embeddings * factor),
    }


def request_seed(seed: int, problem_id: str, sample_index: int, turn: int = 0) -> int:
    """A per-request sampling seed from the run seed, problem, sample index and turn (stable across runs).

    Turn 0 (every single-turn request) has the seed of the single-turn evaluation.
    """
    key = f"{seed}/{problem_id}/{sample_index}" + (f"/turn{turn}" if turn else "")
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class Request:
    problem_id: str
    sample_index: int
    messages: tuple[dict[str, str], ...]
    max_tokens: int | None = None
    """Tokens this request may generate at most (multi-turn: what is left of the conversation's budget)."""
    turn: int = 0
    """Turns of the conversation before this one (0: the first answer, sampled as single-turn requests are)."""
    public_tests: str = ""
    """The problem's public tests (``extra_info.public_tests``), for multi-turn mode."""
    prompt_token_ids: tuple[int, ...] | None = None
    """Multi-turn mode: the conversation so far as token ids (used instead of rendering ``messages``)."""


@dataclass(frozen=True, slots=True)
class Generation:
    """What an engine returns for one request."""

    text: str
    response_tokens: int
    finish_reason: str
    prompt_tokens: int
    token_ids: tuple[int, ...] = ()
    """The generated token ids (multi-turn mode continues the conversation from them)."""


class Engine(Protocol):
    """The part of vLLM's offline ``LLM`` the evaluation uses (a fake one drives the CPU tests)."""

    def generate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Generation]: ...

    def prompt_ids(self, messages: Sequence[dict[str, str]]) -> list[int]:
        """The chat-template prompt of ``messages`` (multi-turn mode only)."""
        ...

    def append_user_turn(self, token_ids: Sequence[int], messages: Sequence[dict[str, str]], content: str) -> list[int]:
        """``token_ids`` (the conversation ``messages``, ending with the model's turn) + a user turn ``content`` and
        the generation prompt, built as the training agent loop builds it (multi-turn mode only)."""
        ...


EngineFactory = Callable[[GenerationSettings], Engine]


def pending_requests(problems: Sequence[EvalProblem], n: int, done: Iterable[SampleKey]) -> list[Request]:
    """The ``(problem, sample_index < n)`` requests not already in the cache, in problem order."""
    done_keys = set(done)
    return [
        Request(problem.problem_id, index, problem.messages, public_tests=problem.public_tests)
        for problem in problems
        for index in range(n)
        if (problem.problem_id, index) not in done_keys
    ]


def shard_by_problem(requests: Sequence[Request], ranks: int) -> list[list[Request]]:
    """Problems dealt round-robin to ranks (a problem's samples stay together: vLLM's prefix cache reuses the prompt)."""
    order: dict[str, int] = {}
    shards: list[list[Request]] = [[] for _ in range(ranks)]
    for request in requests:
        rank = order.setdefault(request.problem_id, len(order) % ranks)
        shards[rank].append(request)
    return shards


def generation_record(request: Request, generation: Generation) -> dict[str, Any]:
    """A cache line (also the ``--completions`` layout)."""
    return {
        "problem_id": request.problem_id,
        "sample_index": request.sample_index,
        "completion": generation.text,
        "response_tokens": generation.response_tokens,
        "finish_reason": generation.finish_reason,
        "prompt_tokens": generation.prompt_tokens,
    }


def read_generations(cache_dir: Path) -> dict[SampleKey, dict[str, Any]]:
    return read_records(sorted(cache_dir.glob(RANK_FILE_PATTERN)))


def run_rank(
    rank: int, requests: Sequence[Request], settings: GenerationSettings, cache_dir: Path, make_engine: EngineFactory
) -> None:
    """Generate ``requests`` on one engine, appending each chunk's samples to ``rank-<rank>.jsonl``."""
    if not requests:
        return
    engine = make_engine(settings)
    chunks = [requests[start : start + settings.chunk_size] for start in range(0, len(requests), settings.chunk_size)]
    with AppendOnlyJsonl(cache_dir / f"rank-{rank}.jsonl") as cache:
        progress = tqdm(total=len(requests), desc=f"generating (rank {rank})", unit="sample", file=sys.stderr)
        for chunk in chunks:
            for record in _chunk_records(chunk, engine, settings):
                cache.append(record)
            progress.update(len(chunk))
        progress.close()


def _chunk_records(chunk: Sequence[Request], engine: Engine, settings: GenerationSettings) -> list[dict[str, Any]]:
    """Cache lines of one chunk: one generation per request, or (multi-turn) one finished conversation each."""
    if settings.multi_turn is None:
        return [
            generation_record(request, generation)
            for request, generation in zip(chunk, engine.generate(chunk, settings), strict=True)
        ]
    from recipe.nouscoder.eval import multi_turn
    from recipe.nouscoder.multi_turn.public_tests import LocalPublicGrader

    grader = LocalPublicGrader(asdict(settings.public_grader or GraderConfig()))
    conversations = [multi_turn.start(request, settings.multi_turn, engine) for request in chunk]
    multi_turn.converse(conversations, engine, settings, grader, settings.max_tokens)
    return [conversation.record() for conversation in conversations]


def visible_gpus() -> list[str]:
    """The GPU ids this process may use (``CUDA_VISIBLE_DEVICES``, else all that torch sees)."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [gpu for gpu in listed.split(",") if gpu.strip()]
    import torch

    return [str(index) for index in range(torch.cuda.device_count())]


def _rank_main(
    rank: int,
    gpus: list[str],
    requests: list[Request],
    settings: GenerationSettings,
    cache_dir: Path,
    make_engine: EngineFactory,
) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
    run_rank(rank, requests, settings, cache_dir, make_engine)


def data_parallel_ranks(settings: GenerationSettings, gpus: Sequence[str]) -> int:
    """Engines to start: ``data_parallel_size``, else every visible GPU / ``tensor_parallel_size`` (at least 1).

    Raises:
        ValueError: the ranks need more GPUs than are visible.
    """
    ranks = settings.data_parallel_size or max(1, len(gpus) // settings.tensor_parallel_size)
    if ranks > 1 and ranks * settings.tensor_parallel_size > len(gpus):
        raise ValueError(
            f"data_parallel_size {ranks} x tensor_parallel_size {settings.tensor_parallel_size} needs more GPUs "
            f"than the {len(gpus)} visible ({gpus}); lower --data-parallel-size or --tensor-parallel-size"
        )
    return ranks


def generate_missing(
    problems: Sequence[EvalProblem],
    settings: GenerationSettings,
    cache_dir: Path,
    make_engine: EngineFactory | None = None,
) -> int:
    """Sample every missing ``(problem, index < n)`` into ``cache_dir``; returns how many were generated.

    ``make_engine`` (default ``VllmEngine``; a fake one in tests) must be a picklable top-level callable when
    there is more than one data-parallel rank: each rank is then a spawned process owning
    ``tensor_parallel_size`` GPUs. With one rank the engine runs in this process.
    """
    check_settings(cache_dir / SETTINGS_FILE, settings.fingerprint())
    requests = pending_requests(problems, settings.n, read_generations(cache_dir))
    if not requests:
        return 0
    make_engine = make_engine or VllmEngine
    gpus = visible_gpus() if settings.data_parallel_size != 1 else []
    ranks = data_parallel_ranks(settings, gpus)
    if ranks == 1:
        run_rank(0, requests, settings, cache_dir, make_engine)
        return len(requests)
    context = multiprocessing.get_context("spawn")
    workers = []
    for rank, shard in enumerate(shard_by_problem(requests, ranks)):
        own = gpus[rank * settings.tensor_parallel_size : (rank + 1) * settings.tensor_parallel_size]
        worker = context.Process(
            target=_rank_main, args=(rank, own, shard, settings, cache_dir, make_engine), name=f"lcb-rank-{rank}"
        )
        worker.start()
        workers.append(worker)
    for worker in workers:
        worker.join()
    failed = [f"{worker.name} (exit {worker.exitcode})" for worker in workers if worker.exitcode != 0]
    if failed:
        raise RuntimeError(f"generation failed in {', '.join(failed)}; rerun the same command to resume")
    return len(requests)


class VllmEngine:
    """vLLM's offline ``LLM``: chat template applied by the model's tokenizer, one seeded request per sample."""

    def __init__(self, settings: GenerationSettings) -> None:
        try:
            from vllm import LLM, SamplingParams
        except ImportError as error:
            raise SystemExit(
                "eval_lcb generates with vLLM on GPUs and vllm is not installed: `pip install vllm` on a CUDA "
                "machine, or grade completions produced elsewhere with --completions FILE."
            ) from error
        self._sampling_params = SamplingParams
        kwargs: dict[str, Any] = {
            "model": settings.model,
            "seed": settings.seed,
            "tensor_parallel_size": settings.tensor_parallel_size,
            "gpu_memory_utilization": settings.gpu_memory_utilization,
        }
        if settings.effective_hf_overrides():
            kwargs["hf_overrides"] = keep_rope_theta(settings.effective_hf_overrides(), settings.model)
        if settings.effective_max_model_len() is not None:
            kwargs["max_model_len"] = settings.effective_max_model_len()
        self.llm = LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)
        self._turn_builder = None

    def prompt_ids(self, messages: Sequence[dict[str, str]]) -> list[int]:
        text = self.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def append_user_turn(self, token_ids: Sequence[int], messages: Sequence[dict[str, str]], content: str) -> list[int]:
        from verl.utils.tokenizer.continuous_token_wiring import create_continuous_token_builder

        from recipe.nouscoder.eval.multi_turn import continue_with_user_turn

        if self._turn_builder is None:
            model_type = getattr(self.llm.llm_engine.model_config.hf_config, "model_type", None)
            self._turn_builder = create_continuous_token_builder(self.tokenizer, hf_model_type=model_type)
        return continue_with_user_turn(self._turn_builder, token_ids, messages, content)

    def generate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Generation]:
        prompts = [
            list(request.prompt_token_ids)
            if request.prompt_token_ids is not None
            else self.prompt_ids(request.messages)
            for request in requests
        ]
        params = [
            self._sampling_params(
                temperature=settings.temperature,
                top_p=settings.top_p,
                max_tokens=max(
                    1,
                    min(
                        settings.max_tokens, request.max_tokens or settings.max_tokens, self.max_model_len - len(prompt)
                    ),
                ),
                seed=request_seed(settings.seed, request.problem_id, request.sample_index, request.turn),
            )
            for request, prompt in zip(requests, prompts, strict=True)
        ]
        outputs = self.llm.generate([{"prompt_token_ids": prompt} for prompt in prompts], params, use_tqdm=False)
        generations = []
        for prompt, output in zip(prompts, outputs, strict=True):
            sample = output.outputs[0]
            generations.append(
                Generation(
                    sample.text, len(sample.token_ids), str(sample.finish_reason), len(prompt), tuple(sample.token_ids)
                )
            )
        return generations


def keep_rope_theta(overrides: dict[str, Any], model: str) -> dict[str, Any]:
    """Put the model's ``rope_theta`` into an overriding ``rope_scaling`` dict.

    transformers >= 5 keeps ``rope_theta`` inside ``rope_parameters``, which an assigned ``rope_scaling`` replaces
    whole: without this the YaRN override would silently drop the base frequency (Qwen3: 1e6).
    """
    scaling = overrides.get("rope_scaling")
    if not isinstance(scaling, dict) or "rope_theta" in scaling:
        return overrides
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model)
    theta = getattr(config, "rope_theta", None) or (getattr(config, "rope_parameters", None) or {}).get("rope_theta")
    return {**overrides, "rope_scaling": {**scaling, "rope_theta": theta}} if theta else overrides


def settings_dict(settings: GenerationSettings) -> dict[str, Any]:
    """Every setting, for the report."""
    return {
        **asdict(settings),
        "effective_max_model_len": settings.effective_max_model_len(),
        "effective_hf_overrides": settings.effective_hf_overrides(),
    }

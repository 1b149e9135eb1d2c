"""Known answers in verl's rollout client, so that the option is the same with every rollout engine.

Every agent loop generates through the rollout client the trainer hands to verl's agent-loop workers
(``LLMServerClient.generate``: the sync trainer's, or ``ExtraFieldsClient``, verl's partial-rollout client, in the
separate-async trainer). With ``nouscoder.cpu.known_answers.fraction > 0`` the recipe's trainers use the matching
class of this module, which, for each request:

1. asks the ``KnownAnswerBook`` (known_answers.py) whether the decoded prompt gets a bundled program, and which;
2. if not, generates as usual and marks the response ``extra_fields["known_answer"] = ""``;
3. if so, tokenizes the program, adds EOS and cuts it to the request's token budget (the rule of verl's vLLM server:
   ``max_tokens``, else what ``prompt_length + response_length`` leaves, within ``max_model_len``), and has the
   engine score it: one request for ``prompt + program`` with ``max_tokens = 1`` and ``prompt_logprobs``, which
   vLLM's server and ``hf_cpu`` both answer with the model's log-prob of each prompt token
   (``extra_fields["prompt_logprobs"]``, in the format of verl's ``extract_prompt_logprobs``). The response is the
   program's tokens with those log-probs, marked with the program's kind.

Temperature. A sampled token's log-prob is the processed one, log softmax(logits / T) (verl's ``logprobs_mode:
processed_logprobs``), which is also what the learner computes. Prompt tokens skip vLLM's sampler, so their
log-probs are the unprocessed log softmax(logits) (``_get_prompt_logprobs_dict`` in vLLM's model runner), and
``hf_cpu`` returns the same. At T = 1 the two agree and one log-prob per token is asked for. At any other T the
client asks for the whole distribution (the top ``vocab_size`` tokens) and computes
log softmax(log p / T) = log softmax(logits / T), since log p and the logits differ by one constant per position.
top-k / top-p are not applied, as the learner applies neither. A greedy request (T = 0) gets the unprocessed values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from verl.workers.rollout.llm_server import LLMServerClient
from verl.workers.rollout.replica import TokenOutput

from recipe.nouscoder.cpu.known_answers import KnownAnswer, KnownAnswerBook, KnownAnswerOptions
from recipe.nouscoder.extra_fields import KNOWN_ANSWER_FIELD, ExtraFieldsClient

OPTIONS_KEY = "nouscoder.cpu.known_answers"
PROMPT_LOGPROB_FIELDS = ("prompt_logprobs", "prompt_ids")
"""What the scoring request's server adds to ``extra_fields``; too large to travel on with the response."""


def known_answer_options(config: DictConfig) -> KnownAnswerOptions:
    """``nouscoder.cpu.known_answers`` of the run's config (off when absent)."""
    node = OmegaConf.select(config, OPTIONS_KEY)
    return KnownAnswerOptions.from_mapping(OmegaConf.to_container(node) if node is not None else None)  # type: ignore[arg-type]


@dataclass
class _Scoring:
    """What a worker needs to place programs: built on its first request (the client is pickled to the workers)."""

    book: KnownAnswerBook
    tokenizer: Any
    vocab_size: int
    prompt_length: int
    response_length: int
    max_model_len: int

    @classmethod
    def from_config(cls, config: DictConfig) -> _Scoring:
        from transformers import AutoConfig
        from verl.utils import hf_tokenizer

        model, rollout = config.actor_rollout_ref.model, config.actor_rollout_ref.rollout
        tokenizer_path = model.get("tokenizer_path") or model.path
        prompt_length, response_length = int(rollout.prompt_length), int(rollout.response_length)
        return cls(
            book=KnownAnswerBook.from_bundled_sample(known_answer_options(config)),
            tokenizer=hf_tokenizer(tokenizer_path, trust_remote_code=model.get("trust_remote_code", False)),
            vocab_size=int(AutoConfig.from_pretrained(model.path).vocab_size),
            prompt_length=prompt_length,
            response_length=response_length,
            max_model_len=int(rollout.get("max_model_len") or prompt_length + response_length),
        )

    def tokens_of(self, answer: KnownAnswer, prompt_len: int, sampling_params: dict[str, Any]) -> list[int]:
        """The program's tokens + EOS, cut to the request's budget; one token of room stays for the scoring request."""
        tokens = self.tokenizer(answer.text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
        requested = sampling_params.get("max_tokens", sampling_params.get("max_new_tokens"))
        if requested is None:
            requested = min(self.response_length, self.prompt_length + self.response_length - prompt_len)
        return tokens[: max(0, min(int(requested), self.max_model_len - prompt_len - 1))]


def program_log_probs(
    extra_fields: dict[str, Any], prompt_len: int, tokens: list[int], temperature: float
) -> list[float]:
    """log softmax(logits / T) of each program token, from the scoring request's prompt log-probs (module docstring).

    ``prompt_logprobs[j]`` / ``prompt_ids[j]`` are about the prompt token at position j + 1: its own log-prob, or
    the top-k log-probs and their token ids by rank.
    """
    rows = extra_fields["prompt_logprobs"][prompt_len - 1 : prompt_len - 1 + len(tokens)]
    ids = extra_fields["prompt_ids"][prompt_len - 1 : prompt_len - 1 + len(tokens)]
    if len(rows) != len(tokens):
        raise ValueError(f"the engine returned prompt log-probs for {len(rows)} of {len(tokens)} program tokens")
    if all(len(row) == 1 for row in rows):
        if [row[0] for row in ids] != tokens:
            raise ValueError("the engine's prompt log-probs are not about the program's tokens")
        return [float(row[0]) for row in rows]
    log_probs = torch.tensor(rows, dtype=torch.float64) / temperature
    positions = torch.tensor(ids)
    chosen = (positions == torch.tensor(tokens)[:, None]).float().argmax(dim=-1)
    tempered = log_probs.gather(-1, chosen[:, None])[:, 0] - torch.logsumexp(log_probs, dim=-1)
    return tempered.tolist()


class KnownAnswersMixin:
    """``generate`` of a rollout client, placing known answers (module docstring); mixed into verl's clients."""

    config: DictConfig

    def _scoring(self) -> _Scoring:
        scoring = self.__dict__.get("_known_answer_scoring")
        if scoring is None:
            scoring = self.__dict__["_known_answer_scoring"] = _Scoring.from_config(self.config)
        return scoring

    async def generate(self, request_id, **kwargs: Any) -> TokenOutput:
        scoring = self._scoring()
        prompt_ids = [int(token) for token in kwargs.pop("prompt_ids")]
        sampling_params: dict[str, Any] = kwargs.pop("sampling_params")
        answer = scoring.book.next_answer(scoring.tokenizer.decode(prompt_ids))
        tokens = scoring.tokens_of(answer, len(prompt_ids), sampling_params) if answer is not None else []
        if answer is None or not tokens:
            output = await super().generate(  # type: ignore[misc]
                request_id, prompt_ids=prompt_ids, sampling_params=sampling_params, **kwargs
            )
            output.extra_fields[KNOWN_ANSWER_FIELD] = ""
            return output
        temperature = float(sampling_params.get("temperature", 1.0))
        whole_distribution = temperature > 0 and not math.isclose(temperature, 1.0)
        score_params = {
            **{key: value for key, value in sampling_params.items() if key not in ("max_tokens", "max_new_tokens")},
            "max_tokens": 1,
            "logprobs": False,
            "prompt_logprobs": scoring.vocab_size if whole_distribution else 0,
            "detokenize": False,
        }
        scored: TokenOutput = await super().generate(  # type: ignore[misc]
            request_id, prompt_ids=prompt_ids + tokens, sampling_params=score_params, **kwargs
        )
        log_probs = program_log_probs(
            scored.extra_fields, len(prompt_ids), tokens, temperature if whole_distribution else 1.0
        )
        extra_fields = {key: value for key, value in scored.extra_fields.items() if key not in PROMPT_LOGPROB_FIELDS}
        extra_fields[KNOWN_ANSWER_FIELD] = answer.kind
        return TokenOutput(
            token_ids=tokens,
            log_probs=log_probs if sampling_params.get("logprobs") else None,
            stop_reason="completed",
            num_preempted=scored.num_preempted,
            extra_fields=extra_fields,
        )


class KnownAnswersClient(KnownAnswersMixin, LLMServerClient):
    """verl's rollout client (sync trainer) with known answers."""


class KnownAnswersPartialRolloutClient(KnownAnswersMixin, ExtraFieldsClient):
    """The separate-async trainer's partial-rollout client with known answers."""


_WITH_KNOWN_ANSWERS: dict[type[LLMServerClient], type[LLMServerClient]] = {
    LLMServerClient: KnownAnswersClient,
    ExtraFieldsClient: KnownAnswersPartialRolloutClient,
}


def rollout_client_class(base: type[LLMServerClient], config: DictConfig) -> type[LLMServerClient]:
    """``base``, or its known-answers variant when ``nouscoder.cpu.known_answers.fraction > 0``."""
    if known_answer_options(config).fraction <= 0:
        return base
    return _WITH_KNOWN_ANSWERS[base]

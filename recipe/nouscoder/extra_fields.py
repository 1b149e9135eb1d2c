"""verl's per-rollout ``extra_fields`` as this recipe uses them: the keys it adds, their readers, and the
separate-async trainer's rollout client that keeps what the rollout server reports about each response.

Keys: ``reward_extra_info`` (verl's agent loop stores the reward manager's dict there for every rollout it graded)
and ``known_answer`` (the CPU mode's known-answers client marks each response with the bundled program's kind, or
"" for the model's own text, while that test option is on).

Client: verl 0.9.1's ``FullyAsyncLLMServerClient.generate`` (``verl/workers/rollout/llm_server.py``) resumes aborted
requests (partial rollout) and returns a ``TokenOutput`` it builds itself, with only its own ``extra_fields``
(``global_steps``, ``min/max_global_steps``, ``num_cached_tokens``): whatever else the server put there is lost,
while verl's synchronous client passes it on to the agent loop's output. ``ExtraFieldsClient`` keeps the server's
other fields (the last attempt's value wins); verl's own keys are untouched.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Mapping
from typing import Any

from verl.workers.rollout.llm_server import FullyAsyncLLMServerClient, LLMServerClient
from verl.workers.rollout.replica import TokenOutput

KNOWN_ANSWER_FIELD = "known_answer"
REWARD_INFO_FIELD = "reward_extra_info"


def extra_field_values(extra_fields: Iterable[Any], key: str) -> list[Any]:
    """``extra_fields[i][key]`` of each rollout (None where missing).

    TransferQueue may hand each element back wrapped in ``NonTensorData`` (unwrapped here, as verl's replay buffer
    does).
    """
    values = []
    for fields in extra_fields:
        fields = getattr(fields, "data", fields)
        values.append(fields.get(key) if isinstance(fields, Mapping) else None)
    return values


def reward_infos_from_extra_fields(extra_fields: Iterable[Any]) -> list[dict[str, Any]]:
    """Per-sample reward dicts of verl's V1 path: ``extra_fields[i]["reward_extra_info"]`` ({} where missing).

    The agent loop's ``_compute_score`` stores the reward manager's dict there for every rollout it graded.
    """
    return [
        dict(info) if isinstance(info, Mapping) else {} for info in extra_field_values(extra_fields, REWARD_INFO_FIELD)
    ]


_server_fields: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("server_fields", default=None)


class _RecordServerFields(LLMServerClient):
    """One server call (the base client's ``generate``), recording the server's ``extra_fields``."""

    async def generate(self, request_id, **kwargs: Any) -> TokenOutput:
        output = await super().generate(request_id, **kwargs)
        recorded = _server_fields.get()
        if recorded is not None:
            recorded.update(output.extra_fields)
        return output


class ExtraFieldsClient(FullyAsyncLLMServerClient, _RecordServerFields):
    """verl's partial-rollout client whose outputs also carry the server's own ``extra_fields``."""

    async def generate(self, request_id, **kwargs: Any) -> TokenOutput:
        token = _server_fields.set({})
        try:
            output = await super().generate(request_id, **kwargs)
            recorded = _server_fields.get()
        finally:
            _server_fields.reset(token)
        for key, value in recorded.items():
            output.extra_fields.setdefault(key, value)
        return output

"""The separate-async trainer's rollout client, keeping what the rollout server reports about each response.

verl 0.9.1's ``FullyAsyncLLMServerClient.generate`` (``verl/workers/rollout/llm_server.py``) resumes aborted
requests (partial rollout) and returns a ``TokenOutput`` it builds itself, with only its own ``extra_fields``
(``global_steps``, ``min/max_global_steps``, ``num_cached_tokens``): whatever else the server put there is lost,
while verl's synchronous client passes it on to the agent loop's output. ``ExtraFieldsClient`` keeps the server's
other fields (the last attempt's value wins); verl's own keys are untouched.
"""

from __future__ import annotations

import contextvars
from typing import Any

from verl.workers.rollout.llm_server import FullyAsyncLLMServerClient, LLMServerClient
from verl.workers.rollout.replica import TokenOutput

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

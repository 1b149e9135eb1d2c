"""The verl agent loop ``nouscoder_public_test_feedback``: write, run on the public tests, read the failure, revise.

Built on verl 0.9.1's ``AgentLoopBase`` (``verl/experimental/agent_loop/agent_loop.py``) the way its
``ToolAgentLoop`` builds a conversation: the prompt is rendered once (``ct_build_initial_tokens``), each model turn
is appended as generated tokens (``ct_merge_assistant_token``: response_mask 1, the server's log-probs), each
feedback message as a user turn (``ct_merge_context_msg``: response_mask 0, log-prob 0), so only model tokens train
and the rollout log-probs stay aligned with the tokens. One ``AgentLoopOutput`` per trajectory: ``response_ids`` are
every turn and every feedback message, cut at ``rollout.response_length``; verl's reward loop then grades it.

The rules that end a trajectory are in ``conversation``; the record written to ``extra_fields["multi_turn"]`` tells
the reward which program to grade (``reward_fns.multi_turn``) and feeds the ``multi_turn/*`` step metrics. Public
tests run with the reward's grader settings (``public_tests``); the time they take is the output's ``tool_calls``
metric. Requires a reward manager that passes ``extra_fields`` to the reward function (``naive``, ``limited``,
``remote``; checked).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
from verl.utils.profiler import simple_timer
from verl.workers.rollout.replica import TokenOutput

from recipe.nouscoder.extra_fields import KNOWN_ANSWER_FIELD
from recipe.nouscoder.multi_turn import AGENT_NAME
from recipe.nouscoder.multi_turn.conversation import Trajectory, Turn
from recipe.nouscoder.multi_turn.feedback import feedback_message, is_done_reply
from recipe.nouscoder.multi_turn.options import MultiTurnOptions
from recipe.nouscoder.multi_turn.public_tests import PublicTests, check_public, public_grader_for, public_tests_of
from reward_fns.extract import extract_code
from reward_fns.multi_turn import TRAJECTORY_KEY
from reward_fns.types import GroundTruthError

logger = logging.getLogger(__name__)
logger.setLevel(os.getenv("VERL_LOGGING_LEVEL", "WARN"))

REWARD_MANAGERS_PASSING_EXTRA_FIELDS = ("naive", "limited", "remote")
"""verl 0.9.1 reward managers that merge the rollout's extra_fields into ``extra_info`` (``dapo`` does not)."""


def check_reward_manager(config: Any) -> None:
    """The reward must see the trajectory record: refuse reward managers that drop ``extra_fields``."""
    name = config.reward.get("reward_manager", {}).get("name", "naive") if config.get("reward") else "naive"
    if name not in REWARD_MANAGERS_PASSING_EXTRA_FIELDS:
        raise ValueError(
            f"the {AGENT_NAME} agent loop needs a reward manager that passes the rollout's extra_fields to the reward "
            f"function ({', '.join(REWARD_MANAGERS_PASSING_EXTRA_FIELDS)}); reward.reward_manager.name={name!r} would "
            f"grade the last code block of the whole conversation instead of the final turn's program"
        )


class _Tokens:
    """The token stream of one trajectory: prompt + every turn so far, and the response-side mask / log-probs."""

    def __init__(self, prompt_ids: list[int], track_logprobs: bool):
        self.runtime_ids = list(prompt_ids)
        self.prompt_length = len(prompt_ids)
        self.response_mask: list[int] = []
        self.response_logprobs: list[float] | None = [] if track_logprobs else None


@register(AGENT_NAME)
class PublicTestFeedbackAgentLoop(AgentLoopBase):
    """One trajectory of up to ``max_turns`` model turns with public-test feedback between them (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.options = MultiTurnOptions.from_config(self.config)
        self.response_length = int(self.rollout_config.response_length)
        self.token_budget = self.options.token_budget(self.response_length)
        check_reward_manager(self.config)
        self.grader = public_grader_for(self.config, self.options.public_grading)

    async def run(self, sampling_params: dict[str, Any], priority: int = 0, **kwargs: Any) -> AgentLoopOutput:
        public, public_error = self._public_tests(kwargs.get("extra_info"))
        hidden_truth = (kwargs.get("reward_model") or {}).get("ground_truth")
        trajectory = Trajectory(self.options, has_public_tests=public is not None, public_tests_error=public_error)
        messages = list(kwargs["raw_prompt"])
        state = _Tokens(await self.ct_build_initial_tokens(messages), sampling_params.get("logprobs"))
        request_id = f"det-{int(priority)}" if self.rollout_config.full_determinism else uuid4().hex
        metrics: dict[str, Any] = {}
        extra_fields: dict[str, Any] = {}
        known_answers: list[str] = []
        first_hidden: asyncio.Task | None = None
        while trajectory.stop_reason is None:
            with simple_timer("generate_sequences", metrics):
                output: TokenOutput = await self.server_manager.generate(
                    request_id=request_id,
                    prompt_ids=state.runtime_ids,
                    sampling_params={**sampling_params, "max_tokens": self.token_budget - len(state.response_mask)},
                )
            self._merge_server_fields(extra_fields, output, known_answers, metrics)
            text = await self._append_model_turn(state, output)
            turn = Turn(
                extract_code(text), len(output.token_ids), bool(trajectory.turns) and is_done_reply(text, self.options)
            )
            trajectory.turns.append(turn)
            trajectory.stop_reason = trajectory.stop_before_check(turn, len(state.response_mask) >= self.token_budget)
            if trajectory.stop_reason is not None:
                break
            with simple_timer("tool_calls", metrics):
                turn.public = await check_public(self.grader, text, public)
            trajectory.stop_reason = trajectory.stop_after_check(turn.public)
            if trajectory.stop_reason is None:
                feedback = feedback_message(turn.public, self.options, self.grader.config)
                messages = await self._append_feedback(state, trajectory, messages, text, feedback)
            if trajectory.stop_reason is None and first_hidden is None and self._grade_first_turn(hidden_truth):
                first_hidden = asyncio.create_task(self.grader.grade(text, hidden_truth))  # metric; runs alongside

        if first_hidden is not None:
            trajectory.first_turn_hidden_accepted = (await first_hidden).accepted
        extra_fields[TRAJECTORY_KEY] = trajectory.record()
        if known_answers:
            extra_fields[KNOWN_ANSWER_FIELD] = "+".join(mark for mark in known_answers if mark)
        extra_fields.update({"turn_scores": [], "tool_rewards": []})  # the schema of verl's own agent loops
        return AgentLoopOutput(
            prompt_ids=state.runtime_ids[: state.prompt_length],
            response_ids=state.runtime_ids[state.prompt_length :][: self.response_length],
            response_mask=state.response_mask[: self.response_length],
            response_logprobs=None
            if state.response_logprobs is None
            else state.response_logprobs[: self.response_length],
            num_turns=2 * len(trajectory.turns),
            metrics=metrics,
            extra_fields=extra_fields,
        )

    async def _append_model_turn(self, state: _Tokens, output: TokenOutput) -> str:
        """Append the generated tokens (mask 1, their log-probs when tracked); return the turn's text."""
        merge, state.response_mask, state.response_logprobs = await self.ct_merge_assistant_token(
            state.runtime_ids,
            output.token_ids,
            state.response_mask,
            state.response_logprobs,
            assistant_logprobs=None if state.response_logprobs is None else (output.log_probs or []),
        )
        state.runtime_ids = merge.token_ids
        return await self.loop.run_in_executor(
            None, lambda: self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
        )

    async def _append_feedback(
        self, state: _Tokens, trajectory: Trajectory, messages: list[dict], text: str, feedback: str
    ) -> list[dict]:
        """Append the feedback as a user turn (mask 0) when a next turn fits after it (rule 7); the new messages."""
        previous = [*messages, {"role": "assistant", "content": text}]
        updated = [*previous, {"role": "user", "content": feedback}]
        merge, mask, logprobs = await self.ct_merge_context_msg(
            previous, updated, state.runtime_ids, state.response_mask, state.response_logprobs
        )
        added = len(mask) - len(state.response_mask)
        if not trajectory.room_for_next_turn(
            len(state.response_mask), added, self.token_budget, self.options.min_turn_tokens
        ):
            trajectory.stop_reason = "token_budget"
            return messages
        state.runtime_ids, state.response_mask, state.response_logprobs = merge.token_ids, mask, logprobs
        trajectory.feedback_tokens += added
        return updated

    def _grade_first_turn(self, hidden_truth: Any) -> bool:
        return self.options.grade_first_turn_on_hidden and hidden_truth is not None

    @staticmethod
    def _public_tests(extra_info: Any) -> tuple[PublicTests | None, str]:
        """The row's public tests; malformed ones are logged and the row runs single-turn (counted in metrics)."""
        try:
            return public_tests_of(extra_info), ""
        except GroundTruthError as exc:
            logger.error(f"{AGENT_NAME}: problem {(extra_info or {}).get('problem_id')!r}: {exc}; no feedback for it")
            return None, str(exc)

    @staticmethod
    def _merge_server_fields(
        extra_fields: dict[str, Any], output: TokenOutput, known_answers: list[str], metrics: dict[str, Any]
    ) -> None:
        """The first turn's server fields; later turns update the newest weight version (as verl's ToolAgentLoop)."""
        server_fields = dict(output.extra_fields or {})
        if KNOWN_ANSWER_FIELD in server_fields:
            known_answers.append(str(server_fields.pop(KNOWN_ANSWER_FIELD) or ""))
        if not extra_fields:
            extra_fields.update(server_fields)
        elif server_fields.get("max_global_steps") is not None:
            extra_fields["max_global_steps"] = server_fields["max_global_steps"]
        preempted = output.num_preempted if output.num_preempted is not None else 0
        metrics["num_preempted"] = metrics.get("num_preempted", 0) + preempted

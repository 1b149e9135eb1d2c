"""LiveCodeBench evaluation in multi-turn mode (``--turns N``): the training loop's public-test feedback, turn by turn.

Each sample is a conversation run by the rules of training (``recipe/nouscoder/multi_turn/conversation.py``): the
model answers, its program runs on the problem's public tests (parquet ``extra_info.public_tests``) with the
evaluation's grader, and unless they pass (or a limit is reached) the same feedback message asks for a revision.
``--max-tokens`` is the budget of the whole conversation (model turns + feedback), as in training. The context of a
turn is the token stream of training, not a re-rendered chat: the sampled tokens, then the feedback appended with
verl's continuous-token builder (so a thinking model keeps its earlier reasoning, as it did when trained). All
conversations of a chunk advance together: one engine call per turn.

The first turn of a conversation is the single-turn request itself (same prompt, same per-request seed), so one run
scores the model both ways: the first programs (single-turn pass@k) and the final ones (multi-turn pass@k), side by
side in ``results.json`` (``summary.multi_turn``) and ``report.md``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from recipe.nouscoder.multi_turn.conversation import Trajectory, Turn
from recipe.nouscoder.multi_turn.feedback import feedback_message, is_done_reply
from recipe.nouscoder.multi_turn.metrics import multi_turn_metrics
from recipe.nouscoder.multi_turn.options import MultiTurnOptions
from recipe.nouscoder.multi_turn.public_tests import (
    PUBLIC_TESTS_KEY,
    PublicGrader,
    PublicTests,
    check_public,
    public_tests_of,
)
from reward_fns.extract import extract_code
from reward_fns.multi_turn import TRAJECTORY_KEY
from reward_fns.types import GroundTruthError


@dataclass
class Conversation:
    """One sample's conversation so far."""

    first: Any
    """The first ``generate.Request`` (problem, sample index, prompt, public tests)."""
    public: PublicTests | None
    trajectory: Trajectory
    messages: list[dict[str, str]]
    token_ids: list[int]
    """The conversation so far: prompt, turns and feedback messages."""
    prompt_length: int
    texts: list[str] = field(default_factory=list)
    finish_reason: str = ""

    @property
    def tokens_used(self) -> int:
        """Tokens of the turns and feedback messages so far (what the budget counts)."""
        return len(self.token_ids) - self.prompt_length

    @property
    def final_text(self) -> str:
        """The text of the turn whose program is the final one (the last turn, or the last with a program)."""
        program = self.trajectory.final_program
        if program is None:
            return self.texts[-1]
        return next(
            text
            for turn, text in zip(reversed(self.trajectory.turns), reversed(self.texts), strict=True)
            if turn.program == program
        )

    def record(self) -> dict[str, Any]:
        """A generation-cache line: the single-turn fields for the final program, plus the first turn and the record."""
        trajectory = self.trajectory.record()
        del trajectory["final_program"]  # the completion holds it
        return {
            "problem_id": self.first.problem_id,
            "sample_index": self.first.sample_index,
            "completion": self.final_text,
            "response_tokens": sum(turn.tokens for turn in self.trajectory.turns),
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_length,
            "first_completion": self.texts[0],
            TRAJECTORY_KEY: trajectory,
        }


def start(first: Any, options: MultiTurnOptions, engine: Any) -> Conversation:
    """The conversation of a first request; rows with unreadable public tests run single-turn (and say so)."""
    try:
        public, error = public_tests_of({PUBLIC_TESTS_KEY: first.public_tests}), ""
    except GroundTruthError as exc:
        public, error = None, str(exc)
    trajectory = Trajectory(options, has_public_tests=public is not None, public_tests_error=error)
    prompt = list(engine.prompt_ids(first.messages))
    return Conversation(first, public, trajectory, list(first.messages), prompt, len(prompt))


def continue_with_user_turn(
    builder: Any, token_ids: Sequence[int], messages: Sequence[dict[str, str]], content: str
) -> list[int]:
    """``token_ids`` + the user turn ``content`` + the generation prompt: verl's continuous-token merge, the call the
    training agent loop makes (``AgentLoopBase.ct_merge_context_msg``); ``builder`` is verl's builder of the model."""
    updated = [*messages, {"role": "user", "content": content}]
    return builder.merge_context_tokens(list(messages), updated, list(token_ids)).token_ids


def converse(
    conversations: Sequence[Conversation], engine: Any, settings: Any, grader: PublicGrader, budget: int
) -> None:
    """Run every conversation to its end: one ``engine.generate`` per turn for all that are still going."""
    options: MultiTurnOptions = settings.multi_turn
    active = list(conversations)
    while active:
        requests = [
            replace(
                c.first,
                messages=tuple(c.messages),
                prompt_token_ids=tuple(c.token_ids),
                max_tokens=budget - c.tokens_used,
                turn=len(c.trajectory.turns),
            )
            for c in active
        ]
        checking = []
        for conversation, generation in zip(active, engine.generate(requests, settings), strict=True):
            conversation.token_ids.extend(generation.token_ids)
            trajectory = conversation.trajectory
            turn = Turn(
                extract_code(generation.text),
                generation.response_tokens,
                done=bool(trajectory.turns) and is_done_reply(generation.text, options),
            )
            trajectory.turns.append(turn)
            conversation.texts.append(generation.text)
            conversation.finish_reason = generation.finish_reason
            cut = generation.finish_reason == "length" or conversation.tokens_used >= budget
            trajectory.stop_reason = trajectory.stop_before_check(turn, cut)
            if trajectory.stop_reason is None:
                checking.append(conversation)
        checks = asyncio.run(_check_all(grader, [(c.texts[-1], c.public) for c in checking]))
        for conversation, check in zip(checking, checks, strict=True):
            _after_check(conversation, check, engine, grader, budget)
        active = [conversation for conversation in active if conversation.trajectory.stop_reason is None]


async def _check_all(grader: PublicGrader, work: Sequence[tuple[str, PublicTests]]) -> list:
    return list(await asyncio.gather(*(check_public(grader, text, public) for text, public in work)))


def _after_check(conversation: Conversation, check, engine: Any, grader: PublicGrader, budget: int) -> None:
    """Rules 4-7 of the conversation, and the feedback message when it goes on."""
    trajectory = conversation.trajectory
    trajectory.turns[-1].public = check
    trajectory.stop_reason = trajectory.stop_after_check(check)
    if trajectory.stop_reason is not None:
        return
    messages = [*conversation.messages, {"role": "assistant", "content": conversation.texts[-1]}]
    feedback = feedback_message(check, trajectory.options, grader.config)
    token_ids = engine.append_user_turn(conversation.token_ids, messages, feedback)
    added = len(token_ids) - len(conversation.token_ids)
    if not trajectory.room_for_next_turn(conversation.tokens_used, added, budget, trajectory.options.min_turn_tokens):
        trajectory.stop_reason = "token_budget"
        return
    conversation.messages = [*messages, {"role": "user", "content": feedback}]
    conversation.token_ids = list(token_ids)
    trajectory.feedback_tokens += added


def multi_turn_summary(
    records: Sequence[dict[str, Any]],
    final_verdicts: dict,
    first_verdicts: dict,
    single_turn_pass: dict[str, float],
    multi_turn_pass: dict[str, float],
) -> dict[str, Any]:
    """``summary.multi_turn`` of ``results.json``: both scores and the ``multi_turn/*`` metrics of the samples.

    ``*_verdicts`` map ``(problem_id, sample_index)`` to the hidden-test verdict of the final / first program.
    """
    extra_fields = []
    for record in records:
        key = (record["problem_id"], record["sample_index"])
        trajectory = dict(record[TRAJECTORY_KEY])
        trajectory["first_turn_hidden_accepted"] = first_verdicts[key] == "accepted"
        extra_fields.append(
            {TRAJECTORY_KEY: trajectory, "reward_extra_info": {"acc": final_verdicts[key] == "accepted"}}
        )
    metrics = multi_turn_metrics(extra_fields)
    return {
        "single_turn_pass_at_k": single_turn_pass,
        "multi_turn_pass_at_k": multi_turn_pass,
        "metrics": {name.removeprefix("multi_turn/"): value for name, value in metrics.items()},
    }

"""``MultiTurnOptions``: the settings of the public-test feedback loop (config ``nouscoder.multi_turn``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from omegaconf import DictConfig, OmegaConf

FeedbackFormat = Literal["full", "verdict"]
PublicGrading = Literal["auto", "local", "pool"]
CONFIG_PATH = "nouscoder.multi_turn"


@dataclass(frozen=True)
class MultiTurnOptions:
    """``nouscoder.multi_turn``: every option of the loop, with its default."""

    max_turns: int = 3
    """Assistant turns at most (1 = single turn: the program is never run on the public tests)."""
    feedback_format: FeedbackFormat = "full"
    """``full``: verdict, the first failing public input, expected and actual output (or the stderr tail of a
    crash); ``verdict``: the verdict line only (which public test failed and how, no test content)."""
    feedback_field_chars: int = 1000
    """Each shown input / output / stderr tail is cut to this many characters (a line says it was cut)."""
    allow_done: bool = False
    """After feedback the model may keep its last program by replying ``done_marker`` alone (no code): the loop
    stops and that program is graded. Off: every turn must bring a program."""
    done_marker: str = "DONE"
    max_response_tokens: int | None = None
    """Token budget of the whole trajectory (model turns + feedback messages); None = rollout.response_length,
    the context limit of the stage. Each turn may generate what is left of it."""
    min_turn_tokens: int = 256
    """No new turn starts when fewer tokens than this are left after its feedback message (it could not finish)."""
    turn_penalty: float = 0.0
    """Subtracted from an accepted trajectory's reward per extra turn: reward = 1 - turn_penalty * (turns - 1).
    Prefers programs right at the first try (and fewer tokens) among correct ones; failures stay at -1, so asking
    for feedback is never punished below failing, and ``turn_penalty * (max_turns - 1) < 2`` keeps every success
    above every failure (checked). 0 = the plain +1 / -1 reward."""
    grade_first_turn_on_hidden: bool = True
    """Also grade the first turn's program on the hidden tests when feedback was given (metric only: hidden pass
    rate of the first vs the last turn; costs one more hidden grading per trajectory that took feedback)."""
    public_grading: PublicGrading = "auto"
    """Where public tests run: ``local`` (the grader in the agent-loop process, ``reward_fns.score``), ``pool``
    (the Ray grading pool, ``reward_fns.ray_pool``), ``auto`` = the pool when the reward is
    ``reward_fns.async_score``, else local. Same ``GraderConfig`` as the reward either way."""

    def __post_init__(self) -> None:
        problems = []
        if int(self.max_turns) < 1:
            problems.append(f"max_turns must be >= 1, got {self.max_turns}")
        if self.feedback_format not in ("full", "verdict"):
            problems.append(f"feedback_format must be 'full' or 'verdict', got {self.feedback_format!r}")
        if self.public_grading not in ("auto", "local", "pool"):
            problems.append(f"public_grading must be 'auto', 'local' or 'pool', got {self.public_grading!r}")
        if int(self.feedback_field_chars) < 16:
            problems.append(f"feedback_field_chars must be >= 16, got {self.feedback_field_chars}")
        if self.max_response_tokens is not None and int(self.max_response_tokens) < 1:
            problems.append(f"max_response_tokens must be >= 1 or null, got {self.max_response_tokens}")
        if int(self.min_turn_tokens) < 1:
            problems.append(f"min_turn_tokens must be >= 1, got {self.min_turn_tokens}")
        if not str(self.done_marker).strip():
            problems.append("done_marker must not be empty")
        penalty = float(self.turn_penalty)
        if penalty < 0 or penalty * (int(self.max_turns) - 1) >= 2.0:
            problems.append(
                f"turn_penalty must be >= 0 and turn_penalty * (max_turns - 1) < 2 (a late success must stay above a "
                f"failure at -1), got turn_penalty={self.turn_penalty} with max_turns={self.max_turns}"
            )
        if problems:
            raise ValueError(f"{CONFIG_PATH}: " + "; ".join(problems))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> MultiTurnOptions:
        values = dict(values or {})
        known = {option.name for option in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown option(s) {CONFIG_PATH}.{unknown}; known options are {sorted(known)}")
        return cls(**values)

    @classmethod
    def from_config(cls, config: DictConfig) -> MultiTurnOptions:
        """From the trainer config's ``nouscoder.multi_turn`` (absent: the defaults)."""
        node = OmegaConf.select(config, CONFIG_PATH)
        return cls.from_mapping(OmegaConf.to_container(node, resolve=True) if node is not None else None)

    def token_budget(self, response_length: int) -> int:
        """Tokens the whole trajectory may take: ``max_response_tokens``, at most the stage's ``response_length``."""
        if self.max_response_tokens is None:
            return int(response_length)
        if int(self.max_response_tokens) > int(response_length):
            raise ValueError(
                f"{CONFIG_PATH}.max_response_tokens={self.max_response_tokens} exceeds "
                f"actor_rollout_ref.rollout.response_length={response_length}: the trajectory would be cut; "
                f"lower it or leave it null"
            )
        return int(self.max_response_tokens)

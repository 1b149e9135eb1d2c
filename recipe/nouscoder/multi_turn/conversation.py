"""One trajectory's turns, the rule that ends it, and its record (``extra_fields["multi_turn"]``).

Used by the verl agent loop (``agent_loop``) and by the LiveCodeBench evaluation's multi-turn mode alike. After each
model turn, in this order (the first that holds ends the trajectory):

1. ``done``: ``allow_done`` is on, feedback was given and the model replied the done marker; the last program it
   wrote is the final one;
2. ``token_budget``: the turn used up the trajectory's token budget (it was cut);
3. ``no_public_tests``: the problem has none, so there is nothing to run (a single-turn rollout);
4. ``public_passed``: every public test passed;
5. ``grader_error``: the public grading itself failed (``internal_error``): no feedback can be trusted;
6. ``max_turns``: this was the last allowed turn;
7. ``token_budget`` again: after the feedback message fewer than ``min_turn_tokens`` tokens would be left.

Otherwise the feedback message goes back to the model and it writes the next turn. The final program (graded on the
hidden tests by the reward) is the last turn's, except after ``done``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from recipe.nouscoder.multi_turn.options import MultiTurnOptions
from recipe.nouscoder.multi_turn.public_tests import PublicCheck
from reward_fns.multi_turn import FINAL_PROGRAM, TURN_PENALTY, TURNS
from reward_fns.types import Verdict

StopReason = Literal["done", "token_budget", "no_public_tests", "public_passed", "grader_error", "max_turns"]
STOP_REASONS: tuple[str, ...] = StopReason.__args__


@dataclass
class Turn:
    """One model turn."""

    program: str | None
    """The turn's program (``reward_fns.extract.extract_code``), None when it wrote none."""
    tokens: int
    """Tokens the model generated in this turn."""
    done: bool = False
    """The turn was the done reply."""
    public: PublicCheck | None = None
    """The public check of the turn's program (None: not checked)."""


@dataclass
class Trajectory:
    """The turns of one trajectory so far and how it ended."""

    options: MultiTurnOptions
    has_public_tests: bool
    public_tests_error: str = ""
    """Why the row's public tests could not be read ("" when they could, or when it has none)."""
    turns: list[Turn] = field(default_factory=list)
    feedback_tokens: int = 0
    """Tokens of the feedback messages in the trajectory (response_mask 0)."""
    stop_reason: StopReason | None = None
    first_turn_hidden_accepted: bool | None = None
    """The first program on the hidden tests (metric only); None when not graded (no feedback, or switched off)."""

    def stop_before_check(self, turn: Turn, cut: bool) -> StopReason | None:
        """Rules 1-3, after ``turn`` was added and before its public check."""
        if turn.done:
            return "done"
        if cut:
            return "token_budget"
        if not self.has_public_tests:
            return "no_public_tests"
        return None

    def stop_after_check(self, check: PublicCheck) -> StopReason | None:
        """Rules 4-6, given the public check of the last turn."""
        if check.all_passed:
            return "public_passed"
        if check.verdict is Verdict.INTERNAL_ERROR:
            return "grader_error"
        if len(self.turns) >= self.options.max_turns:
            return "max_turns"
        return None

    @staticmethod
    def room_for_next_turn(tokens_used: int, feedback_tokens: int, budget: int, min_turn_tokens: int) -> bool:
        """Rule 7: a next turn fits when ``min_turn_tokens`` are left after the feedback message."""
        return tokens_used + feedback_tokens + min_turn_tokens <= budget

    @property
    def final_program(self) -> str | None:
        """The last turn's program; after a done reply, the last program written."""
        if self.stop_reason == "done":
            return next((turn.program for turn in reversed(self.turns) if turn.program is not None), None)
        return self.turns[-1].program if self.turns else None

    def record(self) -> dict[str, Any]:
        """``extra_fields["multi_turn"]``: what the reward grades and the step metrics read (no test content)."""
        checked = [turn.public for turn in self.turns]
        return {
            TURNS: len(self.turns),
            FINAL_PROGRAM: self.final_program,
            TURN_PENALTY: float(self.options.turn_penalty),
            "stop_reason": self.stop_reason,
            "public_passed": [None if check is None else check.all_passed for check in checked],
            "public_verdicts": [None if check is None else str(check.verdict) for check in checked],
            "turn_tokens": [turn.tokens for turn in self.turns],
            "feedback_tokens": self.feedback_tokens,
            "first_turn_hidden_accepted": self.first_turn_hidden_accepted,
            "public_tests_error": bool(self.public_tests_error),
        }

"""The reward of a multi-turn trajectory: its final program on the hidden tests, minus an optional turn penalty.

A multi-turn agent loop (``recipe/nouscoder/multi_turn``) decodes one response made of several model turns and
feedback messages; the last python block of that text is not necessarily the final turn's program (a final turn may
hold none). So the loop writes a record into the rollout's ``extra_fields[TRAJECTORY_KEY]``: the final program
(``final_program``, None when the final turn wrote none), ``turns`` and ``turn_penalty``. verl 0.9.1's reward
managers ``naive``, ``limited`` and ``remote`` merge ``extra_fields`` into the ``extra_info`` they pass to
``compute_score`` (``extra_info.update(tool_extra_fields.items())``, ``verl/experimental/reward_loop/reward_manager``);
both reward functions of this package (``score.compute_score``, ``async_score.compute_score``) then grade the final
program instead of the decoded text, and subtract ``turn_penalty * (turns - 1)`` from an accepted score. Without the
record (single-turn rollouts) nothing changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reward_fns.extract import fenced_block

TRAJECTORY_KEY = "multi_turn"
"""``extra_fields`` / ``extra_info`` key of a multi-turn trajectory's record."""
FINAL_PROGRAM = "final_program"
TURNS = "turns"
TURN_PENALTY = "turn_penalty"


def trajectory_record(extra_info: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The multi-turn record merged into ``extra_info``, or None for a single-turn rollout."""
    record = (extra_info or {}).get(TRAJECTORY_KEY)
    return record if isinstance(record, Mapping) else None


def response_to_grade(solution_str: str, extra_info: Mapping[str, Any] | None) -> str:
    """The text whose last python block is graded: a trajectory's final program, else ``solution_str`` itself."""
    record = trajectory_record(extra_info)
    if record is None:
        return solution_str
    program = record.get(FINAL_PROGRAM)
    return "" if program is None else fenced_block(program)


def turn_penalty(extra_info: Mapping[str, Any] | None, accepted: bool) -> float:
    """``turn_penalty * (turns - 1)`` of an accepted trajectory; 0 otherwise and for single-turn rollouts."""
    record = trajectory_record(extra_info)
    if record is None or not accepted:
        return 0.0
    return float(record.get(TURN_PENALTY) or 0.0) * max(int(record.get(TURNS) or 1) - 1, 0)

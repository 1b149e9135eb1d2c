"""Per-step ``multi_turn/*`` metrics, from each rollout's record and reward dict (both in ``extra_fields``).

Keys (only for steps whose rollouts carry a multi-turn record; none otherwise):

- ``multi_turn/turns/mean``, ``multi_turn/turns/max`` and ``multi_turn/turns/hist_<k>``: the fraction of rollouts
  that used k turns (k = 1 .. the most used this step);
- ``multi_turn/public_pass_rate/turn_<k>``: of the rollouts whose turn k was run on the public tests, the fraction
  that passed them all;
- ``multi_turn/hidden_pass_rate/first_turn`` and ``.../last_turn``: the first and the final program on the hidden
  tests (the final one is the reward's ``acc``; the first one is the same program for one-turn rollouts, else its
  own grading, ``grade_first_turn_on_hidden``); the first-turn rate is left out when some first programs were not
  graded;
- ``multi_turn/feedback/given``: rollouts that got at least one feedback message; ``multi_turn/feedback/fixed_rate``:
  of those, the fraction whose final program passed the hidden tests (the first attempt had failed the public ones);
- ``multi_turn/feedback_tokens/mean`` and ``.../fraction``: feedback tokens per rollout, and their share of all
  response tokens (model + feedback);
- ``multi_turn/stop_reason/<reason>``: rollouts ended by each rule of ``conversation``;
- ``multi_turn/public_tests_errors``: rollouts whose row had unreadable public tests (run single-turn);
- ``multi_turn/mask_mismatch`` (given the trained batch's ``response_mask``): rollouts whose trained tokens are not
  exactly their model tokens (0 unless the masking is broken: feedback tokens must not train, model tokens must).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from recipe.nouscoder.extra_fields import extra_field_values, reward_infos_from_extra_fields
from recipe.nouscoder.multi_turn.conversation import STOP_REASONS
from reward_fns.multi_turn import TRAJECTORY_KEY, TURNS

PREFIX = "multi_turn/"


def _rate(values: Sequence[bool]) -> float:
    return sum(values) / len(values)


def multi_turn_metrics(extra_fields: Sequence[Any], trained_tokens: Sequence[int] | None = None) -> dict[str, float]:
    """The ``multi_turn/*`` metrics of one step's rollouts (module docstring); {} when none is multi-turn.

    ``trained_tokens``: each rollout's ``response_mask`` sum, row-aligned with ``extra_fields``.
    """
    every_record = extra_field_values(extra_fields, TRAJECTORY_KEY)
    infos = reward_infos_from_extra_fields(extra_fields)
    rollouts = [(record, info) for record, info in zip(every_record, infos, strict=True) if isinstance(record, Mapping)]
    if not rollouts:
        return {}
    records = [record for record, _ in rollouts]
    turns = [int(record[TURNS]) for record in records]
    metrics = {
        PREFIX + "turns/mean": sum(turns) / len(turns),
        PREFIX + "turns/max": float(max(turns)),
        **{PREFIX + f"turns/hist_{k}": turns.count(k) / len(turns) for k in range(1, max(turns) + 1)},
        **_public_pass_rates(records),
        **_hidden_pass_rates(rollouts),
        **_feedback_tokens(records),
    }
    reasons = Counter(record.get("stop_reason") for record in records)
    metrics.update({PREFIX + f"stop_reason/{reason}": float(reasons[reason]) for reason in STOP_REASONS})
    metrics[PREFIX + "public_tests_errors"] = float(sum(bool(record.get("public_tests_error")) for record in records))
    if trained_tokens is not None:
        mismatched = [
            isinstance(record, Mapping) and int(trained) != sum(record.get("turn_tokens") or [])
            for record, trained in zip(every_record, trained_tokens, strict=True)
        ]
        metrics[PREFIX + "mask_mismatch"] = float(sum(mismatched))
    return metrics


def _public_pass_rates(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    by_turn: dict[int, list[bool]] = {}
    for record in records:
        for turn, passed in enumerate(record.get("public_passed") or [], start=1):
            if passed is not None:
                by_turn.setdefault(turn, []).append(bool(passed))
    return {PREFIX + f"public_pass_rate/turn_{turn}": _rate(values) for turn, values in sorted(by_turn.items())}


def _hidden_pass_rates(rollouts: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> dict[str, float]:
    graded = [(record, bool(info["acc"])) for record, info in rollouts if info.get("acc") is not None]
    if not graded:
        return {}
    metrics = {PREFIX + "hidden_pass_rate/last_turn": _rate([accepted for _, accepted in graded])}
    first = [
        accepted if record[TURNS] == 1 else record.get("first_turn_hidden_accepted") for record, accepted in graded
    ]
    if all(value is not None for value in first):
        metrics[PREFIX + "hidden_pass_rate/first_turn"] = _rate([bool(value) for value in first])
    with_feedback = [accepted for record, accepted in graded if record[TURNS] > 1]
    metrics[PREFIX + "feedback/given"] = float(len(with_feedback))
    if with_feedback:
        metrics[PREFIX + "feedback/fixed_rate"] = _rate(with_feedback)
    return metrics


def _feedback_tokens(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    feedback = [int(record.get("feedback_tokens") or 0) for record in records]
    model = [sum(record.get("turn_tokens") or []) for record in records]
    total = sum(feedback) + sum(model)
    return {
        PREFIX + "feedback_tokens/mean": sum(feedback) / len(feedback),
        PREFIX + "feedback_tokens/fraction": sum(feedback) / total if total else 0.0,
    }

"""Negative controls: runs that must not learn, so that a run that does learn shows the reward is what it learns from.

``nouscoder.negative_control.mode`` (configs/nouscoder/extensions.yaml), applied by the trainers around verl's
advantage step (``NousCoderTrainerMixin._compute_advantage``), for both trainers and every estimator and loss:

- ``shuffle_rewards``: before the advantage estimator, each group's sequence rewards are permuted among its rollouts
  (a seeded permutation per group and step). The group's mean, std and pass count are unchanged, so dynamic
  sampling, the online filter and every group statistic behave as in the real run, but a reward no longer says
  anything about the response it is attached to: the expected policy gradient is zero. Whatever such a run gains
  comes from something other than the reward (the clip asymmetry of DAPO, sharpening toward the mode). The stored
  rewards are put back after the advantage step, so the step's metrics report the true verdicts.
- ``flip_advantages``: the advantages the estimator wrote are negated (gradient ascent on the loss): such a run
  must get worse.

Off (``null``) in every recipe config; ``benchmarks/learning_curve.py`` and the CPU learning test turn it on for
their control runs. Each step logs ``nouscoder/negative_control/{active,moved_rewards}``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import transfer_queue as tq
from tensordict import TensorDict
from transfer_queue import KVBatchMeta

MODES = ("shuffle_rewards", "flip_advantages")


@dataclass(frozen=True)
class NegativeControl:
    """``nouscoder.negative_control``: ``mode`` (None = off, or one of ``MODES``) and the permutation seed."""

    mode: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode is not None and self.mode not in MODES:
            raise ValueError(f"nouscoder.negative_control.mode must be null or one of {MODES}, got {self.mode!r}")

    @classmethod
    def from_config(cls, node) -> NegativeControl:
        if node is None:
            return cls()
        return cls(mode=node.get("mode"), seed=int(node.get("seed", 0)))

    @contextmanager
    def around_advantage(self, batch: KVBatchMeta, global_steps: int, metrics: dict) -> Iterator[None]:
        """Wrap verl's advantage step on ``batch`` (rows in TransferQueue) with this control (no-op when off)."""
        if self.mode is None:
            yield
            return
        keys = [key for key, tag in zip(batch.keys, batch.tags, strict=True) if not tag.get("is_padding", False)]
        moved = 0.0
        if self.mode == "shuffle_rewards":
            data = tq.kv_batch_get(keys=keys, partition_id=batch.partition_id, select_fields=["uid", "rm_scores"])
            original = list(data["rm_scores"].unbind(0))
            uids = [str(uid) for uid in data["uid"]]
            shuffled, moved = shuffled_within_groups(original, uids, f"{self.seed}/{global_steps}")
            _put_rows(keys, batch.partition_id, "rm_scores", shuffled)
            try:
                yield
            finally:
                _put_rows(keys, batch.partition_id, "rm_scores", original)
        else:
            yield
            data = tq.kv_batch_get(keys=keys, partition_id=batch.partition_id, select_fields=["advantages"])
            _put_rows(keys, batch.partition_id, "advantages", [-row for row in data["advantages"].unbind(0)])
        metrics["nouscoder/negative_control/active"] = 1.0
        metrics["nouscoder/negative_control/moved_rewards"] = moved


def shuffled_within_groups(
    token_scores: Sequence[torch.Tensor], uids: Sequence[str], seed: str
) -> tuple[list[torch.Tensor], float]:
    """Each row's sequence reward replaced by that of another row of its group, and the fraction that changed.

    ``token_scores[i]`` is row i's per-token reward (length = its response length; verl puts the sequence reward on
    the last token). Rows are permuted within each group by ``random.Random(f"{seed}/{uid}")``; the returned rows
    carry the permuted sequence reward on their own last token and zeros elsewhere.
    """
    rows_of: dict[str, list[int]] = {}
    for row, uid in enumerate(uids):
        rows_of.setdefault(uid, []).append(row)
    rewards = [float(scores.sum()) for scores in token_scores]
    new_rewards = list(rewards)
    for uid, rows in rows_of.items():
        donors = list(rows)
        random.Random(f"{seed}/{uid}").shuffle(donors)
        for row, donor in zip(rows, donors, strict=True):
            new_rewards[row] = rewards[donor]
    shuffled = []
    for scores, reward in zip(token_scores, new_rewards, strict=True):
        moved_scores = torch.zeros_like(scores)
        if moved_scores.numel():
            moved_scores[-1] = reward
        shuffled.append(moved_scores)
    changed = sum(new != old for new, old in zip(new_rewards, rewards, strict=True))
    return shuffled, changed / max(len(rewards), 1)


def _put_rows(keys: list[str], partition_id: str, name: str, rows: list[torch.Tensor]) -> None:
    nested = torch.nested.as_nested_tensor(rows, layout=torch.jagged)
    tq.kv_batch_put(keys=keys, partition_id=partition_id, fields=TensorDict({name: nested}, batch_size=len(keys)))

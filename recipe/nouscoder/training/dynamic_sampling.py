"""DAPO dynamic sampling with a cap on extra generation (NousCoder "GRPO Algorithm and Variants").

Groups whose rewards are all equal have zero GRPO advantage and carry no gradient; DAPO drops them and
samples more prompts until the batch is full. verl 0.9.1 already does the dropping and refilling in its V1
replay buffer (``algorithm.filter_groups.enable=True``, ``metric=reward``): it evicts finished groups whose
metric has zero std and dispatches replacement prompts. What it lacks, and what this module extends it with:

* a cap on extra generation: verl's V1 buffer ignores ``filter_groups.max_num_gen_batches``, so a step on
  a too-easy or too-hard data slice can generate without end. Here the replacement prompts dispatched in one
  step are counted; at ``max_extra_prompts`` (``nouscoder.dynamic_sampling.max_extra_rounds`` x
  ``data.train_batch_size``) filtering pauses for the rest of the step, so the remaining refills fill the batch
  and zero-variance groups are trained on with zero advantage instead of being regenerated;
* statistics of what was dropped (groups, of which all-pass / all-fail) for the step metrics;
* a hook reporting problems whose dropped group passed every rollout, so online filtering
  (``online_filter.py``) sees fully solved problems that never reach the training batch;
* a bound on failed groups (a session of the group raised: agent loop, server or reward function). verl logs
  each failure and goes on: the async buffer evicts the group and dispatches a replacement, the sync buffer
  trains on the sessions that finished. A fault that hits every rollout (a broken reward function) therefore
  never ends an async run. Failed groups are counted per step (``nouscoder/dynamic_sampling/failed_groups``)
  and past ``max_failed_groups`` in one step the step raises ``RolloutFailures``, naming the cause's log line.

``CappedReplayBuffer`` / ``CappedReplayBufferAsync`` are verl's sync / async buffers with these additions.
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import transfer_queue as tq
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync


@dataclass
class DynamicSamplingStats:
    """What dynamic sampling did since the stats were last taken (normally one training step)."""

    dropped_groups: int = 0
    dropped_solve_all: int = 0
    dropped_solve_none: int = 0
    extra_prompts: int = 0
    cap_reached: int = 0
    failed_groups: int = 0

    def as_metrics(self) -> dict[str, float]:
        return {f"nouscoder/dynamic_sampling/{name}": float(value) for name, value in asdict(self).items()}


class RolloutFailures(RuntimeError):
    """More failed rollout groups in one step than ``nouscoder.dynamic_sampling.max_failed_groups``."""


if TYPE_CHECKING:  # the mixin always sits before a verl ReplayBuffer in the MRO
    _VerlBuffer = ReplayBuffer
else:
    _VerlBuffer = object


class CappedGroupFilterMixin(_VerlBuffer):
    """Adds the extra-generation cap, drop statistics and solved-problem reporting to a verl ReplayBuffer."""

    def configure_dynamic_sampling(
        self,
        max_extra_prompts: int | None,
        pass_threshold: float = 0.0,
        on_solved_problems: Callable[[set[str]], None] | None = None,
        max_failed_groups: int | None = None,
    ) -> None:
        """Set the cap (None = verl's uncapped behaviour), the solved-problem callback and the failed-group bound
        (None = unbounded); wraps ``refill_fn``."""
        for name, value in (("max_extra_prompts", max_extra_prompts), ("max_failed_groups", max_failed_groups)):
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0 or None, got {value}")
        self.max_extra_prompts = max_extra_prompts
        self.max_failed_groups = max_failed_groups
        self.pass_threshold = pass_threshold
        self.on_solved_problems = on_solved_problems
        self.configured_filter_metric = self.filter_groups_metric
        self.dispatch_prompts = self.refill_fn
        self.refill_fn = self._refill_counted
        self.stats = DynamicSamplingStats()
        self.begin_step()

    def begin_step(self) -> None:
        """Reset the per-step budget and resume filtering (called by the trainer at each step start)."""
        self.extra_prompts_this_step = 0
        self.failed_groups_this_step = 0
        self.filter_groups_metric = self.configured_filter_metric

    def take_stats(self) -> DynamicSamplingStats:
        """Stats since the last call, then reset."""
        stats, self.stats = self.stats, DynamicSamplingStats()
        return stats

    def _refill_counted(self, num_prompts: int) -> int:
        dispatched = self.dispatch_prompts(num_prompts)
        self.extra_prompts_this_step += num_prompts
        self.stats.extra_prompts += num_prompts
        cap_hit = self.max_extra_prompts is not None and self.extra_prompts_this_step >= self.max_extra_prompts
        if cap_hit and self.filter_groups_metric is not None:
            # verl's buffers skip group filtering while filter_groups_metric is None; sampling goes on.
            self.filter_groups_metric = None
            self.stats.cap_reached += 1
        return dispatched

    def _evict_terminal_groups(self, global_steps, partition_id, eviction_reasons):
        dapo_uids, failed_uids = eviction_reasons[1], eviction_reasons[2]
        if dapo_uids:
            self._record_dropped_groups(partition_id, dapo_uids)
        self._count_failed_groups(len(failed_uids))
        return super()._evict_terminal_groups(global_steps, partition_id, eviction_reasons)

    def _materialize_batch(self, partition_id, selected_prompt_uids, partition_snapshot):
        # The sync buffer keeps failed groups sampleable (their finished sessions are trained on).
        self._count_failed_groups(len(self.failure_keys[partition_id].intersection(selected_prompt_uids)))
        return super()._materialize_batch(partition_id, selected_prompt_uids, partition_snapshot)

    def _count_failed_groups(self, count: int) -> None:
        if not count:
            return
        self.failed_groups_this_step += count
        self.stats.failed_groups += count
        if self.max_failed_groups is not None and self.failed_groups_this_step > self.max_failed_groups:
            raise RolloutFailures(
                f"{self.failed_groups_this_step} rollout groups failed in this step (more than "
                f"nouscoder.dynamic_sampling.max_failed_groups={self.max_failed_groups}): a session of each raised "
                "in the agent loop, the rollout server or the reward function. The cause is logged above as "
                "'Error in _run_prompt' by the agent-loop workers."
            )

    def _record_dropped_groups(self, partition_id: str, dapo_uids: set[str]) -> None:
        """Count the zero-variance groups about to be evicted and report the fully solved problems among them."""
        shared_values = self._dapo_classification_cache[partition_id]
        solved_uids = {uid for uid in dapo_uids if (shared_values.get(uid) or 0.0) > self.pass_threshold}
        self.stats.dropped_groups += len(dapo_uids)
        self.stats.dropped_solve_all += len(solved_uids)
        self.stats.dropped_solve_none += len(dapo_uids) - len(solved_uids)
        if solved_uids and self.on_solved_problems is not None:
            self.on_solved_problems(self._problem_ids_of(partition_id, solved_uids))

    def _problem_ids_of(self, partition_id: str, uids: set[str]) -> set[str]:
        """``extra_info.problem_id`` of the given prompt groups, read from one trajectory of each."""
        first_key_of_uid: dict[str, str] = {}
        for key in self.partitions[partition_id]:
            first_key_of_uid.setdefault(key.split("_")[0], key)
        keys = [first_key_of_uid[uid] for uid in uids if uid in first_key_of_uid]
        if not keys:
            return set()
        data = tq.kv_batch_get(keys=keys, partition_id=partition_id, select_fields=["extra_info"])
        extra_infos = [getattr(value, "data", value) for value in data["extra_info"]]
        return {str(info["problem_id"]) for info in extra_infos if info and info.get("problem_id") is not None}


class CappedReplayBuffer(CappedGroupFilterMixin, ReplayBuffer):
    """verl's synchronous ReplayBuffer with the dynamic-sampling cap and statistics."""


class CappedReplayBufferAsync(CappedGroupFilterMixin, ReplayBufferAsync):
    """verl's asynchronous ReplayBuffer with the dynamic-sampling cap and statistics."""


CAPPED_BUFFER_OF = {ReplayBuffer: CappedReplayBuffer, ReplayBufferAsync: CappedReplayBufferAsync}

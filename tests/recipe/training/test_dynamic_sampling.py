"""Dynamic sampling through verl's real V1 ReplayBuffer.sample over an in-memory TransferQueue stand-in:
zero-variance groups are dropped and refilled, the cap stops regeneration, drops are counted."""

from collections import deque

import pytest
import transfer_queue
from omegaconf import OmegaConf

from recipe.nouscoder.training.dynamic_sampling import (
    CappedReplayBuffer,
    CappedReplayBufferAsync,
    DynamicSamplingStats,
    RolloutFailures,
)


class InMemoryTransferQueue:
    """The four TransferQueue calls verl's ReplayBuffer makes, over dicts."""

    def __init__(self):
        self.tags: dict[str, dict[str, dict]] = {}
        self.fields: dict[str, dict] = {}

    def kv_list(self, partition_id=None):
        return {pid: dict(items) for pid, items in self.tags.items() if partition_id in (None, pid)}

    def kv_batch_get(self, keys, partition_id, select_fields):
        return {name: [self.fields[key][name] for key in keys] for name in select_fields}

    def kv_clear(self, keys, partition_id):
        for key in keys:
            self.tags[partition_id].pop(key, None)
            self.fields.pop(key, None)

    def put_finished_groups(self, batch, prompt_step: int, status: str = "finished") -> None:
        """Register each group of a DataProto rollout batch as a finished prompt with its trajectories
        (``status="failure"``: verl's tag when a session of the group raised)."""
        partition = self.tags.setdefault("train", {})
        session_of_uid: dict[str, int] = {}
        for row, uid in enumerate(batch.non_tensor_batch["uid"]):
            session = session_of_uid.get(uid, 0)
            session_of_uid[uid] = session + 1
            key = f"{uid}_{session}_0"
            partition[key] = {"status": "success", "global_steps": prompt_step, "seq_len": 4}
            self.fields[key] = {
                "rm_scores": batch.batch["rm_scores"][row],
                "extra_info": batch.non_tensor_batch["extra_info"][row],
            }
        for uid in session_of_uid:
            partition[uid] = {"is_prompt": True, "status": status, "global_steps": prompt_step}


@pytest.fixture
def fake_tq(monkeypatch):
    store = InMemoryTransferQueue()
    for name in ("kv_list", "kv_batch_get", "kv_clear"):
        monkeypatch.setattr(transfer_queue, name, getattr(store, name))
    return store


def make_buffer(buffer_cls, refill_fn, max_extra_prompts, solved_sink, max_failed_groups=None):
    buffer = buffer_cls(
        trainer_mode="sync" if buffer_cls is CappedReplayBuffer else "separate_async",
        trainer_config=OmegaConf.create({}),
        max_off_policy_threshold=None,
        max_off_policy_strategy="drop",
        sampler_kwargs=OmegaConf.create({}),
        poll_interval=0.01,
        refill_fn=refill_fn,
        filter_groups_metric="reward",
        train_batch_size=2,
        gen_batch_size=1,
        max_inflight_gen_batches=1,
    )
    buffer.configure_dynamic_sampling(
        max_extra_prompts,
        pass_threshold=0.0,
        on_solved_problems=solved_sink.update,
        max_failed_groups=max_failed_groups,
    )
    return buffer


def groups(kit, spec: dict[str, list[float]]):
    return {
        uid: kit.build([kit.Group(uid, [kit.Rollout(score, [1, 2]) for score in scores], problem_id=f"problem-{uid}")])
        for uid, scores in spec.items()
    }


@pytest.mark.parametrize("buffer_cls", [CappedReplayBuffer, CappedReplayBufferAsync])
def test_keeps_exactly_groups_with_reward_variance_and_refills(kit, fake_tq, buffer_cls):
    first = groups(kit, {"g1": [1, -1], "g2": [-1, -1]})
    refills = deque(groups(kit, {"g3": [1, 1], "g4": [-1, 1], "g5": [1, -1], "g6": [1, -1]}).values())
    for batch in first.values():
        fake_tq.put_finished_groups(batch, prompt_step=1)

    def refill(num_prompts: int) -> int:
        for _ in range(num_prompts):
            fake_tq.put_finished_groups(refills.popleft(), prompt_step=1)
        return num_prompts

    solved: set[str] = set()
    buffer = make_buffer(buffer_cls, refill, max_extra_prompts=None, solved_sink=solved)
    batch, _ = buffer.sample(global_steps=1, partition_id="train", batch_size=2)

    # g2 (all fail) dropped -> refilled with g3 (all pass, dropped too) and g4 (mixed); batch = g1 + g4
    assert sorted({key.split("_")[0] for key in batch.keys}) == ["g1", "g4"]
    assert len(batch.keys) == 4
    stats = buffer.take_stats()
    assert (stats.dropped_groups, stats.dropped_solve_all, stats.dropped_solve_none) == (2, 1, 1)
    assert stats.extra_prompts == 2 and stats.cap_reached == 0
    assert solved == {"problem-g3"}
    assert buffer.take_stats().dropped_groups == 0  # taken stats reset


def test_cap_stops_regeneration_and_fills_the_batch(kit, fake_tq):
    for batch in groups(kit, {"g1": [1, -1], "g2": [-1, -1]}).values():
        fake_tq.put_finished_groups(batch, prompt_step=1)
    refills = deque(groups(kit, {"g3": [1, 1], "g4": [-1, -1], "g5": [1, -1], "g6": [1, -1]}).values())
    calls: list[int] = []

    def refill(num_prompts: int) -> int:
        calls.append(num_prompts)
        for _ in range(num_prompts):
            fake_tq.put_finished_groups(refills.popleft(), prompt_step=2)
        return num_prompts

    buffer = make_buffer(CappedReplayBuffer, refill, max_extra_prompts=2, solved_sink=set())
    batch, _ = buffer.sample(global_steps=1, partition_id="train", batch_size=2)

    # one refill of 2 prompts reaches the cap: g3 and g4 (zero variance) are no longer dropped, and the
    # batch is g1 (oldest prompt step) plus one of them; g5, g6 are never generated
    selected = {key.split("_")[0] for key in batch.keys}
    assert calls == [2]
    assert "g1" in selected and len(selected) == 2 and selected <= {"g1", "g3", "g4"}
    stats = buffer.take_stats()
    assert (stats.dropped_groups, stats.extra_prompts, stats.cap_reached) == (1, 2, 1)
    assert len(refills) == 2

    buffer.begin_step()  # the next step filters again
    assert buffer.filter_groups_metric == "reward" and buffer.extra_prompts_this_step == 0


def test_stats_as_metrics_names():
    metrics = DynamicSamplingStats(dropped_groups=3, extra_prompts=4).as_metrics()
    assert metrics["nouscoder/dynamic_sampling/dropped_groups"] == 3.0
    assert metrics["nouscoder/dynamic_sampling/extra_prompts"] == 4.0
    assert metrics["nouscoder/dynamic_sampling/cap_reached"] == 0.0


def test_async_failed_groups_are_counted_and_past_the_bound_the_step_raises(kit, fake_tq):
    """verl's async buffer evicts a failed group and dispatches a replacement, forever if every rollout fails."""
    fake_tq.put_finished_groups(groups(kit, {"g1": [1, -1]})["g1"], prompt_step=1)
    fake_tq.put_finished_groups(groups(kit, {"f1": [1, -1]})["f1"], prompt_step=1, status="failure")
    replacements = iter(range(100))

    def refill_with_failures(num_prompts: int) -> int:
        for _ in range(num_prompts):
            uid = f"f{next(replacements) + 2}"
            fake_tq.put_finished_groups(groups(kit, {uid: [1, -1]})[uid], prompt_step=1, status="failure")
        return num_prompts

    buffer = make_buffer(CappedReplayBufferAsync, refill_with_failures, None, set(), max_failed_groups=3)
    with pytest.raises(RolloutFailures, match=r"4 rollout groups failed .*max_failed_groups=3.*Error in _run_prompt"):
        buffer.sample(global_steps=1, partition_id="train", batch_size=2)
    assert buffer.take_stats().failed_groups == 4


def test_async_failures_below_the_bound_are_replaced_and_counted(kit, fake_tq):
    fake_tq.put_finished_groups(groups(kit, {"g1": [1, -1]})["g1"], prompt_step=1)
    fake_tq.put_finished_groups(groups(kit, {"f1": [1, -1]})["f1"], prompt_step=1, status="failure")

    def refill(num_prompts: int) -> int:
        fake_tq.put_finished_groups(groups(kit, {"g2": [-1, 1]})["g2"], prompt_step=1)
        return num_prompts

    buffer = make_buffer(CappedReplayBufferAsync, refill, None, set(), max_failed_groups=1)
    batch, _ = buffer.sample(global_steps=1, partition_id="train", batch_size=2)
    assert sorted({key.split("_")[0] for key in batch.keys}) == ["g1", "g2"]
    assert buffer.take_stats().failed_groups == 1
    buffer.begin_step()
    assert buffer.failed_groups_this_step == 0


def test_sync_counts_the_failed_groups_it_trains_on(kit, fake_tq):
    """verl's sync buffer keeps a failed group sampleable and trains on its finished sessions."""
    fake_tq.put_finished_groups(groups(kit, {"g1": [1, -1]})["g1"], prompt_step=1)
    fake_tq.put_finished_groups(groups(kit, {"f1": [1, -1]})["f1"], prompt_step=1, status="failure")
    buffer = make_buffer(CappedReplayBuffer, lambda n: n, None, set(), max_failed_groups=0)
    with pytest.raises(RolloutFailures, match="1 rollout groups failed"):
        buffer.sample(global_steps=1, partition_id="train", batch_size=2)

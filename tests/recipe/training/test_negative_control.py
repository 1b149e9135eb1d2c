"""Negative controls (recipe/nouscoder/training/negative_control.py) on verl 0.9.1's real V1 advantage step over an in-memory
TransferQueue: the estimator sees each group's rewards permuted, or its advantages are negated; stored rewards stay."""

import math
import random

import pytest
import torch
from omegaconf import open_dict

from recipe.nouscoder.training.negative_control import NegativeControl, shuffled_within_groups
from recipe.nouscoder.training.trainer import NousCoderSyncTrainer
from tests.recipe.training.test_trainer_advantage_inputs import (
    GROUP,
    PARTITION,
    make_config,
    store_group,
    stored_advantages,
)

PADDING_KEY = "u1_pad"


def trainer_with_control(mode: str | None) -> NousCoderSyncTrainer:
    config = make_config("grpo_plus", {"max_response_length": 100})  # nothing truncated: every advantage counts
    with open_dict(config):
        config.nouscoder.negative_control.mode = mode
    trainer = NousCoderSyncTrainer(config)
    trainer.global_steps = 5  # set by verl's fit / checkpoint loading in a real run
    return trainer


def grpo_reference(rewards: dict[str, float]) -> dict[str, float]:
    """(R_i - mean) / (std + 1e-6) of one group, std with Bessel's correction, written out independently."""
    mean = sum(rewards.values()) / len(rewards)
    std = math.sqrt(sum((reward - mean) ** 2 for reward in rewards.values()) / (len(rewards) - 1))
    return {key: (reward - mean) / (std + 1e-6) for key, reward in rewards.items()}


def test_shuffle_permutes_each_groups_rewards_onto_the_last_token_reproducibly():
    rng = random.Random(7)
    uids = [f"g{rng.randint(0, 5)}" for _ in range(40)]
    rows = []
    for _ in uids:
        row = torch.zeros(rng.randint(1, 6))
        row[-1] = rng.choice([-1.0, 1.0, 0.5])
        rows.append(row)
    shuffled, moved = shuffled_within_groups(rows, uids, "0/3")
    for uid in set(uids):
        members = [index for index, group in enumerate(uids) if group == uid]
        assert sorted(float(rows[i].sum()) for i in members) == sorted(float(shuffled[i].sum()) for i in members)
    for original, new in zip(rows, shuffled, strict=True):
        assert new.shape == original.shape and torch.count_nonzero(new[:-1]) == 0
    changed = sum(float(a.sum()) != float(b.sum()) for a, b in zip(rows, shuffled, strict=True))
    assert 0 < moved == changed / len(rows)
    again, _ = shuffled_within_groups(rows, uids, "0/3")
    assert all(torch.equal(a, b) for a, b in zip(shuffled, again, strict=True))
    other_step, _ = shuffled_within_groups(rows, uids, "0/4")
    assert any(not torch.equal(a, b) for a, b in zip(shuffled, other_step, strict=True))


def test_trainer_advantages_follow_the_shuffled_rewards_and_stored_rewards_are_restored(tq_store):
    batch = store_group(tq_store)
    stored_before = {key: tq_store.row(PARTITION, key)["rm_scores"].clone() for key in GROUP}
    trainer = trainer_with_control("shuffle_rewards")
    metrics: dict = {}
    trainer._compute_advantage(batch, metrics)

    rows = [stored_before[key] for key in GROUP]
    shuffled, moved = shuffled_within_groups(rows, ["u1"] * len(GROUP), "0/5")
    expected = grpo_reference({key: float(row.sum()) for key, row in zip(GROUP, shuffled, strict=True)})
    advantages = stored_advantages(tq_store)
    for key, (_, tokens) in GROUP.items():
        assert advantages[key] == pytest.approx([expected[key]] * len(tokens), abs=1e-5)
        assert torch.equal(tq_store.row(PARTITION, key)["rm_scores"], stored_before[key])
    assert metrics["nouscoder/negative_control/active"] == 1.0
    assert metrics["nouscoder/negative_control/moved_rewards"] == moved > 0
    # the group's rewards are 1 correct and 3 wrong: the correct one's advantage went to a wrong response
    assert advantages["u1_0_0"][0] < 0


def test_flip_negates_what_the_estimator_wrote(tq_store):
    trainer_with_control(None)._compute_advantage(store_group(tq_store), {})
    real = stored_advantages(tq_store)
    metrics: dict = {}
    trainer_with_control("flip_advantages")._compute_advantage(store_group(tq_store), metrics)
    flipped = stored_advantages(tq_store)
    assert real["u1_0_0"][0] > 0
    for key in GROUP:
        assert flipped[key] == pytest.approx([-value for value in real[key]])
    assert metrics["nouscoder/negative_control/active"] == 1.0


def test_padding_rows_are_left_out_of_the_shuffle(tq_store):
    batch = store_group(tq_store)
    padding = tq_store.put_rows(
        PARTITION,
        {
            PADDING_KEY: {
                "uid": "u1",
                "responses": torch.tensor([0]),
                "response_mask": torch.zeros(1, dtype=torch.long),
                "rm_scores": torch.tensor([7.0]),
            }
        },
        tags={PADDING_KEY: {"is_padding": True}},
    )
    batch.keys.append(PADDING_KEY)
    batch.tags.append(padding.tags[0])
    trainer = trainer_with_control("shuffle_rewards")
    control = trainer.negative_control
    with control.around_advantage(batch, global_steps=1, metrics={}):
        inside = {key: float(tq_store.row(PARTITION, key)["rm_scores"].sum()) for key in GROUP}
        assert float(tq_store.row(PARTITION, PADDING_KEY)["rm_scores"].sum()) == 7.0
    assert sorted(inside.values()) == sorted(reward for reward, _ in GROUP.values())


def test_off_by_default_and_unknown_modes_are_rejected(tq_store):
    assert trainer_with_control(None).negative_control == NegativeControl()
    metrics: dict = {}
    trainer_with_control(None)._compute_advantage(store_group(tq_store), metrics)
    assert not any(key.startswith("nouscoder/negative_control") for key in metrics)
    with pytest.raises(ValueError, match="shuffle_rewards"):
        trainer_with_control("shuffle")

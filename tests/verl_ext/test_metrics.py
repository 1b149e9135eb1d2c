"""Length-bias metrics computed from a hand-built verl batch."""

import math

import numpy as np
import pytest
import torch
from verl import DataProto

from verl_ext.metrics import compute_length_bias_metrics

MAX_LENGTH = 10


def batch_of(lengths, rewards, uids, advantages=None, acc=None, prompt_length=2) -> DataProto:
    bs = len(lengths)
    mask = torch.zeros(bs, MAX_LENGTH)
    scores = torch.zeros(bs, MAX_LENGTH)
    for i, length in enumerate(lengths):
        mask[i, :length] = 1
        scores[i, length - 1] = rewards[i]
    tensors = {
        "responses": torch.ones(bs, MAX_LENGTH, dtype=torch.long),
        "attention_mask": torch.cat([torch.ones(bs, prompt_length, dtype=torch.long), mask.long()], dim=1),
        "response_mask": mask,
        "token_level_scores": scores,
        "token_level_rewards": scores - 5.0,  # a KL penalty must not change correctness
    }
    if advantages is not None:
        tensors["advantages"] = torch.tensor(advantages, dtype=torch.float32)[:, None] * mask
    non_tensors = {"uid": np.array(uids, dtype=object)}
    if acc is not None:
        non_tensors["acc"] = np.array(acc, dtype=bool)
    return DataProto.from_dict(tensors=tensors, non_tensors=non_tensors)


def test_lengths_truncation_and_masked_fraction():
    lengths = [3, 5, 10, 10, 4, 10, 10, 2]
    rewards = [1, 1, -1, -1, 1, -1, -1, -1]
    uids = ["a", "a", "a", "a", "b", "b", "c", "c"]
    # group a: the two truncated incorrect ones were masked; group b: one masked; group c: all -1, zero anyway
    advantages = [0.8, 0.8, 0.0, 0.0, 0.7, 0.0, 0.0, 0.0]
    metrics = compute_length_bias_metrics(batch_of(lengths, rewards, uids, advantages), MAX_LENGTH)
    assert metrics["length_bias/correct_length_mean"] == pytest.approx(4.0)
    assert metrics["length_bias/correct_length_median"] == pytest.approx(4.0)
    assert metrics["length_bias/incorrect_length_mean"] == pytest.approx((10 + 10 + 10 + 10 + 2) / 5)
    assert metrics["length_bias/incorrect_length_median"] == pytest.approx(10.0)
    assert metrics["length_bias/correct_fraction"] == pytest.approx(3 / 8)
    assert metrics["length_bias/truncation_rate"] == pytest.approx(4 / 8)
    assert metrics["length_bias/truncated_correct_fraction"] == pytest.approx(0.0)
    assert metrics["length_bias/masked_advantage_fraction"] == pytest.approx(3 / 8)
    assert metrics["length_bias/masked_truncated_fraction"] == pytest.approx(3 / 4)


def test_grader_acc_overrides_reward_sign_and_missing_advantages_give_nan():
    lengths, rewards, uids = [3, 10, 6], [1, 1, -1], ["a", "a", "b"]
    metrics = compute_length_bias_metrics(batch_of(lengths, rewards, uids, acc=[False, True, True]), MAX_LENGTH)
    assert metrics["length_bias/correct_length_mean"] == pytest.approx(8.0)
    assert metrics["length_bias/incorrect_length_mean"] == pytest.approx(3.0)
    assert metrics["length_bias/truncated_correct_fraction"] == pytest.approx(1.0)
    assert math.isnan(metrics["length_bias/masked_advantage_fraction"])


def test_empty_class_gives_nan_lengths():
    metrics = compute_length_bias_metrics(batch_of([4, 5], [-1, -1], ["a", "a"], [0.0, 0.0]), MAX_LENGTH)
    assert math.isnan(metrics["length_bias/correct_length_mean"])
    assert metrics["length_bias/incorrect_length_mean"] == pytest.approx(4.5)
    assert metrics["length_bias/truncation_rate"] == 0.0
    assert math.isnan(metrics["length_bias/masked_truncated_fraction"])

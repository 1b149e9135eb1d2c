"""The nouscoder trainers' ``_compute_advantage``: verl 0.9.1's real V1 advantage step (built from verl's generated
PPO config, no Ray) over an in-memory TransferQueue, with ``microcoder_grpo`` receiving the response token ids."""

import math

import pytest
import torch
import verl
from omegaconf import OmegaConf, open_dict
from verl.trainer.ppo.v1 import PPOTrainerSync

from recipe.nouscoder.training.trainer import NousCoderSyncTrainer

VERL_CONFIG = f"{verl.__path__[0]}/trainer/config/_generated_ppo_trainer.yaml"
MAX_RESPONSE_LENGTH = 6
PARTITION = "train"

# One prompt group (uid "u1"), 4 rollouts: (reward, response token ids). L_max = 6, repetition window m = 2.
GROUP = {
    "u1_0_0": (1.0, [1, 2, 3, 4]),  # correct, not truncated
    "u1_1_0": (-1.0, [9, 5, 6, 7, 6, 7]),  # incorrect, truncated, last 2 tokens repeat the 2 before: never masked
    "u1_2_0": (-1.0, [1, 2, 3, 4, 5, 6]),  # incorrect, truncated, no repetition: masked (rho = 1)
    "u1_3_0": (-1.0, [8]),  # incorrect, not truncated
}


def make_config(adv_estimator: str, estimator_options: dict | None):
    config = OmegaConf.merge(
        OmegaConf.load(VERL_CONFIG), {"nouscoder": OmegaConf.load("configs/nouscoder/extensions.yaml")}
    )
    config.trainer.v1.trainer_mode = "nouscoder_sync"
    config.data.train_batch_size = 1
    config.actor_rollout_ref.actor.ppo_mini_batch_size = 1
    config.actor_rollout_ref.rollout.n = len(GROUP)
    config.actor_rollout_ref.rollout.response_length = MAX_RESPONSE_LENGTH
    config.algorithm.adv_estimator = adv_estimator
    OmegaConf.set_struct(config, True)  # as hydra hands it over
    if estimator_options is not None:
        with open_dict(config):
            config.algorithm[adv_estimator] = estimator_options
    return config


def microcoder_options(repetition_window: int) -> dict:
    return {
        "max_response_length": MAX_RESPONSE_LENGTH,
        "mask_probability": 1.0,
        "repetition_window": repetition_window,
    }


def store_group(tq_store):
    """The group's rollouts as verl's agent loop leaves them in TransferQueue (variable-length rows)."""
    rows = {}
    for key, (reward, tokens) in GROUP.items():
        scores = torch.zeros(len(tokens))
        scores[-1] = reward
        rows[key] = {
            "uid": "u1",
            "responses": torch.tensor(tokens),
            "response_mask": torch.ones(len(tokens), dtype=torch.long),
            "rm_scores": scores,
        }
    return tq_store.put_rows(PARTITION, rows)


def expected_grpo_advantages() -> dict[str, float]:
    """(R_i - mean) / (std + 1e-6), std with Bessel's correction, written out for the single group."""
    rewards = {key: reward for key, (reward, _) in GROUP.items()}
    mean = sum(rewards.values()) / len(rewards)
    std = math.sqrt(sum((reward - mean) ** 2 for reward in rewards.values()) / (len(rewards) - 1))
    return {key: (reward - mean) / (std + 1e-6) for key, reward in rewards.items()}


def stored_advantages(tq_store) -> dict[str, list[float]]:
    return {key: tq_store.row(PARTITION, key)["advantages"].tolist() for key in GROUP}


def test_microcoder_grpo_gets_response_ids_repetitive_truncation_kept_other_masked(tq_store):
    trainer = NousCoderSyncTrainer(make_config("microcoder_grpo", microcoder_options(repetition_window=2)))
    batch = store_group(tq_store)
    returned = trainer._compute_advantage(batch, metrics={})

    assert tq_store.get_calls[0] == (list(GROUP), ["responses"])  # the ids, for the keys verl reads next
    assert len(tq_store.get_calls) == 2
    assert returned.keys == list(GROUP)
    grpo = expected_grpo_advantages()
    advantages = stored_advantages(tq_store)
    for key, (_, tokens) in GROUP.items():
        expected = 0.0 if key == "u1_2_0" else grpo[key]
        assert advantages[key] == pytest.approx([expected] * len(tokens), abs=1e-6)
    assert advantages["u1_1_0"][0] == pytest.approx(-0.5, abs=1e-5)  # the repetitive truncated response is kept


def test_without_the_override_verl_step_cannot_run_microcoder_repetition_test(tq_store):
    trainer = NousCoderSyncTrainer(make_config("microcoder_grpo", microcoder_options(repetition_window=2)))
    batch = store_group(tq_store)
    with pytest.raises(ValueError, match="response token ids"):
        PPOTrainerSync._compute_advantage(trainer, batch, metrics={})


def test_microcoder_without_repetition_window_adds_no_transfer_queue_read(tq_store):
    trainer = NousCoderSyncTrainer(make_config("microcoder_grpo", microcoder_options(repetition_window=0)))
    trainer._compute_advantage(store_group(tq_store), metrics={})
    assert len(tq_store.get_calls) == 1 and "responses" not in tq_store.get_calls[0][1]
    advantages = stored_advantages(tq_store)
    assert advantages["u1_1_0"] == [0.0] * 6  # no repetition exemption: both truncated incorrect ones masked
    assert advantages["u1_2_0"] == [0.0] * 6
    assert advantages["u1_3_0"] == pytest.approx([expected_grpo_advantages()["u1_3_0"]])


def test_grpo_plus_adds_no_transfer_queue_read(tq_store):
    trainer = NousCoderSyncTrainer(make_config("grpo_plus", {"max_response_length": MAX_RESPONSE_LENGTH}))
    trainer._compute_advantage(store_group(tq_store), metrics={})
    assert len(tq_store.get_calls) == 1 and "responses" not in tq_store.get_calls[0][1]
    grpo = expected_grpo_advantages()
    advantages = stored_advantages(tq_store)
    assert advantages["u1_0_0"] == pytest.approx([grpo["u1_0_0"]] * 4)
    assert advantages["u1_1_0"] == [0.0] * 6  # overlong filtering
    assert advantages["u1_3_0"] == pytest.approx([grpo["u1_3_0"]])


def test_microcoder_without_max_response_length_fails_at_trainer_construction():
    with pytest.raises(ValueError, match="max_response_length"):
        NousCoderSyncTrainer(make_config("microcoder_grpo", {"repetition_window": 2}))

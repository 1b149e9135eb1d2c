"""With the multi-turn loop, overlong filtering sees the whole trajectory's length, not only its model tokens.

verl 0.9.1's real V1 advantage step (``NousCoderSyncTrainer._compute_advantage``, no Ray) over the in-memory
TransferQueue of ``conftest.py``, estimator ``grpo_plus``. A trajectory that filled the response budget with two turns
and a feedback message has fewer model tokens than the budget; it was cut all the same, so its advantage is zero.
"""

import pytest
import torch
import verl
from omegaconf import OmegaConf, open_dict

from recipe.nouscoder.multi_turn import AGENT_NAME
from recipe.nouscoder.training.trainer import NousCoderSyncTrainer

MAX_RESPONSE_LENGTH = 8
ROLLOUTS = {  # key: (reward, response_mask: 1 model token, 0 feedback token)
    "u1_0_0": (1.0, [1, 1, 1]),  # one turn, accepted
    "u1_1_0": (-1.0, [1, 1, 0, 0, 0, 1, 1, 1]),  # two turns + feedback: the budget is full, cut
    "u1_2_0": (-1.0, [1, 1, 0, 0, 1]),  # two turns, ended in time
    "u1_3_0": (1.0, [1, 1, 1, 1]),
}


def trainer_for(agent_loop: str) -> NousCoderSyncTrainer:
    config = OmegaConf.merge(
        OmegaConf.load(f"{verl.__path__[0]}/trainer/config/_generated_ppo_trainer.yaml"),
        {"nouscoder": OmegaConf.load("configs/nouscoder/extensions.yaml")},
    )
    config.trainer.v1.trainer_mode = "nouscoder_sync"
    config.data.train_batch_size = 1
    config.actor_rollout_ref.actor.ppo_mini_batch_size = 1
    config.actor_rollout_ref.rollout.n = len(ROLLOUTS)
    config.actor_rollout_ref.rollout.response_length = MAX_RESPONSE_LENGTH
    config.actor_rollout_ref.rollout.agent.default_agent_loop = agent_loop
    config.algorithm.adv_estimator = "grpo_plus"
    OmegaConf.set_struct(config, True)
    with open_dict(config):
        config.algorithm.grpo_plus = {"max_response_length": MAX_RESPONSE_LENGTH}
    return NousCoderSyncTrainer(config)


def advantages_with(agent_loop: str, tq_store) -> dict[str, list[float]]:
    rows = {}
    for key, (reward, mask) in ROLLOUTS.items():
        scores = torch.zeros(len(mask))
        scores[-1] = reward
        rows[key] = {
            "uid": "u1",
            "responses": torch.arange(1, len(mask) + 1),
            "response_mask": torch.tensor(mask),
            "rm_scores": scores,
        }
    trainer_for(agent_loop)._compute_advantage(tq_store.put_rows("train", rows), metrics={})
    return {key: tq_store.row("train", key)["advantages"].tolist() for key in ROLLOUTS}


def test_a_trajectory_that_filled_the_budget_is_overlong_whatever_its_feedback_tokens(tq_store):
    advantages = advantages_with(AGENT_NAME, tq_store)
    assert advantages["u1_1_0"] == [0.0] * 8  # cut: filtered although only 5 of its 8 tokens are the model's
    assert advantages["u1_2_0"][2:4] == [0.0, 0.0]  # its feedback tokens carry no advantage
    failed = advantages["u1_2_0"][0]
    assert failed < 0 and advantages["u1_2_0"] == pytest.approx([failed, failed, 0.0, 0.0, failed])
    assert advantages["u1_0_0"][0] > 0 and advantages["u1_0_0"][0] == pytest.approx(advantages["u1_3_0"][0])


def test_without_the_loop_the_mask_alone_would_have_kept_it(tq_store):
    advantages = advantages_with("single_turn_agent", tq_store)
    assert advantages["u1_1_0"][0] != 0.0  # what the trainer prevents for multi-turn runs

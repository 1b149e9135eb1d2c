"""`microcoder_grpo`: GRPO advantages with conditional truncation masking (MicroCoder section 2.2-2.3, eq. 2)."""

from typing import Any

import numpy as np
import torch
from verl.trainer.ppo.core_algos import register_adv_est

from verl_ext.advantage_inputs import AdvantageInputs, current_advantage_inputs
from verl_ext.estimator_options import MicrocoderOptions
from verl_ext.group_baseline import group_ids, normalised_advantage
from verl_ext.truncation import ends_in_repetition, response_lengths, truncated_mask, uniform_draws


def _correct_mask(scores: torch.Tensor, inputs: AdvantageInputs | None, threshold: float) -> torch.Tensor:
    """(bs,) bool: the grader's `acc` when the trainer provides it, else R_i > threshold."""
    if inputs is not None and inputs.correct is not None:
        return inputs.correct.to(device=scores.device, dtype=torch.bool)
    return scores > threshold


def _correctness_condition(correct: torch.Tensor, mask_when: str) -> torch.Tensor:
    """The correctness factor of eq. 2: incorrect(o_i) by default; the prose's 'correct', or no condition."""
    if mask_when == "incorrect":
        return ~correct
    if mask_when == "correct":
        return correct
    return torch.ones_like(correct)


def _repetition(
    inputs: AdvantageInputs | None, lengths: torch.Tensor, candidates: torch.Tensor, options: MicrocoderOptions
) -> torch.Tensor:
    """(bs,) bool repeat(o_i, m) for the candidate rows; needs the response ids provided by the trainer."""
    if options.repetition_window == 0:
        return torch.zeros_like(candidates)
    if inputs is None or inputs.responses is None:
        raise ValueError(
            "microcoder_grpo needs the response token ids for its repetition test (MicroCoder eq. 2), which verl "
            "does not pass to advantage estimators: call compute_advantage inside "
            "`with verl_ext.advantage_inputs.provide_advantage_inputs(batch):`, or set "
            "algorithm.microcoder_grpo.repetition_window=0 to drop the repetition exemption"
        )
    any_period = options.repetition_periods == "any"
    return ends_in_repetition(inputs.responses, lengths, options.repetition_window, candidates, any_period)


@register_adv_est("microcoder_grpo")
def compute_microcoder_grpo_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray,
    config: Any = None,
    **unused_verl_kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """MicroCoder eq. 2: A_i = (R_i - mean_g R) / (std_g R + eps) * (1 - I[|o_i| >= L_max and incorrect(o_i)
    and not repeat(o_i, m) and U_i < rho]).

    Args:
        token_level_rewards: (bs, response_length); R_i is the row sum.
        response_mask: (bs, response_length).
        index: (bs,) `uid` of each response's prompt (the group).
        config: verl's `algorithm` node; options under `algorithm.microcoder_grpo` (see `MicrocoderOptions`).
        unused_verl_kwargs: other arguments verl may pass (`reward_baselines`), not used.

    The response token ids of the repetition test, the true lengths and `acc` come from
    `verl_ext.advantage_inputs.provide_advantage_inputs` around verl's `compute_advantage`; U_i from
    `truncation.uniform_draws(index, seed)`. The group statistics use every response of the group (eq. 2).

    Returns:
        (advantages, returns), both (bs, response_length).
    """
    options = MicrocoderOptions.from_config(config)
    inputs = current_advantage_inputs()
    if inputs is not None:
        inputs.check_batch_size(token_level_rewards.shape[0])
    with torch.no_grad():
        scores = token_level_rewards.sum(dim=-1)
        lengths = response_lengths(response_mask, inputs)
        advantage = normalised_advantage(
            scores.cpu(),
            group_ids(index),
            torch.ones(scores.shape[0], dtype=torch.bool),
            options.norm_by_std,
            options.epsilon,
        ).to(scores.device)
        draws = uniform_draws(index, options.seed).to(scores.device)
        correct = _correct_mask(scores, inputs, options.correct_reward_threshold)
        candidates = (
            truncated_mask(lengths, options.max_response_length)
            & _correctness_condition(correct, options.mask_when)
            & (draws < options.mask_probability)
        )
        masked = candidates & ~_repetition(inputs, lengths, candidates, options)
        advantage = torch.where(masked, torch.zeros_like(advantage), advantage)
        advantages = advantage.to(token_level_rewards.dtype).unsqueeze(-1) * response_mask
    return advantages, advantages

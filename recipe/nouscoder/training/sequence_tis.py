"""Sequence-level truncated importance sampling: the form of the weight, and what the weights look like each step.

NousCoder "Asynchronous RL Training" writes TIS on whole rollouts: TIS(a_i) = min(C, pi_learner,old(a_i|q) /
pi_sampler(a_i|q)). The probability of a whole rollout is the product of its tokens' probabilities, so the ratio is

    product:        w_i = min(C, exp(sum_t delta_it)),        delta_it = log pi_old(a_it) - log pi_sampler(a_it)

which is what verl 0.9.1 computes for ``algorithm.rollout_correction.rollout_is=sequence`` (``rollout_corr_helper.
compute_rollout_correction_weights``; the sum is clamped to [-20, 20]). Its log is a sum over up to 32k tokens:
E[log w_i] = -|o_i| KL(sampler || old) per token, so a per-token divergence of 1e-4 weighs a 16k-token rollout about
exp(-1.6) = 0.2 and 1e-3 about exp(-16) = 1e-7, while a 1k-token one keeps 0.9 and 0.37: the weight falls
exponentially with length. The length-normalised form

    geometric_mean: w_i = min(C, exp(1/|o_i| sum_t delta_it))

is the geometric mean of the token ratios, normalised as GSPO normalises its own ratio s_i (arXiv:2507.18071), and
does not depend on length that way. ``nouscoder.sequence_tis.form`` chooses; the trainer then replaces verl's
``rollout_is_weights`` with the chosen form (the same cap C, read by verl's own parser; IcePop's lower_upper bounds
zero what falls outside, as verl does). Either way the step logs both forms' weights
(``nouscoder/sequence_tis/{product,geometric_mean}/*``: mean, quantiles, minimum, fraction at the cap, and the
correlation of log w_i with |o_i|) from pi_old and the sampler's log-probs, so the choice can be seen.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from verl.trainer.ppo.rollout_corr_helper import SAFETY_BOUND, _parse_rollout_is_threshold

FORMS = ("product", "geometric_mean")
QUANTILES = (0.1, 0.5, 0.9)


@dataclass(frozen=True)
class SequenceTISOptions:
    """``nouscoder.sequence_tis``: the form of sequence-level TIS weights (module docstring)."""

    form: str = "geometric_mean"

    def __post_init__(self) -> None:
        if self.form not in FORMS:
            raise ValueError(f"nouscoder.sequence_tis.form must be one of {FORMS}, got {self.form!r}")

    @classmethod
    def from_config(cls, node) -> SequenceTISOptions:
        return cls(**dict(node or {}))


def sequence_log_ratios(old_log_probs: torch.Tensor, rollout_log_probs: torch.Tensor, mask: torch.Tensor):
    """(sum_t delta_it, |o_i|) per rollout, delta = log pi_old - log pi_sampler on valid tokens, in fp64."""
    delta = torch.where(mask, old_log_probs.double() - rollout_log_probs.double(), 0.0)
    return delta.sum(dim=-1), mask.sum(dim=-1)


def sequence_weights(log_ratio_sum: torch.Tensor, lengths: torch.Tensor, form: str, threshold) -> torch.Tensor:
    """(bs,) w_i of ``form`` with verl's cap: ``threshold`` is ``rollout_is_threshold`` (C, or "lower_upper")."""
    log_weight = log_ratio_sum if form == "product" else log_ratio_sum / lengths.clamp(min=1)
    raw = torch.exp(log_weight.clamp(-SAFETY_BOUND, SAFETY_BOUND))
    upper, lower = _parse_rollout_is_threshold(threshold)
    if lower is None:
        return raw.clamp(max=upper)
    return torch.where((raw >= lower) & (raw <= upper), raw, 0.0)


def weight_metrics(log_ratio_sum: torch.Tensor, lengths: torch.Tensor, threshold) -> dict[str, float]:
    """``nouscoder/sequence_tis/<form>/*`` for both forms over the rollouts with at least one valid token."""
    valid = lengths > 0
    log_sum, length = log_ratio_sum[valid], lengths[valid]
    if log_sum.numel() == 0:
        return {}
    upper, _ = _parse_rollout_is_threshold(threshold)
    metrics = {}
    for form in FORMS:
        weights = sequence_weights(log_sum, length, form, threshold)
        log_weight = log_sum if form == "product" else log_sum / length
        prefix = f"nouscoder/sequence_tis/{form}"
        metrics[f"{prefix}/mean"] = weights.mean().item()
        metrics[f"{prefix}/min"] = weights.min().item()
        for quantile in QUANTILES:
            metrics[f"{prefix}/p{round(quantile * 100)}"] = torch.quantile(weights, quantile).item()
        metrics[f"{prefix}/capped_fraction"] = (weights >= upper * (1 - 1e-9)).double().mean().item()
        metrics[f"{prefix}/log_weight_length_correlation"] = correlation(log_weight, length.double())
    return metrics


def correlation(x: torch.Tensor, y: torch.Tensor) -> float:
    """Pearson correlation; 0.0 when either side is constant (or fewer than two points)."""
    if x.numel() < 2 or float(x.std()) == 0.0 or float(y.std()) == 0.0:
        return 0.0
    return float(np.corrcoef(x.numpy(), y.numpy())[0, 1])

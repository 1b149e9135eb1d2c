"""Pieces shared by the verl_ext policy losses: config reading, the masked log-ratio, TIS metrics, metric export."""

import math
from typing import Any

import torch
from verl.trainer.ppo.rollout_corr_helper import _parse_rollout_is_threshold

LOG_RATIO_BOUND = 20.0
"""log-ratios are clamped to [-20, 20] before exp, as in verl's built-in losses (exp(20) ~ 4.9e8 fits in fp32)."""


def clip_range(config: Any) -> tuple[float, float]:
    """(eps_low, eps_high) from `actor.clip_ratio_low` / `clip_ratio_high`, falling back to `actor.clip_ratio`."""
    if config is None:
        raise ValueError("verl_ext policy losses need the actor config (clip_ratio_low / clip_ratio_high)")
    default = config.get("clip_ratio", 0.2)
    low = config.get("clip_ratio_low", None)
    high = config.get("clip_ratio_high", None)
    return float(default if low is None else low), float(default if high is None else high)


def dual_clip_bound(config: Any) -> float | None:
    """c of dual-clip PPO (arXiv:1912.09729) from `actor.clip_ratio_c`; None (off) when it is infinite."""
    bound = config.get("clip_ratio_c", 3.0)
    if bound is None or math.isinf(float(bound)):
        return None
    if float(bound) <= 1.0:
        raise ValueError(f"actor.clip_ratio_c must be > 1 (dual clip) or inf (off), got {bound}")
    return float(bound)


def require_agg_mode(loss_name: str, loss_agg_mode: str, expected: str) -> None:
    """The aggregation is part of each loss's formula: refuse a different `actor.loss_agg_mode`."""
    if loss_agg_mode != expected:
        raise ValueError(
            f"policy loss {loss_name!r} is defined with the {expected!r} aggregation, but "
            f"actor_rollout_ref.actor.loss_agg_mode={loss_agg_mode!r}; set it to {expected!r}"
        )


def global_batch_info(config: Any) -> dict[str, Any]:
    """verl's `actor.global_batch_info` (dp_size, batch_num_tokens, global_batch_size, loss_scale_factor)."""
    info = config.get("global_batch_info", None)
    return dict(info) if info else {}


def tis_cap(config: Any) -> float | None:
    """C of TIS from `actor.policy_loss.rollout_correction.rollout_is_threshold`, read by verl's own parser (a
    number, or a string `"upper"` / `"lower_upper"`), so the metric's cap is the one verl clamps the weights at."""
    policy_loss = config.get("policy_loss", None)
    correction = policy_loss.get("rollout_correction", None) if policy_loss is not None else None
    threshold = correction.get("rollout_is_threshold", None) if correction is not None else None
    if threshold is None:
        return None
    upper, _lower = _parse_rollout_is_threshold(threshold)
    return upper


def compute_dtype(log_prob: torch.Tensor) -> torch.dtype:
    """Losses compute in at least fp32: bf16/fp16 log-probs are upcast, fp64 stays fp64."""
    return torch.promote_types(log_prob.dtype, torch.float32)


def masked_log_ratio(log_prob: torch.Tensor, old_log_prob: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(bs, T) log(pi_theta / pi_old) in `compute_dtype` on valid tokens, exactly 0 on padding (so padding
    garbage never reaches exp or the gradient)."""
    dtype = compute_dtype(log_prob)
    return torch.where(mask, log_prob.to(dtype) - old_log_prob.to(dtype), 0.0)


def token_fraction(condition: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Fraction of valid tokens where `condition` holds (0 when there is no valid token)."""
    return (condition & mask).sum() / mask.sum().clamp(min=1)


def tis_metric_tensors(
    rollout_is_weights: torch.Tensor | None, mask: torch.Tensor, cap: float | None
) -> dict[str, torch.Tensor]:
    """Mean TIS weight over valid tokens and the fraction of valid tokens whose weight is at the cap C."""
    if rollout_is_weights is None:
        return {}
    weights = rollout_is_weights.float()
    metrics = {"actor/tis_weight_mean": torch.where(mask, weights, 0.0).sum() / mask.sum().clamp(min=1)}
    if cap is not None:
        metrics["actor/tis_capped_frac"] = token_fraction(weights >= cap * (1.0 - 1e-6), mask)
    return metrics


def metrics_to_floats(metrics: dict[str, torch.Tensor]) -> dict[str, float]:
    """Detach scalar metric tensors and move them to Python floats with a single device sync."""
    if not metrics:
        return {}
    values = torch.stack([value.detach().float().reshape(()) for value in metrics.values()]).tolist()
    return dict(zip(metrics.keys(), values, strict=True))

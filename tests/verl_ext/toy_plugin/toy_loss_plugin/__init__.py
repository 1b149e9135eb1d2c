"""A policy loss added the way verl_ext/README.md "Adding a loss or an estimator" says, from a package of its own.

``toy_reinforce``: REINFORCE with a baseline already in the advantage and a cap on the ratio, token-mean,

    loss = -1/sum_i|o_i| sum_i sum_t w_it min(r_it, cap) A_it

with ``cap`` its own hyperparameter (``actor_rollout_ref.actor.policy_loss.options.toy_reinforce.cap``). The
package is found by ``import verl`` through the ``verl.plugins`` entry point in its dist-info (what ``pip install``
of a package declaring ``[project.entry-points."verl.plugins"] toy = "toy_loss_plugin"`` writes).
"""

from dataclasses import dataclass
from typing import Any

import torch
from verl.trainer.ppo.core_algos import agg_loss, register_policy_loss

from verl_ext.loss_options import loss_options


@dataclass(frozen=True)
class ToyOptions:
    cap: float = 2.0


@register_policy_loss("toy_reinforce")
def toy_reinforce_loss(
    old_log_prob: torch.Tensor,
    log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    loss_agg_mode: str = "token-mean",
    config: Any = None,
    rollout_is_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, Any]]:
    options = loss_options(config, "toy_reinforce", ToyOptions)
    mask = response_mask.bool()
    log_ratio = torch.where(mask, log_prob.float() - old_log_prob.float(), 0.0).clamp(-20.0, 20.0)
    objective = torch.exp(log_ratio).clamp(max=options.cap) * torch.where(mask, advantages.float(), 0.0)
    if rollout_is_weights is not None:
        objective = objective * rollout_is_weights
    info = dict(config.get("global_batch_info", None) or {})
    loss = -agg_loss(loss_mat=objective, loss_mask=mask, loss_agg_mode=loss_agg_mode, **info)
    return loss, {"actor/toy_cap": options.cap}

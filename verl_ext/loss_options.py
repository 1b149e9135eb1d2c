"""A place for a policy loss's own hyperparameters: ``actor_rollout_ref.actor.policy_loss.options.<loss_mode>.*``.

verl 0.9.1 builds the actor config as dataclasses (``ActorConfig``, ``PolicyLossConfig``) from the ``_target_`` of
each node, so a key they do not declare is refused, and a registered loss receives only that config. This subclass of
``PolicyLossConfig`` adds one free-form mapping, ``options``, keyed by loss name; the recipe's base config selects it
(``actor_rollout_ref.actor.policy_loss._target_: verl_ext.loss_options.PolicyLossOptionsConfig``). On verl's own
``ppo_trainer`` config, pass that ``_target_`` override and ``+actor_rollout_ref.actor.policy_loss.options.NAME.KEY=V``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from verl.workers.config import PolicyLossConfig

Options = TypeVar("Options")


@dataclass
class PolicyLossOptionsConfig(PolicyLossConfig):
    """verl's ``PolicyLossConfig`` plus ``options``: {loss_mode: {hyperparameter: value}}."""

    options: dict[str, Any] = field(default_factory=dict)


def loss_options(config: Any, loss_mode: str, options_cls: type[Options]) -> Options:
    """``options_cls`` (a dataclass of defaults) filled from ``policy_loss.options.<loss_mode>`` of the actor config
    a loss receives; an unknown key is an error naming the known ones (a typo never falls back to a default)."""
    policy_loss = config.get("policy_loss", None) if config is not None else None
    all_options = policy_loss.get("options", None) if policy_loss is not None else None
    values = dict((all_options or {}).get(loss_mode) or {})
    known = {item.name for item in fields(options_cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(
            f"unknown option(s) actor_rollout_ref.actor.policy_loss.options.{loss_mode}.{unknown}; "
            f"known options are {sorted(known)}"
        )
    return options_cls(**values)

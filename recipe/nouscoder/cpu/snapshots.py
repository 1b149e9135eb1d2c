"""pi_old snapshots that are copies on CPU: the separate-async trainer's decoupled PPO needs them.

verl 0.9.1's separate-async trainer runs ``parameter_sync_step`` = k optimizer steps per batch, one per mini-batch,
and gives every mini-batch the same pi_old: before the first it saves the actor's FSDP2 shards "to CPU"
(``DetachActorWorker.save_model_to_cpu`` -> ``verl.utils.fsdp_utils.fsdp2_sharded_save_to_cpu``), and for the
later ones it restores that snapshot to compute ``old_log_probs`` (``PPOTrainerSeparateAsync._compute_old_log_prob``).
The snapshot is ``local_tensor.detach().cpu()``: a copy from a GPU, but on the CPU platform the same storage as the
live parameter, which the optimizer then updates in place. The CPU learning run exposed it: every mini-batch's
pi_old was the current policy, the ratio r = pi_theta / pi_old was exactly 1 (``actor/seq_ratio_{min,max}`` = 1,
``actor/ppo_kl`` = 0), so the GSPO / DAPO clip never acted and the k-step off-policy correction was not what a GPU
run computes. The CPU plugin replaces the function with one that returns clones (verl's FSDP1 helper already copies:
``.to("cpu", copy=True)``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import verl.utils.fsdp_utils as verl_fsdp_utils

SaveToCpu = TypeVar("SaveToCpu", bound=Callable[..., tuple[dict, Any]])


def copying(save: SaveToCpu) -> SaveToCpu:
    """``save`` with every saved shard cloned, so that later in-place updates of the model do not reach it
    (``__wrapped__`` is ``save``)."""

    @functools.wraps(save)
    def fsdp2_sharded_save_to_cpu(model):
        state, global_spec = save(model)
        return {name: (tensor.clone(), spec) for name, (tensor, spec) in state.items()}, global_spec

    fsdp2_sharded_save_to_cpu.nouscoder_cpu = True  # type: ignore[attr-defined]
    return cast(SaveToCpu, fsdp2_sharded_save_to_cpu)


def use_copying_snapshots() -> None:
    """Install the copying save in ``verl.utils.fsdp_utils``, where ``DetachActorWorker`` imports it from (once)."""
    current = verl_fsdp_utils.fsdp2_sharded_save_to_cpu
    if not getattr(current, "nouscoder_cpu", False):
        verl_fsdp_utils.fsdp2_sharded_save_to_cpu = copying(current)

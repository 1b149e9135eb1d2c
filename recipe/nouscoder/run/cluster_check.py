"""Fail at once, with the fix, when the Ray cluster cannot hold what the config asks for.

verl 0.9.1 places its workers in Ray placement groups and waits for them without a timeout: on a cluster with too
few GPUs (or none), the run prints its config and then waits forever; Ray's "cannot be scheduled" shows only in
``raylet.out``. ``check_cluster`` runs in the TaskRunner before the trainer is built and compares what the config
reserves with what the alive Ray nodes have:

- device pools (``verl/trainer/ppo/v1/trainer_base.py: _init_resource_pool_mgr``, ``RolloutReplica.init_standalone``):
  each pool wants ``nnodes`` nodes with ``n_gpus_per_node`` free devices each (one placement group per node,
  ``STRICT_PACK``), and every device bundle also reserves CPUs (3 in the trainer pool, 2 in a standalone rollout
  pool: ``max_colocate_count`` of ``verl/single_controller/ray/base.py``);
- CPU-only actors holding a CPU: the TaskRunner, TransferQueue's controller and one per storage unit
  (``transfer_queue.backend.SimpleStorage.num_data_storage_units``), and one more free CPU for the actors Ray
  schedules with its default of 1 CPU (agent-loop and reward-loop workers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig

TRAINER_CPUS_PER_DEVICE = 3
STANDALONE_CPUS_PER_DEVICE = 2
CPU_MODE_HINT = "no GPUs? the recipe runs on CPU with --config-name debug_cpu (recipe/nouscoder/cpu/)"


class ClusterTooSmall(RuntimeError):
    """The Ray cluster lacks devices or CPUs the config reserves; the message names them and the overrides."""


@dataclass(frozen=True)
class DevicePool:
    """A placement of ``nodes`` x ``devices_per_node`` device bundles."""

    name: str
    nodes: int
    devices_per_node: int
    cpus_per_device: int
    keys: str
    """The config keys that size the pool."""

    @property
    def devices(self) -> int:
        return self.nodes * self.devices_per_node


def device_pools(config: DictConfig) -> list[DevicePool]:
    """The device pools verl will reserve for this config."""
    trainer, rollout = config.trainer, config.actor_rollout_ref.rollout
    pools = [
        DevicePool(
            "trainer pool",
            int(trainer.nnodes),
            int(trainer.n_gpus_per_node),
            TRAINER_CPUS_PER_DEVICE,
            "trainer.nnodes, trainer.n_gpus_per_node",
        )
    ]
    if trainer.v1.trainer_mode.endswith("separate_async"):
        pools.append(
            DevicePool(
                "standalone rollout pool",
                int(rollout.nnodes),
                int(rollout.n_gpus_per_node),
                STANDALONE_CPUS_PER_DEVICE,
                "actor_rollout_ref.rollout.nnodes, actor_rollout_ref.rollout.n_gpus_per_node",
            )
        )
    reward_model = config.reward.get("reward_model", {})
    if reward_model.get("enable") and reward_model.get("enable_resource_pool"):
        pools.append(
            DevicePool(
                "reward model pool",
                int(reward_model.nnodes),
                int(reward_model.n_gpus_per_node),
                TRAINER_CPUS_PER_DEVICE,
                "reward.reward_model.nnodes, reward.reward_model.n_gpus_per_node",
            )
        )
    return [pool for pool in pools if pool.devices > 0]


def cpu_actor_demand(config: DictConfig) -> int:
    """CPUs held by CPU-only actors: TaskRunner, TransferQueue controller and storage units, one free for the rest."""
    storage_units = int(config.transfer_queue.backend.SimpleStorage.num_data_storage_units)
    return 1 + 1 + storage_units + 1


def _fit_pools(pools: Sequence[DevicePool], free_devices: list[float]) -> list[str]:
    """Place each pool's nodes on distinct nodes with enough free devices (largest pools first); what did not fit."""
    free = sorted(free_devices, reverse=True)
    problems = []
    for pool in sorted(pools, key=lambda pool: pool.devices_per_node, reverse=True):
        placed = 0
        for index, devices in enumerate(free):
            if placed < pool.nodes and devices >= pool.devices_per_node:
                free[index] -= pool.devices_per_node
                placed += 1
        if placed < pool.nodes:
            problems.append(
                f"{pool.name}: {pool.nodes} node(s) with {pool.devices_per_node} free GPU(s) each ({pool.keys}); "
                f"only {placed} such node(s) are left"
            )
    return problems


def check_cluster(config: DictConfig, nodes: Sequence[Mapping[str, Any]], device_resource: str = "GPU") -> None:
    """Raise ``ClusterTooSmall`` when ``nodes`` (``ray.nodes()``) cannot hold the config's pools and actors."""
    alive = [node.get("Resources", {}) for node in nodes if node.get("Alive")]
    pools = device_pools(config)
    have_devices = [float(resources.get(device_resource, 0)) for resources in alive]
    have_cpus = sum(float(resources.get("CPU", 0)) for resources in alive)
    need_cpus = sum(pool.devices * pool.cpus_per_device for pool in pools) + cpu_actor_demand(config)
    problems = _fit_pools(pools, have_devices)
    if have_cpus < need_cpus:
        problems.append(
            f"CPUs: {need_cpus:g} are reserved (device bundles, TaskRunner, TransferQueue with "
            f"transfer_queue.backend.SimpleStorage.num_data_storage_units="
            f"{config.transfer_queue.backend.SimpleStorage.num_data_storage_units}), the cluster has {have_cpus:g}; "
            f"start Ray with more CPUs (ray_kwargs.ray_init.num_cpus, `ray start --num-cpus`) or fewer storage units"
        )
    if problems:
        wanted = " + ".join(f"{pool.name} {pool.nodes}x{pool.devices_per_node}" for pool in pools) or "none"
        cluster = ", ".join(f"{devices:g}" for devices in have_devices) or "no alive node"
        raise ClusterTooSmall(
            f"the Ray cluster cannot hold this config, which would wait forever for it. Wanted GPUs: {wanted}; "
            f"GPUs per alive node: [{cluster}]. Missing: " + "; ".join(problems) + f". Set the keys named above to "
            f"what the cluster has; {CPU_MODE_HINT}."
        )

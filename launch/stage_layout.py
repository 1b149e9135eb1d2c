"""The GPU layout of one stage config against the Slurm allocation: derived where it can be, checked where not.

verl places its worker pools by the config alone (`trainer.nnodes` x `trainer.n_gpus_per_node`, plus the standalone
rollout pool `actor_rollout_ref.rollout.nnodes` x `.n_gpus_per_node` of the separate-async trainer); nothing in
verl compares them with the Ray cluster, so a mismatch idles GPUs or waits forever for GPUs that are not there.

- Colocated configs (verl's `sync` trainer: DeepCoder, MicroCoder, debug, evaluation) have one pool: the layout is
  derived from the allocation, `trainer.nnodes=NODES trainer.n_gpus_per_node=GPUS_PER_NODE`.
- Separate-async configs (NousCoder) split the nodes between two pools, which only the user can choose: the GPUs of
  both pools must add up to the allocation's and each pool's GPUs per node must fit a node; otherwise LayoutError
  names the overrides (or the `--nodes`) that would fit.

`launch/preflight.py` applies it to every config a job runs, before Ray starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import DictConfig

SEPARATE_ASYNC_MODES = ("separate_async", "nouscoder_separate_async")


class LayoutError(ValueError):
    """The config's GPU layout does not fit the allocation; the message says what to pass instead."""


@dataclass(frozen=True)
class Pool:
    """A verl resource pool: `nnodes` x `gpus_per_node` GPUs."""

    nnodes: int
    gpus_per_node: int

    @property
    def gpus(self) -> int:
        return self.nnodes * self.gpus_per_node


def suggested_split(trainer: Pool, rollout: Pool, nodes: int) -> tuple[int, int]:
    """Trainer / rollout node counts for `nodes` nodes in the config's trainer:rollout proportion (each >= 1)."""
    trainer_nodes = min(max(1, round(nodes * trainer.nnodes / (trainer.nnodes + rollout.nnodes))), nodes - 1)
    return trainer_nodes, nodes - trainer_nodes


def layout_overrides(config: DictConfig, config_name: str, nodes: int, gpus_per_node: int) -> list[str]:
    """The overrides that fit `config` to `nodes` x `gpus_per_node` GPUs, or LayoutError naming what to pass."""
    trainer = Pool(int(config.trainer.nnodes), int(config.trainer.n_gpus_per_node))
    fsdp_size = int(config.actor_rollout_ref.actor.fsdp_config.get("fsdp_size", -1))
    if 0 < fsdp_size < trainer.gpus and trainer.gpus % fsdp_size:
        # verl's create_device_mesh builds a (GPUs // fsdp_size) x fsdp_size mesh, which must hold every rank
        raise LayoutError(
            f"{config_name}: actor_rollout_ref.actor.fsdp_config.fsdp_size={fsdp_size} does not divide the trainer's "
            f"{trainer.gpus} GPUs: set it to a divisor (8 on 8-GPU nodes: FSDP within a node), or -1 to shard over all."
        )
    if config.trainer.v1.trainer_mode not in SEPARATE_ASYNC_MODES:
        return [f"trainer.nnodes={nodes}", f"trainer.n_gpus_per_node={gpus_per_node}"]
    rollout_config = config.actor_rollout_ref.rollout
    rollout = Pool(int(rollout_config.nnodes), int(rollout_config.n_gpus_per_node))
    allocated = nodes * gpus_per_node
    if trainer.gpus + rollout.gpus == allocated and max(trainer.gpus_per_node, rollout.gpus_per_node) <= gpus_per_node:
        return []
    wanted_nodes = trainer.nnodes + rollout.nnodes
    message = (
        f"{config_name} places trainer.nnodes={trainer.nnodes} x trainer.n_gpus_per_node={trainer.gpus_per_node} + "
        f"actor_rollout_ref.rollout.nnodes={rollout.nnodes} x actor_rollout_ref.rollout.n_gpus_per_node="
        f"{rollout.gpus_per_node} = {trainer.gpus + rollout.gpus} GPUs, but the job has {nodes} node(s) x "
        f"{gpus_per_node} GPU(s) = {allocated}."
    )
    if nodes >= 2:
        trainer_nodes, rollout_nodes = suggested_split(trainer, rollout, nodes)
        message += (
            f" Keep this allocation with: trainer.nnodes={trainer_nodes} actor_rollout_ref.rollout.nnodes="
            f"{rollout_nodes} trainer.n_gpus_per_node={gpus_per_node} "
            f"actor_rollout_ref.rollout.n_gpus_per_node={gpus_per_node};"
        )
    else:
        half = gpus_per_node // 2
        message += (
            f" One node can hold both pools by splitting its GPUs: trainer.nnodes=1 actor_rollout_ref.rollout.nnodes=1 "
            f"trainer.n_gpus_per_node={gpus_per_node - half} actor_rollout_ref.rollout.n_gpus_per_node={half};"
        )
    message += f" or submit with sbatch --nodes={wanted_nodes} --gpus-per-node={trainer.gpus_per_node}."
    raise LayoutError(message)

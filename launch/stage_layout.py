"""The GPU layout of one stage config against the Slurm allocation: derived where it can be, checked where not.

verl places its worker pools by the config alone (`trainer.nnodes` x `trainer.n_gpus_per_node`, plus the standalone
rollout pool `actor_rollout_ref.rollout.nnodes` x `.n_gpus_per_node` of the separate-async trainer); nothing in
verl compares them with the Ray cluster, so a mismatch idles GPUs or waits forever for GPUs that are not there.

- Colocated configs (verl's `sync` trainer: DeepCoder, MicroCoder, debug, evaluation) have one pool: the layout is
  derived from the allocation, `trainer.nnodes=NODES trainer.n_gpus_per_node=GPUS_PER_NODE`.
- Separate-async configs (NousCoder) split the nodes between two pools, which only the user can choose: the GPUs of
  both pools must add up to the allocation's and each pool's GPUs per node must fit a node; otherwise this exits 2
  with the overrides (or the `--nodes`) that would fit.

    python launch/stage_layout.py --nodes 6 --gpus-per-node 8 --config dapo_32k --config eval_lcb_80k [overrides...]

Prints `NAME<TAB>OVERRIDES` per config on stdout (the overrides the stage chain appends to that config's command;
empty for a separate-async config that fits) and the layout on stderr.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from recipe.nouscoder.main import config_dir

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


def compose_stage(config_name: str, overrides: list[str]) -> DictConfig:
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        return compose(config_name=config_name, overrides=overrides)


def suggested_split(trainer: Pool, rollout: Pool, nodes: int) -> tuple[int, int]:
    """Trainer / rollout node counts for `nodes` nodes in the config's trainer:rollout proportion (each >= 1)."""
    trainer_nodes = min(max(1, round(nodes * trainer.nnodes / (trainer.nnodes + rollout.nnodes))), nodes - 1)
    return trainer_nodes, nodes - trainer_nodes


def layout_overrides(config: DictConfig, config_name: str, nodes: int, gpus_per_node: int) -> list[str]:
    """The overrides that fit `config` to `nodes` x `gpus_per_node` GPUs, or LayoutError naming what to pass."""
    trainer = Pool(int(config.trainer.nnodes), int(config.trainer.n_gpus_per_node))
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python launch/stage_layout.py",
        description="Check each config's GPU layout against the allocation (separate-async) or derive it "
        "(colocated). Prints one line per config, 'NAME<TAB>OVERRIDES'; exits 2 naming what to pass on a mismatch.",
    )
    parser.add_argument("--nodes", type=int, required=True, help="nodes of the Ray cluster (the job's NNODES)")
    parser.add_argument("--gpus-per-node", type=int, required=True, help="GPUs per node (the job's GPUS_PER_NODE)")
    parser.add_argument(
        "--config", action="append", required=True, help="a config the job runs (repeat: stages, evaluations)"
    )
    parser.add_argument("overrides", nargs="*", help="the hydra overrides every config runs with")
    args = parser.parse_args(argv)
    errors = []
    for name in dict.fromkeys(args.config):
        config = compose_stage(name, args.overrides)
        try:
            overrides = layout_overrides(config, name, args.nodes, args.gpus_per_node)
        except LayoutError as error:
            errors.append(str(error))
            continue
        print(
            f"stage_layout: {name} ({config.trainer.v1.trainer_mode}) on {args.nodes} x {args.gpus_per_node} GPUs: "
            f"{' '.join(overrides) or 'the config layout fits'}",
            file=sys.stderr,
        )
        print(f"{name}\t{' '.join(overrides)}")
    if errors:
        print("\n".join(f"stage_layout: ERROR: {error}" for error in errors), file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()

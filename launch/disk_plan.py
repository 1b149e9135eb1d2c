"""The disk a chained run needs in OUTPUT_ROOT, from its checkpoint retention, checked before a GPU-hour is spent.

verl's FSDP checkpoint of a model with P parameters holds fp32 weights (4 B) and Adam's two fp32 moments (8 B) per
parameter, saved by every rank: with FSDP groups of `fsdp_size` GPUs among N trainer GPUs (HYBRID_SHARD), each of the
N / fsdp_size replicas writes a full copy, so a checkpoint is 12 P x N / fsdp_size bytes (Qwen3-14B on the NousCoder
trainer: 12 x 14.77e9 x 2 = 354 GB). The stage chain's retention (launch/prune_checkpoints.py) keeps, per stage:

- while it trains: the newest KEEP_LAST_CHECKPOINTS, the best 1 (RESCORE_TOP_K in a re-scored stage) and the one
  being written;
- while it is re-scored: those, plus each candidate merged to a bf16 Hugging Face model (2 P bytes);
- once its model is selected: the selected checkpoint whole, the model shards (4 P x replicas) of the others (their
  optimizer shards are deleted), and the selected merged model;

so the peak is reached while the last stage trains beside the selected remains of the earlier ones, or while a
stage is re-scored. Stage 0's generations (the offline filter) add the text of G x problems responses.

    python launch/disk_plan.py                                    # the NousCoder DAPO chain, Qwen3-14B, 6 x 8 GPUs
    python launch/disk_plan.py --stages "deepcoder_16k deepcoder_32k" --nodes 4 --output-root /scratch/me
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from chain import Chain, ChainError, add_chain_arguments, chain_from_args, compose_chain
from model_spec import UnknownModel, add_model_arguments, model_from_args
from omegaconf import DictConfig

CHECKPOINT_BYTES_PER_PARAM = 12  # verl's FSDP checkpoint: fp32 weights 4 B + Adam's two fp32 moments 8 B
OPTIMIZER_BYTES_PER_PARAM = 8  # Adam's two fp32 moments, the part deleted after the selection
MERGED_BYTES_PER_PARAM = 2  # the selected model merged to bf16 safetensors
TEXT_BYTES_PER_TOKEN = 4  # a decoded token of code or prose, about 4 characters


@dataclass(frozen=True)
class StageDisk:
    """One training stage's retention: bytes per checkpoint, checkpoints kept, merged candidates."""

    name: str
    checkpoint_bytes: float
    model_shard_bytes: float
    merged_bytes: float
    keep_last: int
    keep_best: int
    candidates: int

    @property
    def training_bytes(self) -> float:
        return (self.keep_last + self.keep_best + 1) * self.checkpoint_bytes

    @property
    def selecting_bytes(self) -> float:
        return self.training_bytes + self.candidates * self.merged_bytes

    @property
    def selected_bytes(self) -> float:
        others = self.keep_last + self.keep_best - 1
        return self.checkpoint_bytes + others * self.model_shard_bytes + self.merged_bytes


def replicas(config: DictConfig) -> int:
    """How many full copies of the sharded training state the trainer's ranks hold, and save: with FSDP groups of
    `fsdp_size` GPUs among N (HYBRID_SHARD), N / fsdp_size; with full sharding, 1."""
    gpus = int(config.trainer.nnodes) * int(config.trainer.n_gpus_per_node)
    fsdp_size = int(config.actor_rollout_ref.actor.fsdp_config.get("fsdp_size", -1))
    return gpus // fsdp_size if 0 < fsdp_size < gpus else 1


def stage_disk(name: str, config: DictConfig, params: float, keep_last: int, rescore_top_k: int | None) -> StageDisk:
    copies = replicas(config)
    keep_best = rescore_top_k or 1
    return StageDisk(
        name=name,
        checkpoint_bytes=CHECKPOINT_BYTES_PER_PARAM * params * copies,
        model_shard_bytes=(CHECKPOINT_BYTES_PER_PARAM - OPTIMIZER_BYTES_PER_PARAM) * params * copies,
        merged_bytes=MERGED_BYTES_PER_PARAM * params,
        keep_last=keep_last,
        keep_best=keep_best,
        candidates=keep_best if rescore_top_k else 1,
    )


def peak_bytes(stages: list[StageDisk], extra_bytes: float = 0.0) -> tuple[float, str, float]:
    """The most the run holds at once, in which phase, and how much of it the earlier stages' remains are."""
    phases = []
    for index, stage in enumerate(stages):
        done = sum(earlier.selected_bytes for earlier in stages[:index])
        phases.append((done + stage.training_bytes + extra_bytes, f"training {stage.name}", done))
        phases.append((done + stage.selecting_bytes + extra_bytes, f"selecting {stage.name}'s model", done))
    return max(phases)


def used_bytes(directory: Path) -> int:
    """Bytes the files under `directory` occupy now (0 when it does not exist)."""
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def free_bytes(path: Path) -> int:
    """Free bytes, for an unprivileged user, of the filesystem that holds (or will hold) `path`."""
    existing = path
    while not existing.exists():
        existing = existing.parent
    stats = os.statvfs(existing)
    return stats.f_bavail * stats.f_frsize


def gb(value: float) -> str:
    return f"{value / 1e9:,.0f} GB"


def model_params(model_path: str) -> float | None:
    """Parameters of the model at `model_path` (a directory, or a Hugging Face id already in the local cache),
    counted on the meta device from its config; None when the config cannot be read without the network."""
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM

        config = AutoConfig.from_pretrained(model_path, local_files_only=True)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
    except Exception:  # not downloaded, not a model, an architecture this transformers lacks: size unknown
        return None
    return float(sum(parameter.numel() for parameter in model.parameters()))


def disk_lines(chain: Chain, fitted: dict[str, DictConfig], params: float, keep_last: int, top_k: int) -> list[str]:
    """Each stage's checkpoint size and the chain's peak, as the planner and this script print them."""
    disks = [
        stage_disk(name, fitted[name], params, keep_last, top_k if name in chain.rescore else None)
        for name in chain.stages
    ]
    need, phase, _ = peak_bytes(disks)
    lines = [f"- a checkpoint of {d.name}: {gb(d.checkpoint_bytes)}" for d in disks]
    return [*lines, f"- disk at the peak ({phase}): {gb(need)} in OUTPUT_ROOT, besides stage 0's generations"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python launch/disk_plan.py", description=__doc__.splitlines()[0])
    add_chain_arguments(parser, defaults=True)
    add_model_arguments(parser)
    parser.add_argument("--keep-last", type=int, default=2, help="KEEP_LAST_CHECKPOINTS (default: %(default)s)")
    parser.add_argument("--output-root", type=Path, default=None, help="OUTPUT_ROOT: compare with its free space")
    args = parser.parse_args(argv)
    try:
        chain = chain_from_args(args)
        _, fitted = compose_chain(chain, args.nodes, args.gpus_per_node)
        model = model_from_args(args, fitted[chain.stages[0]])
    except (ChainError, UnknownModel) as stop:
        sys.exit(f"disk_plan: error: {stop}")
    print(model.describe())
    print("\n".join(disk_lines(chain, fitted, model.params, args.keep_last, args.rescore_top_k)))
    if args.output_root is not None:
        print(f"- OUTPUT_ROOT={args.output_root}: {gb(free_bytes(args.output_root))} free")


if __name__ == "__main__":
    main()

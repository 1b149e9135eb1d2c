"""Bounded checkpoint retention that never deletes the checkpoint the stage chain will select.

verl's own `trainer.max_actor_ckpt_to_keep` keeps the newest K checkpoints, but NousCoder continues the next
context stage from the checkpoint with the best LiveCodeBench score, which is often an older one. This pass
keeps, in a verl checkpoint directory (`trainer.default_local_dir`):
  - the `--keep-best` best-scoring complete checkpoints, ranked exactly as `recipe.nouscoder.selection.select_checkpoint`
    ranks them (1: the one it selects; more when the stage chain re-scores the best few at a longer context);
  - the newest `--keep-last` complete checkpoints (the newest is what `trainer.resume_mode=auto` resumes from);
  - every `global_step_N` newer than `latest_checkpointed_iteration.txt` (a save still in progress);
and deletes the other `global_step_N` directories. With no validation score logged yet it deletes nothing.

Once the stage chain has chosen a stage's model, `--drop-optimizers-except STEP` deletes instead the optimizer shards
(`actor/optim_world_size_*_rank_*.pt`, verl's FSDP checkpoint manager: 8 of every 12 bytes per parameter) of every
complete checkpoint but STEP's: nothing resumes them any more, and their model shards stay for a later merge.

    python launch/prune_checkpoints.py CHECKPOINT_DIR --keep-last 2 [--keep-best 1] [--every 600] [--dry-run]
    python launch/prune_checkpoints.py CHECKPOINT_DIR --drop-optimizers-except STEP [--dry-run]
"""

from __future__ import annotations

import argparse
import re
import shutil
import time
from pathlib import Path

from recipe.nouscoder.run.run_dir import METRICS_FILE_NAME, TRACKER_FILE_NAME, complete_checkpoint_steps
from recipe.nouscoder.selection.select_checkpoint import DEFAULT_METRIC_PATTERN, ranked_checkpoints

STEP_DIR = re.compile(r"^global_step_(\d+)$")


def step_dirs(checkpoint_dir: Path) -> dict[int, Path]:
    """Every `global_step_N` directory, complete or not."""
    found = {}
    for child in checkpoint_dir.iterdir():
        match = STEP_DIR.match(child.name)
        if match and child.is_dir():
            found[int(match.group(1))] = child
    return found


def steps_to_delete(
    checkpoint_dir: Path, keep_last: int, metric_pattern: str, keep_best: int = 1
) -> tuple[list[int], str]:
    """Steps whose directories can go, and a one-line reason naming what is kept."""
    if keep_last < 1:
        raise ValueError(f"keep_last={keep_last}: keep at least 1, the checkpoint a crashed stage resumes from.")
    if keep_best < 1:
        raise ValueError(f"keep_best={keep_best}: keep at least 1, the checkpoint the stage chain selects.")
    tracker = checkpoint_dir / TRACKER_FILE_NAME
    if not tracker.is_file():
        return [], "no finished checkpoint yet"
    latest = int(tracker.read_text().strip())
    complete = sorted(complete_checkpoint_steps(checkpoint_dir))
    try:
        best = ranked_checkpoints(checkpoint_dir, checkpoint_dir / METRICS_FILE_NAME, metric_pattern)[:keep_best]
    except (FileNotFoundError, ValueError) as error:
        return [], f"no score to protect the best checkpoint with, deleting nothing ({error})"
    newest = complete[-keep_last:]
    kept = {*newest, *(selection.step for selection in best)}
    doomed = sorted(step for step in step_dirs(checkpoint_dir) if step <= latest and step not in kept)
    best_text = ", ".join(f"global_step_{selection.step} ({selection.score:.4f})" for selection in best)
    reason = f"keeping best {best_text} by {best[0].metric_key} and newest {newest}"
    return doomed, reason


def prune(checkpoint_dir: Path, keep_last: int, metric_pattern: str, dry_run: bool, keep_best: int = 1) -> list[int]:
    """One retention pass; returns the deleted steps."""
    doomed, reason = steps_to_delete(checkpoint_dir, keep_last, metric_pattern, keep_best)
    directories = step_dirs(checkpoint_dir)
    for step in doomed:
        if not dry_run:
            shutil.rmtree(directories[step])
    verb = "would delete" if dry_run else "deleted"
    print(f"[prune {time.strftime('%Y-%m-%d %H:%M:%S')}] {checkpoint_dir}: {reason}; {verb} {doomed}", flush=True)
    return doomed


OPTIMIZER_SHARDS = "actor/optim_world_size_*_rank_*.pt"


def drop_optimizers(checkpoint_dir: Path, selected_step: int, dry_run: bool) -> list[Path]:
    """Delete the optimizer shards of every complete checkpoint but `selected_step`'s; returns the files."""
    doomed = [
        shard
        for step, actor_dir in sorted(complete_checkpoint_steps(checkpoint_dir).items())
        if step != selected_step
        for shard in sorted(actor_dir.parent.glob(OPTIMIZER_SHARDS))
    ]
    freed = sum(shard.stat().st_size for shard in doomed)
    for shard in doomed if not dry_run else []:
        shard.unlink()
    verb = "would delete" if dry_run else "deleted"
    print(
        f"[prune {time.strftime('%Y-%m-%d %H:%M:%S')}] {checkpoint_dir}: model selected from global_step_{selected_step}; "
        f"{verb} the {len(doomed)} optimizer shard(s) of the other checkpoints ({freed / 1e9:.1f} GB)",
        flush=True,
    )
    return doomed


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python launch/prune_checkpoints.py",
        description="Delete old verl checkpoints but keep the best-scoring one, the newest ones and saves in progress.",
    )
    parser.add_argument(
        "checkpoint_dir", type=Path, help="the stage's trainer.default_local_dir (holds global_step_N/)."
    )
    parser.add_argument(
        "--keep-last", type=int, default=2, help="newest complete checkpoints to keep besides the best (default: 2)."
    )
    parser.add_argument(
        "--keep-best",
        type=int,
        default=1,
        help="best-scoring complete checkpoints to keep, for a later re-scoring of the best few (default: 1).",
    )
    parser.add_argument(
        "--metric",
        default=DEFAULT_METRIC_PATTERN,
        help="regular expression of the score key, as for select_checkpoint (default: %(default)s).",
    )
    parser.add_argument(
        "--every",
        type=float,
        default=0,
        help="repeat every this many seconds until killed (default: 0, one pass).",
    )
    parser.add_argument(
        "--drop-optimizers-except",
        type=int,
        metavar="STEP",
        default=None,
        help="instead of the retention pass: delete the optimizer shards of every checkpoint but global_step_STEP "
        "(the stage's selected model; run once the selection is done).",
    )
    parser.add_argument("--dry-run", action="store_true", help="print what would be deleted, delete nothing.")
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.keep_last < 1:
        parser.error(f"--keep-last {args.keep_last}: keep at least 1, the checkpoint a crashed stage resumes from.")
    if args.keep_best < 1:
        parser.error(f"--keep-best {args.keep_best}: keep at least 1, the checkpoint the stage chain selects.")
    if args.drop_optimizers_except is not None:
        drop_optimizers(args.checkpoint_dir, args.drop_optimizers_except, args.dry_run)
        return
    while True:
        if args.checkpoint_dir.is_dir():
            prune(args.checkpoint_dir, args.keep_last, args.metric, args.dry_run, args.keep_best)
        if args.every <= 0:
            return
        time.sleep(args.every)


if __name__ == "__main__":
    main()

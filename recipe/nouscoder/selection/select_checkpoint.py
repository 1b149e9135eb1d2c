"""Pick a run's best checkpoint by LiveCodeBench score and merge it into a Hugging Face model directory.

NousCoder "Iterative Context Extension": the model trained at 32k that scores best on LiveCodeBench is the
starting point of the 40k stage, and the best 40k model is evaluated at 80k with YaRN. This CLI is the step
between stages: `python -m recipe.nouscoder.selection.select_checkpoint RUN_DIR`.

Run directory it reads: ``recipe.nouscoder.run.run_dir`` (verl's checkpoint folders and the metrics file).

Score: verl's validation key `val-core/<data_source>/acc/mean@<n>` (V1 trainer `_val_metrics_update`: the
core variable is `acc` because `reward_fns.compute_score` returns it; `mean@n` is the mean accuracy over the
n samples per problem, i.e. pass@1). The default `--metric` pattern matches the LiveCodeBench data source;
exactly one key must match.

Selection: among steps N with a complete checkpoint (N <= latest_checkpointed_iteration and
`global_step_N/actor/fsdp_config.json` present) and a logged score, the highest score wins; ties go to the
earlier step (less training, same score). If a step was logged twice (a resumed run), the last line counts.

Any checkpoint: `--step N` takes step N (complete, whatever its score; none needed) instead of the best, merged to
`RUN_DIR/step_hf/global_step_N` by default, e.g. to evaluate a checkpoint of the cluster run.

Output: the merge is verl's FSDP model merger (`verl.model_merger`, equivalent to
`python -m verl.model_merger merge --backend fsdp --local_dir RUN_DIR/global_step_N/actor --target_dir OUT`),
with OUT = `RUN_DIR/best_hf/global_step_N` by default. Progress goes to stderr; stdout's last line is the
merged model directory (with `--no-merge`: the selected `global_step_N/actor` directory).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from recipe.nouscoder.run.run_dir import METRICS_FILE_NAME, complete_checkpoint_steps, read_step_metrics

DEFAULT_METRIC_PATTERN = r"^val-core/[^/]*(livecodebench|lcb)[^/]*/acc/mean@\d+$"
MERGED_DIR_NAME = "best_hf"
STEP_MERGED_DIR_NAME = "step_hf"


@dataclass(frozen=True)
class Selection:
    """The chosen checkpoint: its step, score, metric key and actor shard directory."""

    step: int
    score: float
    metric_key: str
    actor_dir: Path


class NoValidationScores(ValueError):
    """The run logged no validation metric at all: nothing to rank its checkpoints by."""


def resolve_metric_key(step_metrics: dict[int, dict[str, float]], pattern: str) -> str:
    """The single metric key matching `pattern` across all logged steps.

    Raises:
        NoValidationScores: no `val-*` key was logged at any step (the run never validated).
        ValueError: the pattern matches no key or several.
    """
    regex = re.compile(pattern)
    keys = sorted({key for metrics in step_metrics.values() for key in metrics if regex.search(key)})
    if len(keys) != 1:
        val_keys = sorted({key for metrics in step_metrics.values() for key in metrics if key.startswith("val-")})
        if not val_keys:
            raise NoValidationScores(
                "no validation score was logged (no val-* key at any step): the run never validated, so there is "
                "nothing to rank its checkpoints by. Train with validation: data.val_files=TEST.parquet "
                "trainer.test_freq=N (N dividing trainer.save_freq, so every saved step is scored); or merge a "
                "checkpoint of your choice with " + merge_command(Path("RUN_DIR/global_step_N/actor"), Path("OUT"))
            )
        raise ValueError(
            f"--metric {pattern!r} must match exactly one logged key, matched {keys}. "
            f"Validation keys logged: {val_keys[:20]}. Pass --metric with a pattern that picks one."
        )
    return keys[0]


def ranked_checkpoints(
    run_dir: Path, metrics_file: Path, metric_pattern: str = DEFAULT_METRIC_PATTERN
) -> list[Selection]:
    """Every complete, scored checkpoint, best first: score descending, ties -> earlier step first."""
    checkpoints = complete_checkpoint_steps(run_dir)
    step_metrics = read_step_metrics(metrics_file)
    metric_key = resolve_metric_key(step_metrics, metric_pattern)
    scored = [
        (float(step_metrics[step][metric_key]), step)
        for step in checkpoints
        if step in step_metrics and metric_key in step_metrics[step]
    ]
    if not scored:
        raise ValueError(
            f"no checkpoint step in {run_dir} (steps {sorted(checkpoints)}) has {metric_key!r} logged in "
            f"{metrics_file}: set trainer.test_freq to divide trainer.save_freq so every save is validated."
        )
    return [
        Selection(step=step, score=score, metric_key=metric_key, actor_dir=checkpoints[step])
        for score, step in sorted(scored, key=lambda pair: (-pair[0], pair[1]))
    ]


def select_best(run_dir: Path, metrics_file: Path, metric_pattern: str = DEFAULT_METRIC_PATTERN) -> Selection:
    """Best complete checkpoint by score; ties -> earliest step."""
    return ranked_checkpoints(run_dir, metrics_file, metric_pattern)[0]


def checkpoint_at(run_dir: Path, step: int) -> Path:
    """The actor directory of complete checkpoint ``step``.

    Raises:
        ValueError: the step has no complete checkpoint (naming the ones there are).
    """
    checkpoints = complete_checkpoint_steps(run_dir)
    if step not in checkpoints:
        raise ValueError(
            f"no complete checkpoint global_step_{step} (complete: {sorted(checkpoints) or 'none'}; a step is "
            "complete when it is at most latest_checkpointed_iteration.txt and has actor/fsdp_config.json)"
        )
    return checkpoints[step]


def merge_to_hf(actor_dir: Path, target_dir: Path) -> Path:
    """Merge FSDP shards of `actor_dir` into a Hugging Face model at `target_dir` with verl's model merger."""
    from verl.model_merger.base_model_merger import ModelMergerConfig
    from verl.model_merger.fsdp_model_merger import FSDPModelMerger

    target_dir.mkdir(parents=True, exist_ok=True)
    config = ModelMergerConfig(
        operation="merge",
        backend="fsdp",
        local_dir=str(actor_dir),
        target_dir=str(target_dir),
        hf_model_config_path=str(actor_dir / "huggingface"),
    )
    with contextlib.redirect_stdout(sys.stderr):
        merger = FSDPModelMerger(config)
        merger.merge_and_save()
        merger.cleanup()
    return target_dir


def merge_command(actor_dir: Path, target_dir: Path) -> str:
    """The equivalent shell command (what `merge_to_hf` runs in-process)."""
    return f"python -m verl.model_merger merge --backend fsdp --local_dir {actor_dir} --target_dir {target_dir}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m recipe.nouscoder.selection.select_checkpoint",
        description="Pick the checkpoint with the best LiveCodeBench validation score (ties: earlier step), or step N "
        "with --step, merge its FSDP shards into a Hugging Face model directory and print that directory on stdout's "
        "last line.",
    )
    parser.add_argument("run_dir", type=Path, help="the run's trainer.default_local_dir (holds global_step_N/).")
    parser.add_argument(
        "--metrics-file",
        type=Path,
        default=None,
        help=f"verl file-logger JSONL with the validation metrics (default: RUN_DIR/{METRICS_FILE_NAME}).",
    )
    parser.add_argument(
        "--metric",
        default=DEFAULT_METRIC_PATTERN,
        help="regular expression selecting the one score key (default: %(default)s).",
    )
    parser.add_argument(
        "--target-dir",
        type=Path,
        default=None,
        help=f"where to write the merged model (default: RUN_DIR/{MERGED_DIR_NAME}/global_step_N).",
    )
    parser.add_argument(
        "--step",
        type=int,
        default=None,
        help=f"take checkpoint global_step_N instead of the best (no score needed); merged to "
        f"RUN_DIR/{STEP_MERGED_DIR_NAME}/global_step_N unless --target-dir",
    )
    parser.add_argument(
        "--no-merge",
        action="store_true",
        help="only select: print the merge command on stderr and the chosen actor directory on stdout.",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run_dir = args.run_dir.resolve()
    metrics_file = args.metrics_file or run_dir / METRICS_FILE_NAME
    try:
        if args.step is not None:
            step, actor_dir = args.step, checkpoint_at(run_dir, args.step)
            default_target = run_dir / STEP_MERGED_DIR_NAME / f"global_step_{step}"
            print(f"checkpoint global_step_{step} (--step)", file=sys.stderr)
        else:
            selection = select_best(run_dir, metrics_file, args.metric)
            step, actor_dir = selection.step, selection.actor_dir
            default_target = run_dir / MERGED_DIR_NAME / f"global_step_{step}"
            print(f"selected global_step_{step}: {selection.metric_key} = {selection.score:.4f}", file=sys.stderr)
    except (FileNotFoundError, ValueError) as exc:
        print(f"select_checkpoint: error: {run_dir}: {exc}", file=sys.stderr)
        return 2
    target_dir = args.target_dir or default_target
    if args.no_merge:
        print(merge_command(actor_dir, target_dir), file=sys.stderr)
        print(actor_dir)
        return 0
    print(merge_to_hf(actor_dir, target_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())

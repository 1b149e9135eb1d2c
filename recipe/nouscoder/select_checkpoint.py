"""Pick a run's best checkpoint by LiveCodeBench score and merge it into a Hugging Face model directory.

NousCoder "Iterative Context Extension": the model trained at 32k that scores best on LiveCodeBench is the
starting point of the 40k stage, and the best 40k model is evaluated at 80k with YaRN. This CLI is the step
between stages: `python -m recipe.nouscoder.select_checkpoint RUN_DIR`.

Run directory it reads (RUN_DIR = verl 0.9.1's `trainer.default_local_dir`, as the V1 trainer writes it in
`verl.trainer.ppo.v1.trainer_base.PPOTrainer._save_checkpoint` and the FSDP engine's `FSDPCheckpointManager.save_checkpoint`)::

    RUN_DIR/
      latest_checkpointed_iteration.txt      # "N": the last step whose save finished (written after all shards)
      metrics.jsonl                          # verl's file logger (utils/tracking.py FileLogger), see below
      metrics.<k>.jsonl                      # earlier segments of a resumed run, k = 1, 2, ... (oldest first)
      global_step_N/
        data.pt                              # dataloader state
        actor/
          fsdp_config.json                   # {"FSDP_version": 1|2, "world_size": W}
          model_world_size_W_rank_R.pt       # sharded model state dict, R = 0..W-1
          optim_world_size_W_rank_R.pt       # (not read here)
          extra_state_world_size_W_rank_R.pt # (not read here)
          huggingface/                       # config.json (+ tokenizer files, generation_config.json), rank 0

Metrics file: verl's `FileLogger` writes one JSON object per logged step, `{"step": N, "data": {key: value}}`,
to `$VERL_FILE_LOGGER_PATH` (else `./<project_name>/<experiment_name>.jsonl`); `recipe.nouscoder.main` sets
`VERL_FILE_LOGGER_PATH=RUN_DIR/metrics.jsonl` so that it lands here (`--metrics-file` overrides). verl's
FileLogger truncates its file when it opens it, so on a resumed run `main` first renames the old file to
`metrics.<k>.jsonl` (next free k); the segments are read in order k = 1, 2, ..., then `metrics.jsonl`. Validation
at step N is logged in step N's line (V1 trainer `fit`: checkpoint saved, then `_validate`, then one
`logger.log`); the validation before training is logged at step 0, which has no checkpoint and is skipped.

Score: verl's validation key `val-core/<data_source>/acc/mean@<n>` (V1 trainer `_val_metrics_update`: the
core variable is `acc` because `reward_fns.compute_score` returns it; `mean@n` is the mean accuracy over the
n samples per problem, i.e. pass@1). The default `--metric` pattern matches the LiveCodeBench data source;
exactly one key must match.

Selection: among steps N with a complete checkpoint (N <= latest_checkpointed_iteration and
`global_step_N/actor/fsdp_config.json` present) and a logged score, the highest score wins; ties go to the
earlier step (less training, same score). If a step was logged twice (a resumed run), the last line counts.

Output: the merge is verl's FSDP model merger (`verl.model_merger`, equivalent to
`python -m verl.model_merger merge --backend fsdp --local_dir RUN_DIR/global_step_N/actor --target_dir OUT`),
with OUT = `RUN_DIR/best_hf/global_step_N` by default. Progress goes to stderr; stdout's last line is the
merged model directory (with `--no-merge`: the selected `global_step_N/actor` directory).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_METRIC_PATTERN = r"^val-core/[^/]*(livecodebench|lcb)[^/]*/acc/mean@\d+$"
METRICS_FILE_NAME = "metrics.jsonl"
TRACKER_FILE_NAME = "latest_checkpointed_iteration.txt"
MERGED_DIR_NAME = "best_hf"
_STEP_DIR = re.compile(r"^global_step_(\d+)$")


@dataclass(frozen=True)
class Selection:
    """The chosen checkpoint: its step, score, metric key and actor shard directory."""

    step: int
    score: float
    metric_key: str
    actor_dir: Path


def complete_checkpoint_steps(run_dir: Path) -> dict[int, Path]:
    """Steps whose FSDP actor checkpoint finished saving, mapped to their `global_step_N/actor` directory."""
    tracker = run_dir / TRACKER_FILE_NAME
    if not tracker.is_file():
        raise FileNotFoundError(
            f"{tracker} not found: {run_dir} is not a verl checkpoint directory (trainer.default_local_dir) "
            "or no checkpoint has finished saving yet (set trainer.save_freq > 0)."
        )
    latest = int(tracker.read_text().strip())
    steps = {}
    for child in run_dir.iterdir():
        match = _STEP_DIR.match(child.name)
        if match and int(match.group(1)) <= latest and (child / "actor" / "fsdp_config.json").is_file():
            steps[int(match.group(1))] = child / "actor"
    return steps


def metrics_segments(metrics_file: Path) -> list[Path]:
    """`metrics.<k>.jsonl` segments of earlier (resumed) runs in k order, then `metrics_file` itself."""
    stem, suffix = metrics_file.stem, metrics_file.suffix
    pattern = re.compile(rf"^{re.escape(stem)}\.(\d+){re.escape(suffix)}$")
    earlier = [
        (int(m.group(1)), p) for p in metrics_file.parent.glob(f"{stem}.*{suffix}") if (m := pattern.match(p.name))
    ]
    return [path for _, path in sorted(earlier)] + [metrics_file]


def read_step_metrics(metrics_file: Path) -> dict[int, dict[str, float]]:
    """verl FileLogger JSONL (and its earlier segments) -> {step: merged metrics}; later lines override."""
    if not metrics_file.is_file():
        raise FileNotFoundError(
            f"metrics file {metrics_file} not found: run with trainer.logger containing 'file' and "
            "VERL_FILE_LOGGER_PATH pointing there (recipe.nouscoder.main does both), or pass --metrics-file."
        )
    by_step: dict[int, dict[str, float]] = {}
    for segment in metrics_segments(metrics_file):
        for line_number, line in enumerate(segment.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            if "step" not in record or not isinstance(record.get("data"), dict):
                raise ValueError(f"{segment}:{line_number}: expected verl FileLogger line {{'step', 'data'}}")
            by_step.setdefault(int(record["step"]), {}).update(record["data"])
    return by_step


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
        prog="python -m recipe.nouscoder.select_checkpoint",
        description="Pick the checkpoint with the best LiveCodeBench validation score (ties: earlier step), "
        "merge its FSDP shards into a Hugging Face model directory and print that directory on stdout's last line.",
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
        selection = select_best(run_dir, metrics_file, args.metric)
    except (FileNotFoundError, ValueError) as exc:
        print(f"select_checkpoint: error: {run_dir}: {exc}", file=sys.stderr)
        return 2
    target_dir = args.target_dir or run_dir / MERGED_DIR_NAME / f"global_step_{selection.step}"
    print(
        f"selected global_step_{selection.step}: {selection.metric_key} = {selection.score:.4f}",
        file=sys.stderr,
    )
    if args.no_merge:
        print(merge_command(selection.actor_dir, target_dir), file=sys.stderr)
        print(selection.actor_dir)
        return 0
    print(merge_to_hf(selection.actor_dir, target_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The files of a run directory and how to read them.

A run directory (RUN_DIR = verl 0.9.1's `trainer.default_local_dir`, as the V1 trainer writes it in
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
`VERL_FILE_LOGGER_PATH=RUN_DIR/metrics.jsonl` so that it lands here (the CLIs' `--metrics-file` overrides). verl's
FileLogger truncates its file when it opens it, so on a resumed run `main` first renames the old file to
`metrics.<k>.jsonl` (next free k); the segments are read in order k = 1, 2, ..., then `metrics.jsonl`. Validation
at step N is logged in step N's line (V1 trainer `fit`: checkpoint saved, then `_validate`, then one
`logger.log`); the validation before training is logged at step 0, which has no checkpoint. A line that is not such
an object (the cut-off last line of a node that lost power, a disk that filled) is reported on stderr with its file
and line number and skipped; the other lines are read.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

METRICS_FILE_NAME = "metrics.jsonl"
TRACKER_FILE_NAME = "latest_checkpointed_iteration.txt"
_STEP_DIR = re.compile(r"^global_step_(\d+)$")


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


def rotate_metrics_file(run_dir: str | Path) -> Path:
    """RUN_DIR/metrics.jsonl for a new run segment; a previous segment's file moves to metrics.<k>.jsonl (next k)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    current = run_dir / METRICS_FILE_NAME
    if current.exists():
        index = 1
        while (run_dir / f"metrics.{index}.jsonl").exists():
            index += 1
        current.rename(run_dir / f"metrics.{index}.jsonl")
    return current


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
        for line_number, line in enumerate(segment.read_text(errors="replace").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                step, data = int(record["step"]), record["data"]
                if not isinstance(data, dict):
                    raise TypeError("data is not an object")
            except (ValueError, KeyError, TypeError) as error:
                print(
                    f"WARNING: {segment}:{line_number}: not a verl FileLogger line {{'step': N, 'data': {{...}}}} "
                    f"({type(error).__name__}: {str(error)[:80]}); skipped: {line[:80]!r}",
                    file=sys.stderr,
                )
                continue
            by_step.setdefault(step, {}).update(data)
    return by_step

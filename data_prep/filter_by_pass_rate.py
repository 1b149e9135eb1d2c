"""Offline difficulty filter: drop problems the base model always solves (NousCoder blog, "Offline filtering").

NousCoder found ~10k of its 24k problems solved by every rollout of Qwen3-14B; they give no GRPO signal
(all advantages are zero) and are removed before training. Input: the grading CLI's output
(``python -m reward_fns.grade ... --out R.jsonl``), one line per rollout with ``problem_id`` and ``verdict`` /
``score``. For each problem with G rollouts and k accepted ones (pass@G = k / G):

- k == G (always solved): dropped;
- k == 0 (never solved): dropped only with ``--drop-all-fail``;
- problems without rollouts are kept and counted.

``--debug-subset N`` also writes a fixed subset of N problems of the data with 0 < k < G (the ones with learning
signal), chosen by the order of sha256(seed:problem_id), so the same rollouts always give the same subset; the report's
``debug_ids`` are exactly the problems written there.

    python -m data_prep.filter_by_pass_rate --rollouts R.jsonl --data train.parquet --out train_filtered.parquet \\
        --debug-subset 64 --debug-out data/debug_64/train.parquet

Bad input stops the run before anything is written (exit 2, one message naming the file and the fix): a missing
or non-parquet ``--data``, one without ``reward_model`` or ``extra_info.problem_id`` (not written by
``build_deepcoder_mix``), rollouts none of whose problem ids is in ``--data``. The outputs are written beside as
``*.partial`` and renamed when complete.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from reward_fns.cli import DefaultsHelpFormatter

ACCEPTED = "accepted"


@dataclass
class PassCounts:
    """Rollouts and accepted rollouts per problem id."""

    rollouts: Counter = field(default_factory=Counter)
    accepted: Counter = field(default_factory=Counter)

    def category(self, problem_id: str) -> str:
        """``no_rollouts``, ``all_pass``, ``all_fail`` or ``mixed``."""
        total = self.rollouts.get(problem_id, 0)
        if total == 0:
            return "no_rollouts"
        passed = self.accepted.get(problem_id, 0)
        return "all_pass" if passed == total else "all_fail" if passed == 0 else "mixed"


def read_rollouts(path: Path) -> PassCounts:
    """Count rollouts and accepted ones per problem; a line is accepted when ``verdict == "accepted"`` (or, with
    no verdict, when ``score > 0``).

    Raises:
        ValueError: the file is missing, or naming the file and line of a line that is not JSON or lacks
            ``problem_id``/``verdict``/``score``.
    """
    counts = PassCounts()
    if not path.is_file():
        raise ValueError(
            f"--rollouts {path} does not exist (write it with python -m reward_fns.grade ... --out {path})"
        )
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{line_number}: not a JSON object ({exc.msg})") from exc
            if not isinstance(record, dict) or "problem_id" not in record:
                raise ValueError(f"{path}:{line_number}: a rollout line needs 'problem_id'")
            if "verdict" not in record and "score" not in record:
                raise ValueError(f"{path}:{line_number}: a rollout line needs 'verdict' or 'score'")
            problem_id = str(record["problem_id"])
            counts.rollouts[problem_id] += 1
            passed = record["verdict"] == ACCEPTED if "verdict" in record else float(record["score"]) > 0
            counts.accepted[problem_id] += int(passed)
    return counts


def debug_subset(counts: PassCounts, size: int, seed: int = 0, available: set[str] | None = None) -> list[str]:
    """``size`` problem ids with 0 < pass@G < 1 (among ``available``, the data's ids, when given), the first in
    sha256(seed:problem_id) order."""
    mixed = [
        problem_id
        for problem_id in counts.rollouts
        if counts.category(problem_id) == "mixed" and (available is None or problem_id in available)
    ]
    return sorted(mixed, key=lambda problem_id: hashlib.sha256(f"{seed}:{problem_id}".encode()).hexdigest())[:size]


REBUILD = "pass the train.parquet written by python -m data_prep.build_deepcoder_mix"


def data_problem_ids(data: Path) -> set[str]:
    """``extra_info.problem_id`` of every row of ``data`` (reads only the small ``extra_info`` column).

    Raises:
        ValueError: ``data`` is missing, not parquet, or not a verl parquet of ``build_deepcoder_mix`` (no
            ``reward_model``, no ``extra_info.problem_id``).
    """
    if not data.is_file():
        raise ValueError(f"--data {data} does not exist; {REBUILD}")
    try:
        schema = pq.read_schema(data)
    except (pa.ArrowInvalid, OSError) as exc:
        raise ValueError(f"--data {data} is not a parquet file ({exc}); {REBUILD}") from exc
    if "reward_model" not in schema.names or "extra_info" not in schema.names:
        raise ValueError(f"--data {data} has no reward_model/extra_info columns (has {schema.names}); {REBUILD}")
    if "problem_id" not in {field.name for field in schema.field("extra_info").type}:
        raise ValueError(f"--data {data} has no extra_info.problem_id to match rollouts by; {REBUILD}")
    column = pq.read_table(data, columns=["extra_info"]).column("extra_info").combine_chunks()
    return set(column.field("problem_id").to_pylist())


def check_overlap(counts: PassCounts, data_ids: set[str], rollouts: Path, data: Path) -> str | None:
    """Raises ValueError when no rollout names a problem of the data (the filter would keep everything); returns a
    warning when only some do."""
    known = set(counts.rollouts) & data_ids
    if not known:
        examples = ", ".join(repr(problem_id) for problem_id in sorted(counts.rollouts)[:3])
        raise ValueError(
            f"none of the {len(counts.rollouts)} problem ids of --rollouts {rollouts} (e.g. {examples}) is in --data "
            f"{data} (e.g. {sorted(data_ids)[:3]}): grade the rollouts on this data's problems "
            "(their problem_id is the parquet's extra_info.problem_id) or pass the data they were graded on"
        )
    unknown = len(counts.rollouts) - len(known)
    if unknown:
        return f"{unknown} of the {len(counts.rollouts)} problems of {rollouts} are not in {data} and are ignored"
    return None


def filter_parquet(
    data: Path,
    out: Path,
    counts: PassCounts,
    drop_all_fail: bool = False,
    debug_ids: list[str] | None = None,
    debug_out: Path | None = None,
) -> dict[str, Any]:
    """Stream ``data`` row group by row group into ``out`` (and the debug subset into ``debug_out``); each file is
    written as ``<name>.partial`` and renamed when complete, so an interrupted run leaves no half file."""
    dropped = {"all_pass"} | ({"all_fail"} if drop_all_fail else set())
    wanted_debug = set(debug_ids or ())
    parquet = pq.ParquetFile(data)
    categories: Counter = Counter()
    targets = [out] + ([debug_out] if debug_out else [])
    partial = {target: target.with_name(target.name + ".partial") for target in targets}
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
    kept_rows = debug_rows = 0
    seen_ids: set[str] = set()
    try:
        with contextlib.ExitStack() as closing:
            writer = closing.enter_context(pq.ParquetWriter(partial[out], parquet.schema_arrow, compression="zstd"))
            debug_writer = (
                closing.enter_context(pq.ParquetWriter(partial[debug_out], parquet.schema_arrow, compression="zstd"))
                if debug_out
                else None
            )
            for group in tqdm(range(parquet.num_row_groups), desc="filter by pass rate", unit=" row groups"):
                table = parquet.read_row_group(group)
                ids = table.column("extra_info").combine_chunks().field("problem_id").to_pylist()
                seen_ids.update(ids)
                row_categories = [counts.category(problem_id) for problem_id in ids]
                categories.update(row_categories)
                keep = pa.array([category not in dropped for category in row_categories])
                writer.write_table(table.filter(keep))
                kept_rows += int(sum(keep.to_pylist()))
                if debug_writer is not None:
                    chosen = table.filter(pa.array([problem_id in wanted_debug for problem_id in ids]))
                    debug_writer.write_table(chosen)
                    debug_rows += chosen.num_rows
    except BaseException:
        for path in partial.values():
            path.unlink(missing_ok=True)
        raise
    for target, path in partial.items():
        os.replace(path, target)
    return {
        "rows_read": sum(categories.values()),
        "rows_written": kept_rows,
        "categories": dict(sorted(categories.items())),
        "dropped_categories": sorted(dropped),
        "debug_subset_rows": debug_rows,
        "rollouts_per_problem": dict(sorted(Counter(counts.rollouts.values()).items())),
        "problems_in_rollouts_not_in_data": len(set(counts.rollouts) - seen_ids),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m data_prep.filter_by_pass_rate",
        description="Drop problems whose G rollouts all pass (optionally all fail); write a fixed debug subset.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument(
        "--rollouts", type=Path, required=True, help="grading CLI output (JSON Lines) of G rollouts per problem"
    )
    parser.add_argument("--data", type=Path, required=True, help="parquet written by data_prep.build_deepcoder_mix")
    parser.add_argument("--out", type=Path, required=True, help="filtered parquet to write")
    parser.add_argument("--drop-all-fail", action="store_true", help="also drop problems no rollout solves")
    parser.add_argument(
        "--debug-subset", type=int, default=0, help="write this many problems with 0 < pass@G < 1 to --debug-out"
    )
    parser.add_argument(
        "--debug-out", type=Path, default=None, help="debug subset parquet (default: <out stem>.debug<N>.parquet)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the debug subset order")
    parser.add_argument("--report", type=Path, default=None, help="JSON report (default: <out stem>.report.json)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        counts = read_rollouts(args.rollouts)
        data_ids = data_problem_ids(args.data)
        warning = check_overlap(counts, data_ids, args.rollouts, args.data)
    except (OSError, ValueError) as exc:
        print(f"filter_by_pass_rate: error: {exc}", file=sys.stderr)
        return 2
    if warning:
        print(f"filter_by_pass_rate: warning: {warning}", file=sys.stderr)
    debug_ids = debug_subset(counts, args.debug_subset, args.seed, data_ids) if args.debug_subset else []
    debug_out = None
    if args.debug_subset:
        debug_out = args.debug_out or args.out.with_name(f"{args.out.stem}.debug{args.debug_subset}.parquet")
    report = filter_parquet(args.data, args.out, counts, args.drop_all_fail, debug_ids, debug_out)
    report |= {"rollouts": str(args.rollouts), "data": str(args.data), "out": str(args.out), "debug_ids": debug_ids}
    if len(debug_ids) < args.debug_subset:
        print(
            f"filter_by_pass_rate: only {len(debug_ids)} problems of {args.data} have 0 < pass@G < 1 "
            f"(asked for {args.debug_subset})"
        )
    report_path = args.report or args.out.with_name(f"{args.out.stem}.report.json")
    report_path.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"filter_by_pass_rate: kept {report['rows_written']} of {report['rows_read']} problems "
        f"{report['categories']}; report {report_path}" + (f"; debug subset {debug_out}" if debug_out else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

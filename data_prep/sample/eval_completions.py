"""Completions for an evaluation of the bundled problems: `eval_lcb --completions` input without a model.

    python -m data_prep.sample.eval_completions --data demo_out/benchmarks/*.parquet --out demo_out/completions.jsonl

For each problem of the parquets (built with ``--from sample``), ``--n`` samples: the reference solution first, then
the bundled wrong ones that fail quickly (``data_prep/sample/problems/*/wrong_*``,
``data_prep/sample/benchmarks/solutions.jsonl``) in turn, and the reference again when a problem has none. The report of such a run shows the format; its
numbers are a pipeline check, not a model's score.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

from data_prep.benchmarks import SAMPLE_DIR
from data_prep.sample.solutions import load_solutions
from reward_fns.cli import DefaultsHelpFormatter

QUICK_KINDS = ("reference", "wrong_answer", "runtime_error", "compile_error", "no_code")
"""The sample's solution kinds used: the reference and the wrong ones that fail at once (time and memory limits would
keep the evaluation waiting for nothing the report needs)."""
BENCHMARK_SOLUTIONS = SAMPLE_DIR / "solutions.jsonl"
"""Solutions of the bundled Codeforces and HumanEval+ rows: ``problem_id``, ``kind`` (``reference`` or how it fails),
``completion``."""


def bundled_solutions() -> dict[str, list[tuple[str, str]]]:
    """``problem_id -> [(kind, completion), ...]`` of every bundled problem (a reference first)."""
    solutions: dict[str, list[tuple[str, str]]] = {}
    for solution in load_solutions():
        if solution.kind in QUICK_KINDS:
            solutions.setdefault(solution.problem_id, []).append((solution.kind, solution.completion))
    for line in BENCHMARK_SOLUTIONS.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        solutions.setdefault(record["problem_id"], []).append((record["kind"], record["completion"]))
    return {pid: sorted(found, key=lambda item: item[0] != "reference") for pid, found in solutions.items()}


def completions_for(problem_ids: list[str], n: int) -> list[dict[str, object]]:
    """``n`` samples per problem (module docstring); raises ValueError for a problem the sample has no solution of."""
    solutions = bundled_solutions()
    lines = []
    for problem_id in problem_ids:
        found = solutions.get(problem_id)
        if not found or found[0][0] != "reference":
            raise ValueError(
                f"{problem_id} is not a bundled problem with a reference; build the data with --from sample"
            )
        wrong = [completion for kind, completion in found[1:]] or [found[0][1]]
        for index in range(n):
            text = found[0][1] if index == 0 else wrong[(index - 1) % len(wrong)]
            lines.append({"problem_id": problem_id, "sample_index": index, "completion": text})
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m data_prep.sample.eval_completions",
        description="Write eval_lcb --completions input for the bundled problems of the given parquets: the "
        "reference first, then wrong solutions.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("--data", type=Path, nargs="+", required=True, help="parquets built with --from sample")
    parser.add_argument("--out", type=Path, required=True, help="the completions JSONL to write")
    parser.add_argument("--n", type=int, default=2, help="samples per problem")
    args = parser.parse_args(argv)
    problem_ids = list(
        dict.fromkeys(  # the LiveCodeBench windows share problems
            str(info["problem_id"])
            for path in args.data
            for info in pq.read_table(path, columns=["extra_info"]).column("extra_info").to_pylist()
        )
    )
    try:
        lines = completions_for(problem_ids, args.n)
    except ValueError as exc:
        print(f"eval_completions: error: {exc}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"eval_completions: {len(lines)} completions of {len(problem_ids)} problems -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

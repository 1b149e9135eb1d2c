"""The evaluation problems of a verl test parquet (docs/DESIGN.md "Parquet row"), read without holding the tests.

LiveCodeBench rows can carry hundreds of MB of hidden tests, so metadata and prompts are read without the
``reward_model`` column, and ground truths are streamed a few rows at a time when grading.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

GROUND_TRUTH_BATCH_ROWS = 8
"""Rows per parquet batch when streaming ground truths (bounds memory with very large test sets)."""


@dataclass(frozen=True, slots=True)
class EvalProblem:
    """A test problem's id, prompt (chat messages), public tests and the metadata the breakdowns group by."""

    problem_id: str
    data_source: str
    messages: tuple[dict[str, str], ...]
    difficulty: str
    platform: str
    contest_date: str
    public_tests: str = ""
    """``extra_info.public_tests`` (JSON, the ground-truth layout; "" when none): the feedback of ``--turns``."""


def _problem_id(extra_info: dict[str, Any] | None, path: Path, row: int) -> str:
    problem_id = (extra_info or {}).get("problem_id")
    if problem_id is None or str(problem_id) == "":
        raise ValueError(
            f"{path} row {row} has no extra_info.problem_id; build the test split with "
            "`python -m data_prep.build_deepcoder_mix`, which writes it"
        )
    return str(problem_id)


def load_eval_problems(path: Path) -> list[EvalProblem]:
    """Every row of ``path`` as an ``EvalProblem``, in file order.

    Raises:
        ValueError: a row lacks ``extra_info.problem_id`` or two rows share one.
    """
    table = pq.read_table(path, columns=["data_source", "prompt", "extra_info"])
    problems: list[EvalProblem] = []
    seen: set[str] = set()
    for row, record in enumerate(table.to_pylist()):
        extra_info = record["extra_info"] or {}
        problem_id = _problem_id(extra_info, path, row)
        if problem_id in seen:
            raise ValueError(f"{path} row {row}: duplicate problem_id {problem_id!r}")
        seen.add(problem_id)
        problems.append(
            EvalProblem(
                problem_id=problem_id,
                data_source=str(record["data_source"] or ""),
                messages=tuple({"role": m["role"], "content": m["content"]} for m in record["prompt"]),
                difficulty=str(extra_info.get("difficulty") or "unknown"),
                platform=str(extra_info.get("platform") or "unknown"),
                contest_date=str(extra_info.get("contest_date") or ""),
                public_tests=str(extra_info.get("public_tests") or ""),
            )
        )
    return problems


def iter_ground_truths(path: Path, wanted: set[str]) -> Iterator[tuple[str, str]]:
    """``(problem_id, ground truth JSON string)`` of the rows whose id is in ``wanted``, streamed in file order."""
    parquet = pq.ParquetFile(path)
    row = 0
    for batch in parquet.iter_batches(batch_size=GROUND_TRUTH_BATCH_ROWS, columns=["reward_model", "extra_info"]):
        for reward_model, extra_info in zip(
            batch.column("reward_model").to_pylist(), batch.column("extra_info").to_pylist(), strict=True
        ):
            problem_id = _problem_id(extra_info, path, row)
            row += 1
            if problem_id in wanted:
                yield problem_id, reward_model["ground_truth"]

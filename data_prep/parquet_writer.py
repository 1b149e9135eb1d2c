"""Write verl ``RLHFDataset`` rows to parquet in bounded row groups, hashing the content as it goes.

Row layout (docs/DESIGN.md "Parquet row"): ``data_source``, ``prompt`` (chat messages), ``ability="code"``,
``reward_model={"style": "rule", "ground_truth": <JSON string>}``, ``extra_info={split, index, problem_id,
source, difficulty, contest_date, platform, num_tests, public_tests}``. ``ground_truth`` is a ``large_string`` so
one row group may exceed 2 GiB of tests without offset overflow. ``public_tests`` holds the tests the statement shows
(the multi-turn feedback loop runs them) in the ground-truth layout, "" when the problem has none; ``num_tests``
counts the hidden tests.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from data_prep.problem import Problem
from data_prep.prompts import PromptVariant, build_prompt, function_stub

ROW_SCHEMA = pa.schema(
    [
        pa.field("data_source", pa.string()),
        pa.field("prompt", pa.list_(pa.struct([pa.field("role", pa.string()), pa.field("content", pa.string())]))),
        pa.field("ability", pa.string()),
        pa.field(
            "reward_model", pa.struct([pa.field("style", pa.string()), pa.field("ground_truth", pa.large_string())])
        ),
        pa.field(
            "extra_info",
            pa.struct(
                [
                    pa.field("split", pa.string()),
                    pa.field("index", pa.int64()),
                    pa.field("problem_id", pa.string()),
                    pa.field("source", pa.string()),
                    pa.field("difficulty", pa.string()),
                    pa.field("contest_date", pa.string()),
                    pa.field("platform", pa.string()),
                    pa.field("num_tests", pa.int64()),
                    pa.field("public_tests", pa.large_string()),
                ]
            ),
        ),
    ]
)


def prompt_starter_code(problem: Problem) -> str:
    """The problem's starter code, or for a function-call problem without one a stub naming ``fn_name``."""
    if problem.starter_code or not problem.fn_name:
        return problem.starter_code
    return function_stub(problem.fn_name, problem.argument_count)


def verl_row(problem: Problem, split: str, index: int, variant: PromptVariant) -> dict[str, Any]:
    """One parquet row for a problem."""
    return {
        "data_source": problem.source,
        "prompt": build_prompt(problem.statement, prompt_starter_code(problem), variant),
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": problem.ground_truth_json()},
        "extra_info": {
            "split": split,
            "index": index,
            "problem_id": problem.problem_id,
            "source": problem.source,
            "difficulty": problem.difficulty,
            "contest_date": problem.contest_date,
            "platform": problem.platform,
            "num_tests": len(problem.tests),
            "public_tests": problem.public_tests_json(),
        },
    }


class SplitWriter:
    """Appends rows to one parquet file in row groups of at most ``max_group_bytes`` (a larger row gets its own
    group) or ``max_group_rows`` rows.

    ``sha256`` covers every row's content in order (not the parquet bytes, which depend on the pyarrow version).
    """

    def __init__(self, path: Path, max_group_bytes: int = 64 << 20, max_group_rows: int = 1024) -> None:
        self.path = path
        self.rows_written = 0
        self._max_group_bytes = max_group_bytes
        self._max_group_rows = max_group_rows
        self._pending: list[dict[str, Any]] = []
        self._pending_bytes = 0
        self._digest = hashlib.sha256()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = pq.ParquetWriter(path, ROW_SCHEMA, compression="zstd")

    def add(self, row: dict[str, Any]) -> None:
        """Append a row. Raises ``UnicodeEncodeError`` (text parquet cannot hold: a lone surrogate, which JSON's
        ``\\ud800`` escapes produce) before anything is kept, so a refused row leaves the file and hash as they were."""
        truth = row["reward_model"]["ground_truth"]
        truth_bytes = truth.encode("utf-8")
        _check_utf8({key: value for key, value in row.items() if key != "reward_model"})
        described = json.dumps({**row, "reward_model": {"style": row["reward_model"]["style"]}}, sort_keys=True)
        self._digest.update(described.encode("utf-8"))
        self._digest.update(truth_bytes)
        size = len(truth) + len(described)
        if self._pending_bytes + size > self._max_group_bytes:
            self._flush()
        self._pending.append(row)
        self._pending_bytes += size
        self.rows_written += 1
        if self._pending_bytes >= self._max_group_bytes or len(self._pending) >= self._max_group_rows:
            self._flush()

    def close(self) -> str:
        """Flush, close, and return the content hash (hex sha256)."""
        self._flush()
        self._writer.close()
        return self._digest.hexdigest()

    def _flush(self) -> None:
        if self._pending:
            self._writer.write_table(pa.Table.from_pylist(self._pending, schema=ROW_SCHEMA))
            self._pending, self._pending_bytes = [], 0


def _check_utf8(value: Any) -> None:
    """Encode every string of a row's nested lists and dicts as UTF-8 (raises ``UnicodeEncodeError`` on the first that
    cannot be)."""
    if isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, dict):
        for item in value.values():
            _check_utf8(item)
    elif isinstance(value, list):
        for item in value:
            _check_utf8(item)

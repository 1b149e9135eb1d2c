"""The bundled problems: metadata from ``problem.json`` and ground truth from ``tests.json`` of each folder."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SAMPLE_DIR = Path(__file__).resolve().parent
PROBLEMS_DIR = SAMPLE_DIR / "problems"
DATA_SOURCE = "nous_sample"
"""``data_source`` of the sample's rows (parquet and the grading CLI's problems file)."""


@dataclass(frozen=True)
class SampleProblem:
    """One bundled problem; ``ground_truth`` is the layout of docs/DESIGN.md ("Ground truth") ``{"tests": [...], "fn_name": ...}``."""

    problem_id: str
    title: str
    statement: str
    source: str
    platform: str
    difficulty: str
    contest_date: str
    starter_code: str
    fn_name: str | None
    ground_truth: dict[str, Any]

    def ground_truth_json(self) -> str:
        """The ground truth as the JSON string stored in parquet ``reward_model.ground_truth``."""
        return json.dumps(self.ground_truth)

    @property
    def is_functional(self) -> bool:
        return self.fn_name is not None


def problem_ids() -> list[str]:
    """Ids of every bundled problem (folders holding a ``problem.json``), sorted."""
    return sorted(path.parent.name for path in PROBLEMS_DIR.glob("*/problem.json"))


def load_problem(problem_id: str, include_large: bool = True) -> SampleProblem:
    """Read one problem; with ``include_large`` its generated large tests (if any) are appended to its tests."""
    folder = PROBLEMS_DIR / problem_id
    if not (folder / "problem.json").is_file():
        raise FileNotFoundError(f"no sample problem {problem_id!r} in {PROBLEMS_DIR}; known: {problem_ids()}")
    metadata = json.loads((folder / "problem.json").read_text())
    ground_truth = json.loads((folder / "tests.json").read_text())
    if include_large:
        from data_prep.sample.large_tests import large_tests

        ground_truth["tests"] = ground_truth["tests"] + large_tests(problem_id)
    return SampleProblem(ground_truth=ground_truth, **metadata)


def load_problems(include_large: bool = True) -> list[SampleProblem]:
    """Every bundled problem, sorted by ``problem_id``; large tests are generated (or read from cache) on demand."""
    return [load_problem(problem_id, include_large) for problem_id in problem_ids()]

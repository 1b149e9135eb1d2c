"""The one problem schema every source is normalised to, and the record of rows that could not be read."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

TestDict = dict[str, str]
"""One test in the ground-truth layout of docs/DESIGN.md: ``{"input": str, "output": str, "testtype": "stdin"|"functional"}``."""


class MalformedRow(ValueError):
    """A raw row that cannot be turned into a problem (bad JSON, missing field, undecodable tests)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass(slots=True)
class Problem:
    """A normalised problem: statement, prompt inputs and tests in the ground-truth layout."""

    problem_id: str
    source: str
    """Family of the problem: ``taco``, ``primeintellect`` or ``livecodebench``."""
    origin: str
    """Where the row was read: ``<repository>[:<config>]/<file>``."""
    statement: str
    tests: list[TestDict]
    fn_name: str | None = None
    starter_code: str = ""
    title: str = ""
    difficulty: str = ""
    contest_date: str = ""
    """ISO date-time ``YYYY-MM-DDT00:00:00`` or empty when the source has none."""
    platform: str = ""
    language: str = "python"
    source_name: str = ""
    """The ``--train-sources`` name it was read from (``deepcoder_taco``, ``lcb``, ...; ``sample``)."""
    solutions: list[str] = field(default_factory=list)
    """Reference programs the source ships (TACO ``solutions``, PrimeIntellect ``gold_standard_solution``), raw or
    in a python fence; graded by ``python -m data_prep.verify_solutions``, never written to parquet."""
    tags: list[str] = field(default_factory=list)
    """The platform's topic tags where the source has them (TACO ``raw_tags`` and ``tags``), lower case."""
    public_tests: list[TestDict] = field(default_factory=list)
    """The tests the statement shows (LiveCodeBench ``public_test_cases``), in its order; graded by the multi-turn
    feedback loop, never by the reward. ``tests`` (the hidden set) may include them, as LiveCodeBench's does."""
    layout_ground_truth: dict[str, Any] | None = None
    """A ground truth written in another layout of ``reward_fns.layouts`` (an EvalPlus task: ``evalplus``) instead
    of ``{"tests", "fn_name"}``; ``tests`` then holds its tests as the grader reads them."""

    def ground_truth(self) -> dict[str, Any]:
        """The ground truth of docs/DESIGN.md: ``{"tests": [...], "fn_name": str}`` (``fn_name`` only when functional),
        or ``layout_ground_truth`` when the problem has one."""
        if self.layout_ground_truth is not None:
            return self.layout_ground_truth
        truth: dict[str, Any] = {"tests": self.tests}
        if self.fn_name:
            truth["fn_name"] = self.fn_name
        return truth

    def ground_truth_json(self) -> str:
        return json.dumps(self.ground_truth(), ensure_ascii=False)

    def ground_truth_sha256(self) -> str:
        """Hash of the converted ground truth: ties a verification result to the conversion it graded."""
        return hashlib.sha256(self.ground_truth_json().encode("utf-8")).hexdigest()

    @property
    def argument_count(self) -> int:
        """Positional arguments of a functional problem: JSON values (lines) in its first test's input."""
        first = self.tests[0]["input"] if self.tests else ""
        return first.count("\n") + 1 if first.strip() else 0

    def public_tests_json(self) -> str:
        """The public tests in the ground-truth layout (parquet ``extra_info.public_tests``); "" when none."""
        if not self.public_tests:
            return ""
        truth: dict[str, Any] = {"tests": self.public_tests}
        if self.fn_name:
            truth["fn_name"] = self.fn_name
        return json.dumps(truth, ensure_ascii=False)

    def with_public_tests(self, count: int) -> Problem:
        """For a problem without public tests: its first ``count`` tests become public and leave the hidden set
        (the reward never grades what the model was shown); at least one hidden test stays."""
        moved = min(count, len(self.tests) - 1)
        if self.public_tests or moved <= 0:
            return self
        return replace(self, public_tests=self.tests[:moved], tests=self.tests[moved:])

    def test_bytes(self) -> int:
        """Total size of all test inputs and outputs, in characters."""
        return sum(len(test["input"]) + len(test["output"]) for test in self.tests)


@dataclass(slots=True)
class SkippedRow:
    """A raw row that was skipped because it was malformed."""

    source: str
    row_id: str
    reason: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "id": self.row_id, "reason": self.reason, "detail": self.detail}


@dataclass
class SkipLog:
    """Counts every malformed row by source and reason; keeps the first ``keep`` rows for the report.

    A row read twice (LiveCodeBench is read once per split) is counted once.
    """

    keep: int = 1000
    counts: Counter = field(default_factory=Counter)
    rows: list[SkippedRow] = field(default_factory=list)
    _seen: set[tuple[str, str, str]] = field(default_factory=set)

    def record(self, source: str, row_id: str, error: MalformedRow) -> None:
        if (source, row_id, error.reason) in self._seen:
            return
        self._seen.add((source, row_id, error.reason))
        self.counts[f"{source}/{error.reason}"] += 1
        if len(self.rows) < self.keep:
            self.rows.append(SkippedRow(source, row_id, error.reason, error.detail[:300]))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "by_source_and_reason": dict(sorted(self.counts.items())),
            "rows": [row.to_dict() for row in self.rows],
            "rows_listed": len(self.rows),
        }
